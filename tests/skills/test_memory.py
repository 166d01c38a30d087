"""Long-term memory in real agent runs, the Memories page, and purging: rows and Chroma vectors together."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from app.extensions import db
from app.knowledge.embeddings import Embedder, embedder_from_config
from app.knowledge.memories import remember
from app.knowledge.vectors import store_from_config
from app.models import Memory
from app.skills.memory import Config
from tests.conftest import make_agent
from tests.skill_chat import Script, chat_with, scripted


@pytest.fixture(scope="session")
def warm_embedder() -> Embedder:
    """Load MiniLM once for the run (it is a process-wide singleton), outside any run's time limit."""
    embedder = embedder_from_config({"EMBEDDINGS": "minilm"})
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture(autouse=True)
def own_chroma(app, tmp_path, warm_embedder):
    """Give each test an empty vector store, as the database is emptied after each test."""
    app.config["CHROMA_PATH"] = str(tmp_path / "chroma")


def memory_agent(app, scripted_model, script: Script, **settings) -> int:
    model_id = scripted(scripted_model, script)
    with app.app_context():
        return make_agent("Rememberer", skills=[{"name": "memory", "config": settings}],
                          model_config_id=model_id).id


def memories(app) -> list[tuple[int | None, int | None, str, str, str]]:
    with app.app_context():
        return [(m.user_id, m.agent_id, m.scope, m.collection, m.text)
                for m in db.session.scalars(db.select(Memory).order_by(Memory.id))]


def memory_ids(app) -> list[int]:
    with app.app_context():
        return list(db.session.scalars(db.select(Memory.id).order_by(Memory.id)))


def vectors(app, collection: str) -> dict[str, str]:
    return {record.id: record.text for record in store_from_config(app.config).get(collection)}


def store(*texts: str) -> list[tuple[str, dict]]:
    return [("store_in_memory", {"text": text}) for text in texts]


SEARCH_COLOUR = [("search_memory", {"query": "Which colour does the user like?"})]


def test_a_personal_memory_is_stored_and_found_again_in_a_later_chat(app, client, auth, scripted_model):
    user_id = auth.login_as("user")
    script = Script(store("My favourite colour is teal."), store("I live in Lisbon."), "Noted.",
                    SEARCH_COLOUR)
    agent_id = memory_agent(app, scripted_model, script)

    run, message = chat_with(app, client, agent_id, "Remember my colour and city.")

    assert run.status == "succeeded", run.error
    teal, lisbon = memory_ids(app)
    assert [step["result"] for step in message.steps] == [f"Remembered (memory {teal}).",
                                                          f"Remembered (memory {lisbon})."]
    collection = f"memories-user-{user_id}"
    assert memories(app) == [(user_id, agent_id, "personal", collection, "My favourite colour is teal."),
                             (user_id, agent_id, "personal", collection, "I live in Lisbon.")]
    assert vectors(app, collection) == {f"memory-{teal}": "My favourite colour is teal.",
                                        f"memory-{lisbon}": "I live in Lisbon."}

    run, message = chat_with(app, client, agent_id, "What colour do I like?")  # a new conversation

    [step] = message.steps
    found = json.loads(step["result"])
    assert [hit["text"] for hit in found] == ["My favourite colour is teal."]  # the city is not relevant
    assert found[0]["relevance"] >= Config().min_relevance
    assert {"search_memory", "store_in_memory"} == {tool.name for tool in script.infos[0].function_tools}
    assert "long-term memory" in script.infos[0].instructions


def test_personal_memories_are_kept_apart_and_shared_ones_are_not(app, client, auth, scripted_model):
    ada = auth.login_as("user")
    personal = memory_agent(app, scripted_model,
                            Script(store("My favourite colour is teal."), "Noted.", SEARCH_COLOUR))
    shared = memory_agent(app, scripted_model, Script(store("The office wifi is called Harbour."), "Noted.",
                                                      [("search_memory", {"query": "wifi name"})]),
                          personal=False)
    chat_with(app, client, personal)
    chat_with(app, client, shared)
    auth.logout()
    auth.login_as("user")

    _run, mine = chat_with(app, client, personal, "What colour do I like?")
    _run, ours = chat_with(app, client, shared, "What is the wifi called?")

    assert mine.steps[-1]["result"].startswith("No memory matched")
    assert json.loads(ours.steps[-1]["result"])[0]["text"] == "The office wifi is called Harbour."
    assert memories(app)[1] == (ada, shared, "shared", f"memories-agent-{shared}",
                                "The office wifi is called Harbour.")


def test_a_repeated_fact_is_stored_once_and_an_overlong_one_is_refused(app, client, auth, scripted_model):
    auth.login_as("user")
    script = Script(store("I drink tea."), store("I drink tea."), store("x" * 40))
    agent_id = memory_agent(app, scripted_model, script, max_chars=30)

    _run, message = chat_with(app, client, agent_id)

    first, again, overlong = message.steps
    [tea] = memory_ids(app)
    assert (first["result"], again["result"]) == (f"Remembered (memory {tea}).",
                                                  f"Already remembered (memory {tea}).")
    assert overlong["failed"] and "Keep a memory under 30 characters" in overlong["result"]
    assert len(memories(app)) == 1


