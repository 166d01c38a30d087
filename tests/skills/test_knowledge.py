"""The knowledge skill in real runs: search, checked citations, one reconsideration, the honest no-evidence answer."""

from __future__ import annotations

import re

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

from app.extensions import db
from app.knowledge.embeddings import embedder_from_config
from app.knowledge.indexing import index_knowledge_base
from app.knowledge.library import put_document
from app.models import KnowledgeBase, KnowledgePassage
from app.runtime.untrusted import unfence
from tests.conftest import make_agent
from tests.skill_chat import Script as BaseScript
from tests.skill_chat import chat_with, scripted, streamed

GUIDE = ("# Backups\n\nBackups run every night at 02:00 and are kept for 30 days.\n\n"
         "## Restore\n\nRestore from the Backups page.")


@pytest.fixture(autouse=True)
def own_chroma(app, tmp_path):
    embedder_from_config({"EMBEDDINGS": "minilm"}).embed(["warm up"])
    app.config["CHROMA_PATH"] = str(tmp_path / "chroma")


@pytest.fixture
def user_client(client, auth):
    auth.login_as("user")
    return client


@pytest.fixture
def handbook(app) -> int:
    with app.app_context():
        kb = KnowledgeBase(name="Handbook", roles=["admin", "user"])
        db.session.add(kb)
        db.session.commit()
        put_document(kb, "upload:guide.md", "guide.md", GUIDE.encode())
        db.session.commit()
        index_knowledge_base.delay(kb.id)
        return kb.id


class Script(BaseScript):
    """The scripted model, also recording the retry prompts (ModelRetry on the answer) it was sent."""

    def respond(self, messages, info):
        if not (info.output_tools and not info.allow_text_output):
            self.retries = [(str(p), 0) for m in messages for p in getattr(m, "parts", [])
                            if "Reconsider the same passages" in str(p)]
        return super().respond(messages, info)


def agent(app, scripted_model, script, **settings) -> int:
    with app.app_context():
        return make_agent("Librarian", skills=[{"name": "knowledge", "config": settings}],
                          model_config_id=scripted(scripted_model, script)).id


SEARCH = [("search_knowledge", {"query": "when do backups run"})]


def test_cited_answer_links_to_the_passage_and_an_invented_citation_is_removed(
        app, user_client, scripted_model, handbook):
    script = Script(SEARCH, "Backups run nightly at 02:00 [1]. They are encrypted [7].")
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "When do backups run?")
    assert "[7]" not in message.content
    with app.app_context():
        passage_id = db.session.scalars(db.select(KnowledgePassage.id)).first()
    assert f"(/knowledge/passages/{passage_id})" in message.content
    assert message.meta["knowledge"]["citations"][0]["passage_id"] == passage_id
    assert '"query": "when do backups run"' in message.steps[0]["args"].replace('":"', '": "')
    page = user_client.get(f"/knowledge/passages/{passage_id}")
    assert page.status_code == 200 and b"<mark" in page.data and b"Backups" in page.data


def test_no_valid_citation_reconsiders_the_same_passages_exactly_once(app, user_client, scripted_model, handbook):
    script = Script(SEARCH, "Backups happen at some point [4].", "Backups run at 02:00 [1].")
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "When?")
    assert len(script.retries) == 1 and "Reconsider the same passages ([1]" in script.retries[0][0]
    assert "02:00" in message.content and "[4]" not in message.content
    assert message.meta["knowledge"]["reconsidered"] == 1


def test_an_answer_left_without_citation_becomes_the_honest_no_evidence_answer(
        app, user_client, scripted_model, handbook):
    script = Script(SEARCH, "Backups are probably encrypted.", "I think they are encrypted.", "Third try")
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "Are backups encrypted?")
    assert len(script.retries) == 1  # one reconsideration, not two
    assert len(script.infos) == 3
    assert message.content.startswith("The documents do not answer this.")
    assert "when do backups run" in message.content and "Handbook" in message.content
    assert "encrypted" not in message.content


def test_a_role_without_access_finds_nothing(app, user_client, scripted_model, handbook):
    with app.app_context():
        db.session.get(KnowledgeBase, handbook).roles = ["admin"]
        db.session.commit()
    script = Script(SEARCH, "Answer")
    librarian = agent(app, scripted_model, script, knowledge_bases=["Handbook"])
    run, message = chat_with(app, user_client, librarian, "When?")
    assert message.steps[0]["failed"] and "No knowledge base" in message.steps[0]["result"]
    with app.app_context():
        passage_id = db.session.scalars(db.select(KnowledgePassage.id)).first()
    assert user_client.get(f"/knowledge/passages/{passage_id}").status_code == 404


