"""The vector store: Chroma with our embedder, on disk and on a Chroma server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from app.guards.outbound import OutboundPolicy
from app.knowledge.embeddings import Embedder, OpenAICompatibleEmbedder
from app.knowledge.vectors import Hit, Record, VectorStore, collection_name, store_from_config

LOCAL = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))  # the test's embeddings server

if TYPE_CHECKING:
    from conftest import EmbeddingsServer

NOTES = {
    "cat": ("the cat sat on the mat", {"user": "ana", "kind": "fact"}),
    "tax": ("the quarterly tax filing deadline is in April", {"user": "ana", "kind": "todo"}),
    "coffee": ("Bob takes his coffee black, no sugar", {"user": "bob", "kind": "fact"}),
    "trip": ("the team offsite is in Lisbon next spring", {"user": "bob", "kind": "todo"}),
}


def add_notes(store: VectorStore, collection: str = "notes") -> None:
    store.add(
        collection,
        ids=list(NOTES),
        texts=[text for text, _ in NOTES.values()],
        metadatas=[metadata for _, metadata in NOTES.values()],
    )


def ids(records: list[Record] | list[Hit]) -> list[str]:
    return [record.id for record in records]


def test_query_finds_texts_by_meaning(store: VectorStore) -> None:
    add_notes(store)

    hits = store.query("notes", "a kitten is sitting on a rug", n=3)

    assert hits[0] == Hit(
        id="cat",
        text="the cat sat on the mat",
        metadata={"user": "ana", "kind": "fact"},
        distance=hits[0].distance,
    )
    assert len(hits) == 3
    assert [hit.distance for hit in hits] == sorted(hit.distance for hit in hits)
    assert 0 < hits[0].distance < 1  # cosine distance
    assert ids(store.query("notes", "how does Bob like his drink?", n=1)) == ["coffee"]
    assert len(store.query("notes", "anything", n=50)) == len(NOTES)


def test_query_filters_by_metadata(store: VectorStore) -> None:
    add_notes(store)

    assert ids(store.query("notes", "a kitten is sitting on a rug", n=2, where={"user": "bob"})) in (
        ["coffee", "trip"],
        ["trip", "coffee"],
    )
    assert ids(store.query("notes", "travel plans", n=5, where={"user": "bob", "kind": "todo"})) == ["trip"]


def test_get_looks_records_up_exactly(store: VectorStore) -> None:
    add_notes(store)

    assert sorted(ids(store.get("notes", where={"kind": "fact"}))) == ["cat", "coffee"]
    # several plain fields mean all of them (Chroma itself wants an explicit $and)
    assert store.get("notes", where={"user": "ana", "kind": "todo"}) == [
        Record(id="tax", text=NOTES["tax"][0], metadata=NOTES["tax"][1])
    ]
    assert ids(store.get("notes", where={"$or": [{"user": "bob"}, {"kind": "fact"}]})) != []
    assert sorted(ids(store.get("notes", ids=["trip", "cat", "missing"]))) == ["cat", "trip"]
    assert ids(store.get("notes", ids=["cat", "tax"], where={"kind": "todo"})) == ["tax"]
    assert store.get("notes", ids=[]) == []
    assert len(store.get("notes")) == len(NOTES)
    assert len(store.get("notes", limit=2)) == 2


def test_delete_by_id_and_by_filter(store: VectorStore) -> None:
    add_notes(store)

    store.delete("notes", ids=["cat"])
    assert sorted(ids(store.get("notes"))) == ["coffee", "tax", "trip"]

    store.delete("notes", where={"user": "bob"})
    assert ids(store.get("notes")) == ["tax"]

    store.delete("notes", ids=[])  # an empty id list matches nothing
    store.delete("missing", ids=["tax"])  # nothing to delete in a collection that does not exist
    assert store.count("notes") == 1
    with pytest.raises(ValueError, match="drop"):
        store.delete("notes")
    with pytest.raises(ValueError, match="drop"):
        store.delete("notes", where={})


def test_upsert_replaces_whole_records_and_metadata_is_optional(store: VectorStore) -> None:
    store.add(
        "notes", ids=["a", "b"], texts=["first text", "second text"], metadatas=[{"x": 1, "y": 1}, {"x": 1}]
    )

    store.upsert(
        "notes",
        ids=["a", "b", "c"],
        texts=["first, revised", "second", "third"],
        metadatas=[{"v": 2}, {}, {"n": None}],
    )
    store.upsert("notes", ids=["d"], texts=["fourth"])

    # Chroma alone would merge: "a" would keep x and y, "b" would keep x.
    assert sorted((r.id, r.text, r.metadata) for r in store.get("notes")) == [
        ("a", "first, revised", {"v": 2}),
        ("b", "second", {}),
        ("c", "third", {}),
        ("d", "fourth", {}),
    ]
    store.add("notes", ids=["d"], texts=["fourth, added again"], metadatas=[{"lost": True}])
    assert store.get("notes", ids=["d"]) == [Record(id="d", text="fourth", metadata={})]
    with pytest.raises(ValueError, match="same length"):
        store.add("notes", ids=["x"], texts=["one", "two"])


def test_missing_collections_read_as_empty_and_drop_says_whether_one_existed(store: VectorStore) -> None:
    assert store.query("nothing-here", "hello") == []
    assert store.get("nothing-here") == []
    assert store.count("nothing-here") == 0
    assert store.client.list_collections() == []  # reading created nothing

    add_notes(store)
    assert store.drop("notes") is True
    assert store.drop("notes") is False
    assert store.query("notes", "cat") == []


def test_collections_remember_our_embedding_function_and_cosine_space(store: VectorStore) -> None:
    add_notes(store)

    # Fetched without an embedding function, Chroma rebuilds ours from the stored settings (no ONNX download).
    collection = store.client.get_collection("notes")

    assert collection.configuration_json["embedding_function"] == {
        "type": "known",
        "name": "skilldesk",
        "config": {"EMBEDDINGS": "minilm"},
    }
    assert collection.configuration_json["hnsw"]["space"] == "cosine"
    assert collection.query(query_texts=["a kitten on a rug"], n_results=1)["ids"] == [["cat"]]


def test_telemetry_is_off_and_there_is_one_client_per_path(
    store: VectorStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    again = store_from_config({"CHROMA_PATH": "chroma", "EMBEDDINGS": "minilm"})  # relative, same directory

    assert store.client.get_settings().anonymized_telemetry is False
    assert again.client is store.client
    assert again.embedder is store.embedder
    with pytest.raises(ValueError, match="CHROMA_PATH"):
        store_from_config({"EMBEDDINGS": "minilm"})


def test_a_collection_refuses_vectors_from_another_embedder(
    store: VectorStore, server: EmbeddingsServer
) -> None:
    add_notes(store)
    other = VectorStore(store.client, OpenAICompatibleEmbedder(f"{server.url}/v1", "toy-embedder", policy=LOCAL))

    with pytest.raises(ValueError, match="drop the collection"):
        other.query("notes", "cat")
    with pytest.raises(ValueError, match="drop the collection"):
        other.add("notes", ids=["x"], texts=["x"])
    assert server.requests == []


def test_any_embedder_works_and_large_writes_are_split(store: VectorStore, server: EmbeddingsServer) -> None:
    # The toy server embeds fast, so this can exceed Chroma's per-call cap (5461 on the embedded backend).
    other = VectorStore(
        store.client, OpenAICompatibleEmbedder(f"{server.url}/v1", "toy-embedder", batch_size=512, policy=LOCAL)
    )
    total = store.client.get_max_batch_size() + 10
    texts = [f"record {number} " + "z" * (number % 7) for number in range(total)]

    other.add("toy", ids=[str(number) for number in range(total)], texts=texts)

    assert other.count("toy") == total
    assert other.query("toy", "zzzzzz", n=1)[0].text.endswith("z" * 6)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("memories", "memories"), ("user-42.notes", "user-42.notes"), ("Agent_7", "Agent_7")],
)
def test_valid_collection_names_are_kept(name: str, expected: str) -> None:
    assert collection_name(name) == expected


def test_other_collection_names_become_valid_distinct_names(store: VectorStore) -> None:
    names = ["ab", "x", "", "memory:user 1", "memory user 1", "memory-user-1", "_hidden_", "a..b", "1.2.3.4"]
    names += ["ünïcödé", "n" * 64, "n" * 65]

    normalised = [collection_name(name) for name in names]

    assert len(set(normalised)) == len(names)
    assert all(collection_name(name) == name for name in normalised)  # already valid: unchanged
    for name in names:
        store.add(name, ids=["1"], texts=[f"text for {name!r}"])
        assert store.get(name)[0].text == f"text for {name!r}"


# --- a Chroma server (CHROMA_URL) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Run `chroma run` on a free port on 127.0.0.1 and return its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chroma = Path(sys.executable).parent / "chroma"
    path = tmp_path_factory.mktemp("chroma-server")
    process = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/api/v2/heartbeat", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_chroma_server_is_used_when_configured(chroma_server: str, minilm: Embedder) -> None:
    store = store_from_config({"CHROMA_URL": chroma_server, "CHROMA_PATH": "/unused", "EMBEDDINGS": "minilm"})
    add_notes(store)

    assert store.client.get_settings().anonymized_telemetry is False
    assert store_from_config({"CHROMA_URL": chroma_server}).client is store.client
    assert ids(store.query("notes", "a kitten is sitting on a rug", n=1)) == ["cat"]
    assert ids(store.get("notes", where={"user": "ana", "kind": "todo"})) == ["tax"]
    store.delete("notes", where={"user": "ana"})
    assert sorted(ids(store.get("notes"))) == ["coffee", "trip"]
    assert store.drop("notes") is True


def test_a_chroma_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="CHROMA_URL must look like"):
        store_from_config({"CHROMA_URL": "chroma.internal:8000"})
