"""Vector store: Chroma collections embedded by our Embedder, on disk in instance/ or on a Chroma server."""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import re
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import chromadb
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.config import Settings
from chromadb.errors import NotFoundError
from chromadb.utils.embedding_functions import register_embedding_function

from app.knowledge.embeddings import Embedder, embedder_from_config
from app.knowledge.records import Hit, Record

log = logging.getLogger(__name__)

Metadata = Mapping[str, str | int | float | bool | list[Any] | None]  # None means "no such field"
Where = Mapping[str, Any]


@register_embedding_function
class SkilldeskEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma's side of an Embedder: Chroma embeds through it and never loads its own ONNX model."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:  # Chroma checks that the parameter is named `input`
        return [np.asarray(vector, dtype=np.float32) for vector in self.embedder.embed(list(input))]

    @staticmethod
    def name() -> str:
        """Name Chroma stores in each collection's configuration."""
        return "skilldesk"

    def get_config(self) -> dict[str, Any]:
        """Return the settings Chroma stores with the collection (the key's variable name, never the key)."""
        return dict(self.embedder.settings)

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> SkilldeskEmbeddingFunction:
        """Rebuild from stored settings; Chroma calls this whenever it reads a collection's configuration."""
        return SkilldeskEmbeddingFunction(embedder_from_config(config))

    def default_space(self) -> Space:
        """Compare by angle: both backends' vectors are meant for cosine similarity."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """Spaces a collection embedded by this function may use."""
        return ["cosine", "l2", "ip"]


# --- collection names ------------------------------------------------------------------------------

# Chroma wants 3-63 characters (3-512 on the embedded Rust backend; 63 keeps a name valid on every server)
# from [a-zA-Z0-9._-], alphanumeric at both ends, no "..", not an IPv4 address.
_MAX_NAME = 63
_VALID_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]*[a-zA-Z0-9])?")


def collection_name(name: str) -> str:
    """Return `name` if Chroma accepts it, else a valid name made from it that no other name maps to."""
    if _is_valid_name(name):
        return name
    # A suffix of the original's hash keeps "memory:user 1" and "memory-user-1" apart, which matters when
    # collections separate people's data.
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", name)
    slug = re.sub(r"\.{2,}", ".", slug).strip("._-")[: _MAX_NAME - len(digest) - 1].rstrip("._-")
    return f"{slug}-{digest}" if slug else f"collection-{digest}"


def _is_valid_name(name: str) -> bool:
    if not 3 <= len(name) <= _MAX_NAME or not _VALID_NAME.fullmatch(name) or ".." in name:
        return False
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return True
    return False


# --- clients ---------------------------------------------------------------------------------------

_clients: dict[str, ClientAPI] = {}
_clients_lock = threading.Lock()


def chroma_client(path: str | Path | None = None, url: str | None = None) -> ClientAPI:
    """Return this process's Chroma client for a server URL, else for a directory; telemetry is always off."""
    if url:
        key = f"url:{url}"
    elif path:
        key = f"path:{Path(path).resolve()}"
    else:
        raise ValueError(
            "Set CHROMA_PATH (a directory for the embedded store) or CHROMA_URL (a Chroma server)"
        )
    # One client per location: Chroma refuses a second client on the same path with different settings, and
    # each client holds its own connections and caches.
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _connect(key)
    return client


def close_client(path: str | Path) -> None:
    """Close and forget this process's client of an embedded store, e.g. before its folder is deleted."""
    with _clients_lock:
        client = _clients.pop(f"path:{Path(path).resolve()}", None)
    if client is not None:
        client.close()


def _connect(key: str) -> ClientAPI:
    settings = Settings(anonymized_telemetry=False)
    kind, _, location = key.partition(":")
    if kind == "path":
        return chromadb.PersistentClient(path=location, settings=settings)
    parts = urlsplit(location)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"CHROMA_URL must look like http://host:8000; got {location!r}")
    ssl = parts.scheme == "https"
    return chromadb.HttpClient(
        host=parts.hostname, port=parts.port or (443 if ssl else 8000), ssl=ssl, settings=settings
    )


# --- the store -------------------------------------------------------------------------------------

def collection_configuration(keeps_text: bool = True) -> dict[str, Any]:
    """A new collection's configuration: cosine space; the index persisted after every write if it keeps text.

    Chroma keeps each added record in its write log (`embeddings_queue`) until the index is persisted
    (by default every 1,000 records), so a deleted text would stay in chroma.sqlite3 that long;
    persisted at once, the log entry is purged and `vacuum_embedded` can clear it. That slows every write
    (one add ~80 ms instead of ~35 ms), so a collection that keeps no text (knowledge passages) keeps
    Chroma's defaults. A fresh dict each time: Chroma writes the embedding function into the one it is given.
    """
    if not keeps_text:
        return {"hnsw": {"space": "cosine"}}
    return {"hnsw": {"space": "cosine", "sync_threshold": 1, "batch_size": 1}}