def test_a_citation_from_an_earlier_turn_is_removed(app, user_client, scripted_model, handbook):
    from tests.chat_driver import outcome, send, start_chat

    script = Script(SEARCH, "Backups run at 02:00 [1].", "As I said, at 02:00 [1].")
    conversation = start_chat(app, user_client, agent(app, scripted_model, script))
    first = outcome(app, send(app, user_client, conversation, "When do backups run?"))[1]
    assert "/knowledge/passages/" in first.content
    second = outcome(app, send(app, user_client, conversation, "Say it again"))[1]
    # No search in this turn: [1] names nothing retrieved now, so it is removed (and nothing was searched).
    assert second.content == "As I said, at 02:00."


def test_the_whole_document_marks_the_passage_it_was_opened_from(app, user_client):
    body = "\n\n".join(f"Paragraph {i}: backups <b>keep</b> {i} copies & more text to fill the passage."
                       for i in range(12))
    with app.app_context():
        kb = KnowledgeBase(name="Long", roles=["admin", "user"], chunk_size=200, chunk_overlap=20)
        db.session.add(kb)
        db.session.commit()
        document = put_document(kb, "upload:long.md", "long.md", body.encode())
        db.session.commit()
        index_knowledge_base.delay(kb.id)
        passages = db.session.scalars(db.select(KnowledgePassage).where(
            KnowledgePassage.document_id == document.id).order_by(KnowledgePassage.position)).all()
        assert len(passages) > 3
        third, document_id = passages[2], document.id
        third_id, marked = third.id, third.text
        other = KnowledgeBase(name="Other", roles=["admin", "user"])
        db.session.add(other)
        db.session.commit()
        stranger = put_document(other, "upload:x.md", "x.md", b"Unrelated text.")
        db.session.commit()
        index_knowledge_base.delay(other.id)
        stranger_passage = db.session.scalars(db.select(KnowledgePassage.id).where(
            KnowledgePassage.document_id == stranger.id)).one()
    passage_page = user_client.get(f"/knowledge/passages/{third_id}").get_data(as_text=True)
    link = f"/knowledge/documents/{document_id}?passage={third_id}#passage"
    assert link in passage_page
    page = user_client.get(link).get_data(as_text=True)
    escaped = marked.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert page.count("<mark") == 1 and f'<mark id="passage">{escaped}</mark>' in page
    assert "<b>keep</b>" not in page  # the document's text is shown, never rendered as HTML
    assert "<mark" not in user_client.get(f"/knowledge/documents/{document_id}").get_data(as_text=True)
    # A passage of another document marks nothing here.
    foreign = user_client.get(f"/knowledge/documents/{document_id}?passage={stranger_passage}")
    assert foreign.status_code == 200 and "<mark" not in foreign.get_data(as_text=True)


SCHEDULE = "# Settings\n\n## Schedule\n\nTo change the backup time, open Settings, then Backups, and pick another hour."


class Rewriter:
    """A model that searches each question, rewriting a follow-up with the conversation's context.

    "and how do I change it?" names nothing to search for; the model replaces "it" by the subject of the
    search it ran earlier in the conversation (the history it is sent), as the skill's instructions ask.
    """

    def __init__(self) -> None:
        self.queries: list[str] = []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:  # the title job
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Backups"})])
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:  # cite the passage that answers the last question
            blocks = unfence(str(returned[0].content)).split("\n\n[")  # results reach models fenced as data
            wanted = "change" if "change" in self.queries[-1] else "nightly"
            number = next(re.match(r"\[?(\d+)\]", b).group(1) for b in blocks if wanted in b)
            return ModelResponse(parts=[TextPart(f"Here is what the documents say [{number}].")])
        question = [p.content for p in messages[-1].parts if isinstance(p, UserPromptPart)][-1]
        earlier = [p.args_as_dict()["query"] for m in messages for p in getattr(m, "parts", [])
                   if isinstance(p, ToolCallPart) and p.tool_name == "search_knowledge"]
        query = question
        if earlier:
            subject = max(earlier[-1].split(), key=len)
            query = re.sub(r"\bit\b", f"the {subject} time", question.removeprefix("and ")).strip()
        self.queries.append(query)
        return ModelResponse(parts=[ToolCallPart("search_knowledge", {"query": query}, f"call-{len(self.queries)}")])

    def stream(self, messages, info):
        return streamed(self.respond(messages, info))