def test_the_memories_page_shows_edits_and_deletes_only_the_users_own(app, client, auth):
    user_id = auth.login_as("user")
    with app.app_context():
        other = make_agent("Other").id
        mine, _ = remember("I prefer short answers.", user_id=user_id, agent_id=other, personal=True)
        theirs, _ = remember("Someone else's secret.", user_id=auth.create("user"), agent_id=other,
                             personal=True)
        mine_id, theirs_id = mine.id, theirs.id

    page = client.get("/memories/")
    assert page.status_code == 200
    assert "I prefer short answers." in page.text and "Someone else" not in page.text
    assert f'id="memory-{mine_id}"' in page.text

    # Editing re-embeds: the new meaning is what a search finds.
    edited = client.post(f"/memories/{mine_id}", data={"text": "I prefer   detailed answers."},
                         headers={"HX-Request": "true"})
    assert edited.status_code == 200 and edited.text.count(f'id="memory-{mine_id}"') == 1
    assert "I prefer detailed answers." in edited.text and "Saved." in edited.text
    assert vectors(app, f"memories-user-{user_id}") == {f"memory-{mine_id}": "I prefer detailed answers."}

    empty = client.post(f"/memories/{mine_id}", data={"text": "  "}, headers={"HX-Request": "true"})
    assert empty.status_code == 422 and "Write what should be remembered." in empty.text
    plain = client.post(f"/memories/{mine_id}", data={"text": "x" * 2_001})
    assert plain.status_code == 422 and "Keep a memory under 2,000 characters" in plain.text

    assert client.post(f"/memories/{theirs_id}", data={"text": "mine now"}).status_code == 404
    assert client.post(f"/memories/{theirs_id}/delete").status_code == 404

    deleted = client.post(f"/memories/{mine_id}/delete", headers={"HX-Request": "true"})
    assert deleted.status_code == 200 and deleted.text == ""
    assert vectors(app, f"memories-user-{user_id}") == {}
    assert [text for *_, text in memories(app)] == ["Someone else's secret."]
    assert "No agent remembers anything about you." in client.get("/memories/").text


def test_plain_forms_redirect_and_the_page_is_in_the_navigation(app, client, auth):
    user_id = auth.login_as("user")
    with app.app_context():
        memory, _ = remember("I like jazz.", user_id=user_id, agent_id=None, personal=True)
        memory_id = memory.id

    assert 'href="/memories/"' in client.get("/memories/").text
    assert client.post(f"/memories/{memory_id}", data={"text": "I like blues."}).status_code == 302
    assert "I like blues." in client.get("/memories/").text
    assert client.post(f"/memories/{memory_id}/delete").status_code == 302
    assert memories(app) == []


def test_guests_may_not_open_the_memories_page(app, client, auth):
    auth.login_as("guest")
    assert client.get("/memories/").status_code == 403


def test_deleting_the_user_removes_their_memories_and_vectors(app, client, auth, scripted_model):
    auth.login_as("admin")
    leaving = auth.create("user")
    staying = auth.create("user")
    with app.app_context():
        agent_id = make_agent("Shared").id
        remember("I am allergic to nuts.", user_id=leaving, agent_id=agent_id, personal=True)
        remember("The printer is on floor 2.", user_id=leaving, agent_id=agent_id, personal=False)
        remember("The kitchen closes at 3.", user_id=staying, agent_id=agent_id, personal=False)

    assert client.post(f"/admin/users/{leaving}/delete").status_code == 302

    assert memories(app) == [(staying, agent_id, "shared", f"memories-agent-{agent_id}",
                              "The kitchen closes at 3.")]
    assert vectors(app, f"memories-user-{leaving}") == {}
    assert list(vectors(app, f"memories-agent-{agent_id}").values()) == ["The kitchen closes at 3."]
    with app.app_context():
        assert store_from_config(app.config).count(f"memories-user-{leaving}") == 0


UNRELATED_MEMORIES = ["My favourite colour is teal.", "I live in Lisbon.", "The office wifi is called Harbour."]


def test_a_search_that_nothing_is_relevant_to_says_no_memory_matched(app, client, auth, scripted_model):
    auth.login_as("user")
    question = [("search_memory", {"query": "How do I reverse a linked list?"})]
    agent_id = memory_agent(app, scripted_model, Script(store(*UNRELATED_MEMORIES), "Noted.", question))
    chat_with(app, client, agent_id, "Remember these.")

    run, message = chat_with(app, client, agent_id, "Reverse a linked list")
    assert run.status == "succeeded", run.error
    [step] = message.steps
    assert not step["failed"]
    assert step["result"] == ("No memory matched (the minimum relevance is 0.25). "
                              "Answer without memory, or search again in other words.")


def test_the_minimum_relevance_is_a_setting(app, client, auth, scripted_model):
    auth.login_as("user")
    question = [("search_memory", {"query": "How do I reverse a linked list?"})]
    agent_id = memory_agent(app, scripted_model, Script(store(*UNRELATED_MEMORIES), "Noted.", question),
                            min_relevance=0)
    chat_with(app, client, agent_id, "Remember these.")
    _run, message = chat_with(app, client, agent_id, "Reverse a linked list")
    found = json.loads(message.steps[0]["result"])
    # Noise, when asked for: a memory barely related (the others point away from the question, below 0).
    assert [(hit["text"], hit["relevance"] < 0.25) for hit in found] == [("The office wifi is called Harbour.", True)]


def test_settings_are_bounded():
    with pytest.raises(ValidationError):
        Config(max_chars=5_000)
    with pytest.raises(ValidationError):
        Config(results=0)
    with pytest.raises(ValidationError):
        Config(min_relevance=1.5)
    with pytest.raises(ValidationError):
        Config(scope="everyone")