class VectorStore:
    """Collections of texts found again by meaning; every name passes through `collection_name`.

    Writes create a collection on first use; reads of a missing collection find nothing.
    """

    def __init__(self, client: ClientAPI, embedder: Embedder) -> None:
        self.client = client
        self.embedder = embedder
        self._function = SkilldeskEmbeddingFunction(embedder)

    def add(
        self,
        collection: str,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Metadata] | None = None,
    ) -> None:
        """Store new texts; Chroma silently keeps a record whose id already exists (`upsert` replaces)."""
        self._write("add", collection, ids, texts, metadatas)

    def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Metadata] | None = None,
        *,
        keep_text: bool = True,
    ) -> None:
        """Store texts, replacing any records with the same ids; `keep_text=False` stores only their vectors
        (for texts kept elsewhere; decide it per collection: the first write creates the collection to suit)."""
        self._write("upsert", collection, ids, texts, metadatas, keep_text)

    def query(self, collection: str, text: str, n: int = 5, where: Where | None = None) -> list[Hit]:
        """Return up to `n` records nearest in meaning to `text`, nearest first, among those matching `where`.

        Ranking is approximate (HNSW). With a very selective `where` (few matches in a large collection)
        Chroma sometimes returns fewer hits than match, even none (upstream Chroma issue 5367): look records
        up exactly with `get(where=...)`, and keep data that is always filtered the same way (one user's
        memories) in a collection of its own rather than behind a filter.
        """
        return self._nearest(collection, n, where, query_texts=[text])

    def nearest(self, collection: str, vector: Sequence[float], n: int = 5, where: Where | None = None) -> list[Hit]:
        """Like `query`, for a vector from `self.embedder`; hits carry ids and distances only (cheaper)."""
        return self._nearest(collection, n, where, query_embeddings=[np.asarray(vector, dtype=np.float32)])

    def _nearest(self, collection: str, n: int, where: Where | None, **query: Any) -> list[Hit]:
        if n < 1:
            raise ValueError(f"n must be at least 1; got {n}")
        found = self._collection(collection, create=False)
        if found is None:
            return []
        include = ["documents", "metadatas", "distances"] if "query_texts" in query else ["distances"]
        result = found.query(n_results=n, where=_where(where), include=include, **query)
        distances = result["distances"][0]
        documents = result["documents"][0] if result.get("documents") else [None] * len(distances)
        metadatas = result["metadatas"][0] if result.get("metadatas") else [None] * len(distances)
        return [
            Hit(id=id_, text=document or "", metadata=dict(metadata or {}), distance=float(distance))
            for id_, document, metadata, distance in zip(
                result["ids"][0], documents, metadatas, distances, strict=True
            )
        ]

    def get(
        self,
        collection: str,
        where: Where | None = None,
        ids: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Return the records matching `ids` and `where` exactly (every record if neither is given)."""
        found = self._collection(collection, create=False)
        if found is None or (ids is not None and not ids):  # Chroma raises on an empty id list
            return []
        result = found.get(
            ids=list(ids) if ids is not None else None,
            where=_where(where),
            limit=limit,
            include=["documents", "metadatas"],
        )
        return [
            Record(id=id_, text=document or "", metadata=dict(metadata or {}))
            for id_, document, metadata in zip(
                result["ids"], result["documents"], result["metadatas"], strict=True
            )
        ]

    def count(self, collection: str) -> int:
        """Return how many records a collection holds (0 if it does not exist)."""
        found = self._collection(collection, create=False)
        return found.count() if found is not None else 0

    def delete(self, collection: str, ids: Sequence[str] | None = None, where: Where | None = None) -> None:
        """Delete the records matching `ids` and `where`; use `drop` to remove a whole collection."""
        if ids is None and not where:
            # Refuse rather than guess: a missing filter must never come to mean "everything".
            raise ValueError("Pass ids or where to delete records; drop() removes a whole collection")
        found = self._collection(collection, create=False)
        if found is None or (ids is not None and not ids):  # an empty id list matches nothing
            return
        found.delete(ids=list(ids) if ids is not None else None, where=_where(where))

    def drop(self, collection: str) -> bool:
        """Remove a collection and everything in it; return whether it existed."""
        try:
            self.client.delete_collection(collection_name(collection))
        except NotFoundError:
            return False
        return True

    def _write(
        self,
        operation: str,
        collection: str,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Metadata] | None,
        keep_text: bool = True,
    ) -> None:
        if len(ids) != len(texts) or (metadatas is not None and len(metadatas) != len(ids)):
            raise ValueError("ids, texts and metadatas must have the same length")
        if not ids:
            return
        target = self._collection(collection, create=True, keeps_text=keep_text)
        assert target is not None
        # Chroma's add rejects None values and empty dicts: drop absent fields, send None for no metadata.
        cleaned: list[dict[str, Any] | None] = [
            {k: v for k, v in m.items() if v is not None} or None for m in metadatas or [{}] * len(ids)
        ]
        # Chroma caps records per call (5461 on the embedded backend).
        step = self.client.get_max_batch_size()
        for start in range(0, len(ids), step):
            chunk_ids, chunk_metadatas = list(ids[start : start + step]), cleaned[start : start + step]
            if operation == "upsert":
                chunk_metadatas = _replacing(target, chunk_ids, chunk_metadatas)
            chunk_texts = list(texts[start : start + step])
            content: dict[str, Any] = {"documents": chunk_texts} if keep_text else {
                "embeddings": [np.asarray(v, dtype=np.float32) for v in self.embedder.embed(chunk_texts)]}
            getattr(target, operation)(ids=chunk_ids, metadatas=chunk_metadatas, **content)

    def _collection(self, collection: str, *, create: bool, keeps_text: bool = True) -> Collection | None:
        name = collection_name(collection)
        if create:
            found = self.client.get_or_create_collection(
                name, embedding_function=self._function, configuration=collection_configuration(keeps_text)
            )
        else:
            try:
                found = self.client.get_collection(name, embedding_function=self._function)
            except NotFoundError:
                return None
        self._check_embedder(found)
        return found

    def _check_embedder(self, collection: Collection) -> None:
        # Chroma only compares embedding function names; vectors from another model (MiniLM, then an
        # OpenAI-compatible model) would mix two spaces or fail on their length, so compare the settings.
        stored = collection.configuration_json.get("embedding_function") or {}
        if (
            stored.get("name") == self._function.name()
            and stored.get("config") != self._function.get_config()
        ):
            raise ValueError(
                f"Collection {collection.name!r} was embedded with {stored.get('config')}, but this process "
                f"embeds with {self._function.get_config()}: restore those EMBEDDINGS settings, or drop the "
                "collection and add its texts again"
            )


def _replacing(
    collection: Collection, ids: list[str], metadatas: list[dict[str, Any] | None]
) -> list[dict[str, Any] | None]:
    """Return upsert metadata that replaces each existing record's metadata instead of merging into it."""
    # Chroma's upsert keeps fields the new metadata leaves out; naming them with None removes them, in the
    # same single write (deleting and re-adding would lose the record if embedding failed in between).
    existing = collection.get(ids=ids, include=["metadatas"])
    old_fields = {
        id_: set(metadata or ())
        for id_, metadata in zip(existing["ids"], existing["metadatas"] or [], strict=True)
    }
    return [
        ({key: None for key in old_fields.get(id_, ())} | (metadata or {})) or None
        for id_, metadata in zip(ids, metadatas, strict=True)
    ]


def _where(where: Where | None) -> dict[str, Any] | None:
    """Translate a filter for Chroma: empty means none, and several plain fields mean all of them."""
    if not where:
        return None  # Chroma rejects {}
    if len(where) > 1 and not any(key.startswith("$") for key in where):
        # Chroma accepts one field per filter; {"user": 1, "kind": "fact"} means both.
        return {"$and": [{key: value} for key, value in where.items()]}
    return dict(where)


def vacuum_embedded(path: str | Path, timeout: int = 60) -> bool:
    """Run Chroma's own `chroma vacuum` on an embedded store: purge its write log, then VACUUM its SQLite.

    Deleted texts otherwise stay in the free pages of chroma.sqlite3. It runs in a child process
    (the command prints its progress) and waits `timeout` seconds for a lock; False when it failed.
    """
    if not (Path(path) / "chroma.sqlite3").exists():
        return True
    command = "import sys; from chromadb.cli.cli import app; sys.argv = ['chroma', *sys.argv[1:]]; app()"
    done = subprocess.run([sys.executable, "-c", command, "vacuum", "--path", str(path), "--force",
                           "--timeout", str(timeout)], capture_output=True, text=True, timeout=timeout + 60)
    if done.returncode != 0 or "Vacuum complete" not in done.stdout:
        log.warning("chroma vacuum of %s failed: %s", path, (done.stderr or done.stdout).strip()[-500:])
        return False
    return True


def store_from_config(config: Mapping[str, Any]) -> VectorStore:
    """Return a store on CHROMA_URL if set, else on CHROMA_PATH, embedding with the configured embedder."""
    client = chroma_client(path=config.get("CHROMA_PATH"), url=config.get("CHROMA_URL"))
    return VectorStore(client, embedder_from_config(config))