def test_a_follow_up_is_searched_with_the_conversations_context_and_the_step_shows_the_rewrite(
        app, user_client, scripted_model, handbook):
    from tests.chat_driver import outcome, send, start_chat

    with app.app_context():
        put_document(db.session.get(KnowledgeBase, handbook), "upload:settings.md", "settings.md", SCHEDULE.encode())
        db.session.commit()
        index_knowledge_base.delay(handbook)
        schedule = db.session.scalar(db.select(KnowledgePassage.id).where(KnowledgePassage.text.contains("pick")))
    model = Rewriter()
    librarian = agent(app, scripted_model, model)
    conversation = start_chat(app, user_client, librarian)
    outcome(app, send(app, user_client, conversation, "when do backups run"))
    follow_up = "and how do I change it?"
    run, message = outcome(app, send(app, user_client, conversation, follow_up))
    rewritten = "how do I change the backups time?"
    assert model.queries == ["when do backups run", rewritten]
    assert '"how do I change the backups time?"' in message.steps[0]["args"]
    assert message.meta["knowledge"]["searches"] == [rewritten]
    assert [c["passage_id"] for c in message.meta["knowledge"]["citations"]] == [schedule]
    # The step's line names the search that ran, without opening the step.
    page = user_client.get(f"/chat/{conversation}").text
    assert f'<q class="step-headline">{rewritten}</q>' in page
    assert f'<q class="step-headline">{follow_up}</q>' not in page


def test_an_off_topic_search_gives_no_passage_and_the_answer_says_the_documents_do_not_answer(
        app, user_client, scripted_model, handbook):
    query = "how long to knead sourdough bread"
    script = Script([("search_knowledge", {"query": query})], "Knead it for ten minutes [1].")
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "How long should I knead bread?")
    step = message.steps[0]
    assert not step["failed"] and "No passage answers this" in step["result"] and "Handbook" in step["result"]
    assert "[1]" not in step["result"] and "Backups run" not in step["result"]  # nothing to cite
    assert message.content.startswith("The documents do not answer this.") and "ten minutes" not in message.content
    assert message.meta["knowledge"]["no_evidence"] == [query]
    assert script.retries == []  # nothing was retrieved, so there is nothing to reconsider


@pytest.mark.parametrize(("query", "problem"), [
    ("backups " * 400, "Keep the query under 1,000 characters"),
    ("backups \x01\x02\x7f", "control characters"),
    ("   ", "Say what to search for"),
])
def test_a_bad_query_goes_back_to_the_model_and_the_turn_goes_on(app, user_client, scripted_model, handbook,
                                                                   query, problem):
    script = Script([("search_knowledge", {"query": query})], SEARCH, "Backups run at 02:00 [1].")
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "When do backups run?")
    assert run.status == "succeeded"
    assert message.steps[0]["failed"] and problem in message.steps[0]["result"]
    assert not message.steps[1]["failed"] and "/knowledge/passages/" in message.content


def test_teleportation_citing_a_retrieved_passage_is_reconsidered_then_answered_honestly(
        app, user_client, scripted_model, handbook):
    """The search retrieved passages (about backups); the answer cites one for what it does not say."""
    script = Script(SEARCH, "Skilldesk supports teleportation [1].", "Skilldesk supports teleportation [1][2].")
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "Is there teleportation?")
    assert len(script.retries) == 1 and "“Skilldesk supports teleportation.”" in script.retries[0][0]
    assert message.content.startswith("The documents do not answer this.") and "teleportation" not in message.content
    assert "“when do backups run”" in message.content and message.meta["knowledge"]["outcome"] == "no_evidence"


def test_an_invented_statement_beside_a_valid_citation_is_shown_marked_and_json_untouched(
        app, user_client, scripted_model, handbook):
    script = Script(SEARCH, 'Backups run every night at 02:00 [1]. It also deletes your tables every night. '
                            'The tool answered {"created_row_ids":[3]}.')
    run, message = chat_with(app, user_client, agent(app, scripted_model, script), "When do backups run?")
    assert "It also deletes your tables every night (unverified)." in message.content
    assert '{"created_row_ids":[3]}' in message.content
    assert "/knowledge/passages/" in message.content and not script.retries
    assert message.meta["knowledge"]["marked"] == 2


def test_every_sentence_cites_asks_once_then_drops_what_no_passage_supports(
        app, user_client, scripted_model, handbook):
    script = Script(SEARCH, "Backups run every night at 02:00 [1]. They are mirrored to the moon.",
                    "Backups run every night at 02:00 [1]. They are mirrored to the moon.")
    strict = agent(app, scripted_model, script, uncited="every_sentence_cites")
    run, message = chat_with(app, user_client, strict, "When do backups run?")
    assert len(script.retries) == 1 and "“They are mirrored to the moon.”" in script.retries[0][0]
    assert "moon" not in message.content and "02:00" in message.content
    assert message.meta["knowledge"]["dropped"] == 1
