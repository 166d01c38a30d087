"""Embeddings: the bundled MiniLM model, an OpenAI-compatible endpoint, and choosing one from the config."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.guards.outbound import OutboundPolicy, OutboundRefused
from app.knowledge.embeddings import (
    Embedder,
    EmbeddingsError,
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
    embedder_from_config,
    load_minilm,
)

LOCAL = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}))

if TYPE_CHECKING:
    from conftest import EmbeddingsServer

ROOT = Path(__file__).resolve().parents[2]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


# --- MiniLM ---------------------------------------------------------------------------------------


def test_minilm_returns_one_unit_vector_of_384_dimensions_per_text(minilm: Embedder) -> None:
    vectors = minilm.embed(["hello", "world", "a third, longer sentence"])

    assert isinstance(minilm, MiniLMEmbedder)
    assert minilm.dimensions == 384 == load_minilm().get_embedding_dimension()
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    assert all(math.isclose(math.hypot(*vector), 1.0, abs_tol=1e-5) for vector in vectors)
    assert minilm.embed([]) == []


def test_minilm_puts_related_sentences_closer(minilm: Embedder) -> None:
    cat, kitten, tax = minilm.embed(
        ["the cat sat on the mat", "a kitten is sitting on a rug", "quarterly tax filing deadline"]
    )

    assert cosine(cat, kitten) > cosine(cat, tax) + 0.3


def test_minilm_is_the_same_object_for_the_same_settings(minilm: Embedder) -> None:
    assert embedder_from_config({"EMBEDDINGS": "minilm"}) is minilm
    assert embedder_from_config({"EMBEDDINGS": " MiniLM "}) is minilm
    assert embedder_from_config({}) is minilm  # minilm is the default
    assert load_minilm() is load_minilm()


def test_minilm_loads_once_when_first_asked_from_many_threads_and_offline(tmp_path: Path) -> None:
    # A fresh interpreter, so the first load really happens here; HF_HOME points at an empty directory
    # so a hidden dependency on a Hugging Face cache would fail the load.
    script = textwrap.dedent(
        """
        import json, os, threading
        from app.knowledge.embeddings import MiniLMEmbedder, load_minilm

        barrier = threading.Barrier(6)
        models = []

        def first_use():
            barrier.wait()
            models.append(load_minilm())

        threads = [threading.Thread(target=first_use) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        vectors = MiniLMEmbedder().embed(["offline"])
        print(json.dumps({
            "models": len({id(model) for model in models}),
            "dimensions": len(vectors[0]),
            "offline": [os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE")],
        }))
        """
    )
    env = {key: value for key, value in os.environ.items() if not key.endswith("_OFFLINE")}
    env |= {"HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}

    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"models": 1, "dimensions": 384, "offline": ["1", "1"]}
    assert "Loading weights" not in result.stderr  # no progress bar in the server's log


# --- OpenAI-compatible endpoint -------------------------------------------------------------------


def test_openai_compatible_embeds_in_order_in_batches_with_the_key_from_the_environment(
    server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLDESK_TEST_EMBEDDINGS_KEY", "sk-test")
    embedder = OpenAICompatibleEmbedder(
        f"{server.url}/v1/", "toy-embedder", "SKILLDESK_TEST_EMBEDDINGS_KEY", batch_size=2, policy=LOCAL
    )
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]

    vectors = embedder.embed(texts)

    assert vectors == [server.vector(text) for text in texts]  # the server answers out of order
    assert embedder.dimensions == server.dimensions
    assert [request.body for request in server.requests] == [
        {"model": "toy-embedder", "input": ["alpha", "beta"]},
        {"model": "toy-embedder", "input": ["gamma", "delta"]},
        {"model": "toy-embedder", "input": ["epsilon"]},
    ]
    assert {request.path for request in server.requests} == {"/v1/embeddings"}
    assert {request.headers["Authorization"] for request in server.requests} == {"Bearer sk-test"}
    embedder.close()


def test_openai_compatible_sends_no_key_when_none_is_configured(server: EmbeddingsServer) -> None:
    embedder = OpenAICompatibleEmbedder(f"{server.url}/v1", "toy-embedder", policy=LOCAL)

    assert embedder.dimensions == server.dimensions  # learnt with one request
    assert embedder.embed([]) == []
    assert len(server.requests) == 1
    assert "Authorization" not in server.requests[0].headers
    embedder.close()


def test_openai_compatible_names_the_missing_key_variable(
    server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKILLDESK_TEST_MISSING_KEY", raising=False)
    embedder = OpenAICompatibleEmbedder(f"{server.url}/v1", "toy-embedder", "SKILLDESK_TEST_MISSING_KEY",
                                        policy=LOCAL)

    with pytest.raises(EmbeddingsError, match="SKILLDESK_TEST_MISSING_KEY"):
        embedder.embed(["hello"])
    assert server.requests == []  # nothing is sent without the key
    embedder.close()


def test_openai_compatible_goes_through_the_outbound_guard(server: EmbeddingsServer) -> None:
    embedder = OpenAICompatibleEmbedder(f"{server.url}/v1", "toy-embedder")  # no allow-list entry

    with pytest.raises(OutboundRefused, match=r"127\.0\.0\.1 is off limits .*OUTBOUND_ALLOWED_HOSTS"):
        embedder.embed(["hello"])
    assert server.requests == []  # refused before connecting
    embedder.close()


@pytest.mark.parametrize(
    ("prefix", "message"),
    [("/broken/v1", "answered 500: .*model not loaded"), ("/odd/v1", "OpenAI embeddings shape")],
)
def test_openai_compatible_reports_what_the_server_did_wrong(
    server: EmbeddingsServer, prefix: str, message: str
) -> None:
    embedder = OpenAICompatibleEmbedder(server.url + prefix, "toy-embedder", policy=LOCAL)

    with pytest.raises(EmbeddingsError, match=message):
        embedder.embed(["hello"])
    embedder.close()


# --- choosing from the configuration ---------------------------------------------------------------


def test_config_builds_one_openai_compatible_embedder_per_settings(server: EmbeddingsServer) -> None:
    config = {
        "EMBEDDINGS": "openai-compatible",
        "EMBEDDINGS_URL": f"{server.url}/v1",
        "EMBEDDINGS_MODEL": "toy-embedder",
        "EMBEDDINGS_API_KEY_ENV": None,
        "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",  # the admin allows the local server
    }

    embedder = embedder_from_config(config)

    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder_from_config(config) is embedder
    assert embedder_from_config(config | {"EMBEDDINGS_MODEL": "other"}) is not embedder
    # settings round-trip: Chroma rebuilds the embedder from them
    assert embedder_from_config(embedder.settings) is embedder
    assert embedder.settings == {
        "EMBEDDINGS": "openai-compatible",
        "EMBEDDINGS_URL": f"{server.url}/v1",
        "EMBEDDINGS_MODEL": "toy-embedder",
    }
    assert embedder.embed(["abc"]) == [server.vector("abc")]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"EMBEDDINGS": "openai-compatible", "EMBEDDINGS_MODEL": "m"}, "needs EMBEDDINGS_URL"),
        ({"EMBEDDINGS": "openai-compatible", "EMBEDDINGS_URL": "http://x/v1"}, "EMBEDDINGS_MODEL"),
        ({"EMBEDDINGS": "word2vec"}, "must be one of minilm, openai-compatible; got 'word2vec'"),
    ],
)
def test_config_errors_say_what_to_set(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        embedder_from_config(config)
