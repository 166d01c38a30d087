"""The web workers' side of the knowledge process: embeddings and the embedded vector store, asked of the one
process of the serving machine that holds them (`app/service.py`), through gunicorn's dirty client.

`flask serve` sets KNOWLEDGE_PROCESS in its web workers, so they never load torch or open the embedded
Chroma store (which only one process may open). The same accessors answer as before: `embedder_from_config`
gives a `ProcessEmbedder` (the `Embedder` protocol, with MiniLM's dimensions and settings, so collections
embedded in either process match), `vector_store()` a `ProcessVectorStore` with the `VectorStore` methods.
"""

from __future__ import annotations

from array import array
from typing import Any

from gunicorn.dirty import DirtyError, get_dirty_client

from app.knowledge.records import from_wire

SERVICE = "app.service:KnowledgeService"  # app/service.py SERVICE_APP: gunicorn names the app by path
TIMEOUT_SECONDS = 60.0
# Errors the knowledge process raised that callers may catch by type; any other becomes a RuntimeError.
ERRORS: dict[str, type[Exception]] = {"ValueError": ValueError, "LookupError": LookupError,
                                      "KeyError": KeyError, "TypeError": TypeError}


class KnowledgeProcessError(RuntimeError):
    """The knowledge process did not answer (not started yet, restarting, or gone)."""


def call(action: str, *args: Any, **kwargs: Any) -> Any:
    """Ask the knowledge process for `action` and return its answer (its errors raised here)."""
    try:
        answer = get_dirty_client(timeout=TIMEOUT_SECONDS).execute(SERVICE, action, *args, **kwargs)
    except DirtyError as error:
        raise KnowledgeProcessError(
            f"The knowledge process of this server did not answer ({error}); it restarts by itself, try again "
            "in a moment") from error
    if isinstance(answer, dict) and "__error__" in answer:
        raise ERRORS.get(answer["__error__"], RuntimeError)(answer["message"])
    return from_wire(answer)


class ProcessEmbedder:
    """The bundled MiniLM model, run in the knowledge process: the same vectors as `MiniLMEmbedder`."""

    dimensions = 384

    @property
    def settings(self) -> dict[str, str]:
        """The EMBEDDINGS* configuration of the model that makes these vectors."""
        return {"EMBEDDINGS": "minilm"}

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one unit-length 384-dimensional vector per text, in order."""
        if not texts:
            return []
        packed = call("embed", list(texts))
        flat = array("f", packed)  # float32, as the model makes them: no loss, a quarter of a float list's size
        size = self.dimensions
        return [flat[start:start + size].tolist() for start in range(0, len(flat), size)]


class ProcessVectorStore:
    """The embedded vector store of the knowledge process: every public `VectorStore` method, by name."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            return call("store", name, *args, **kwargs)

        method.__name__ = name
        return method
