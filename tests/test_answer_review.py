"""The answer review the runtime owns: one rule for every reviewer's verdict, the text shown stored once, the
model's context holding what the user saw, a reviewer that fails holding the answer back."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from app.extensions import db
from app.models import Conversation
from app.runtime.record import TurnRecord
from app.runtime.review import UNREVIEWED, Ask, Reviewer, Settled, review, shown_context
from app.runtime.skill import Skill
from app.runtime.verdicts import Verdict
from tests.chat_driver import model_context, outcome, send, start_chat
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted
from tests.skills.discipline_skills import installed, skill_entries


def reviewer(name: str, verdict: Verdict) -> Reviewer:
    return Reviewer(name, lambda _text, _record: verdict)


VERDICTS = {
    "keeps": Verdict.keep({"a": 1}),
    "links": Verdict.revised(lambda text: text.replace("[1]", "[[1]](/p/1)"), phase=90),
    "marks": Verdict.revised(lambda text: text + " (checked)", phase=10),
    "asks": Verdict.ask_again("Say only what you did.", otherwise=Verdict.replaced("This answer is unfinished.")),
    "replaces": Verdict.replaced("The documents do not answer this."),
}


@pytest.mark.parametrize("names", [("keeps", "links", "marks"), ("asks", "links"), ("replaces", "asks", "keeps")])
def test_every_order_of_the_reviewers_settles_on_the_same_answer(names):
    results = set()
    for order in itertools.permutations(names):
        for can_ask in (True, False):
            result = review([reviewer(name, VERDICTS[name]) for name in order], "Backups run nightly [1].",
                            TurnRecord(), can_ask)
            results.add((can_ask, repr(result)))
    assert len(results) == 2  # one outcome with a budget left, one without, whatever the order


def test_revisions_apply_in_phase_order_and_asks_are_sent_together():
    both = [reviewer("links", VERDICTS["links"]), reviewer("marks", VERDICTS["marks"])]
    assert review(both, "See [1].", TurnRecord(), True) == Settled("See [[1]](/p/1). (checked)", {})
    asks = [reviewer("b", Verdict.ask_again("Fix B.", Verdict.keep())),
            reviewer("a", Verdict.ask_again("Fix A.", Verdict.keep()))]
    assert review(asks, "x", TurnRecord(), True) == Ask("Fix A.\n\nFix B.", ["a", "b"])


def test_without_a_budget_an_ask_becomes_what_it_says_applies_instead_and_replacements_are_shown_in_turn():
    found = review([reviewer("asks", VERDICTS["asks"]), reviewer("replaces", VERDICTS["replaces"])], "x",
                   TurnRecord(), False)
    assert found.text == "This answer is unfinished.\n\nThe documents do not answer this."


def test_a_reviewer_that_raises_holds_the_answer_back():
    def broken(_text, _record):
        raise RuntimeError("boom")

    found = review([Reviewer("broken", broken), reviewer("keeps", VERDICTS["keeps"])], "I did it.", TurnRecord(), True)
    assert found.text == UNREVIEWED and found.failed == "broken"


def test_the_context_drops_refused_attempts_and_holds_the_text_shown():
    messages = [ModelRequest(parts=[UserPromptPart("Create Contacts")]),
                ModelResponse(parts=[TextPart("I have created Contacts.")]),
                ModelRequest(parts=[RetryFeedbackPart("No tool result shows that.",
                                                      retry=RetryInfo(cause="model_retry", attempt=1, max_retries=2))]),
                ModelResponse(parts=[TextPart("Nothing was created yet [1].")])]
    kept = shown_context(messages, 0, "Nothing was created yet [[1]](/p/1).", ["No tool result shows that."])
    assert len(kept) == 2 and kept[1].parts == [TextPart("Nothing was created yet [[1]](/p/1).")]


def test_text_written_before_a_tool_call_is_said_once_in_the_context():
    call = ToolCallPart("count_rows", {"table": "contacts"}, tool_call_id="c1")
    messages = [ModelRequest(parts=[UserPromptPart("How many contacts?")]),
                ModelResponse(parts=[ThinkingPart("count them"), TextPart("Let me count."), call]),
                ModelRequest(parts=[ToolReturnPart("count_rows", "3", tool_call_id="c1")]),
                ModelResponse(parts=[TextPart("There are 3 contacts.")])]
    kept = shown_context(messages, 0, "Let me count.\n\nThere are 3 contacts.", [])
    assert kept[1].parts == [ThinkingPart("count them"), call] and kept[2] == messages[2]
    said = [part.content for message in kept for part in message.parts if isinstance(part, TextPart)]
    assert said == ["Let me count.\n\nThere are 3 contacts."]


# In real runs: the answer-checks skill asks again, and the user's next turn is given the accepted answer only.

@pytest.fixture
def user(auth):
    return auth.login_as("user")


def test_after_an_answer_is_asked_again_the_model_context_holds_only_the_accepted_answer(app, client, user,
                                                                                         scripted_model):
    script = Script("I have created the table Contacts.", "Nothing was changed yet: shall I create it?", "Fine.")
    with installed(app), app.app_context():
        agent_id = make_agent(skills=skill_entries({"name": "answer_checks", "config": {}}),
                              model_config_id=scripted(scripted_model, script)).id
    conversation_id = start_chat(app, client, agent_id)
    with installed(app):
        _run, message = outcome(app, send(app, client, conversation_id, "Create Contacts"))
        assert message.content == "Nothing was changed yet: shall I create it?"
        assert message.meta["review"] == {"asked_again": ["answer_checks"]}
        said = [part.content for m in model_context(app, conversation_id) for part in m.parts
                if isinstance(part, TextPart | RetryFeedbackPart)]
        assert said == ["Nothing was changed yet: shall I create it?"]  # no refused claim, no feedback
        send(app, client, conversation_id, "Yes")
    next_turn = script.seen[-1]
    texts = [part.content for m in next_turn for part in m.parts if isinstance(part, TextPart)]
    assert "I have created the table Contacts." not in texts


class Nothing(BaseModel):
    pass


@dataclass
class Inert(AbstractCapability[Any]):
    """A capability that does nothing: the broken reviewer's skill must build something to review."""


def _failing_review(config, built, text, record):
    raise RuntimeError("the reviewer broke")


def test_a_reviewer_that_fails_leaves_the_run_unfinished_and_keeps_the_message_and_the_steps(app, client, user,
                                                                                             scripted_model):
    broken = Skill(name="broken_review", title="Broken", config=Nothing, gives_tools=False,
                   build=lambda config, ctx: Inert(), review_answer=_failing_review)
    app.extensions["skills"][broken.name] = broken
    try:
        script = Script([("add_rows", {"table": "Contacts", "count": 2})], "I have added 2 rows to Contacts.")
        with installed(app), app.app_context():
            agent_id = make_agent(skills=skill_entries({"name": broken.name, "config": {}}),
                                  model_config_id=scripted(scripted_model, script)).id
        with installed(app):
            conversation_id = start_chat(app, client, agent_id)
            run, message = outcome(app, send(app, client, conversation_id, "Add two rows"))
    finally:
        app.extensions["skills"].pop(broken.name)
    assert run.status == "unfinished" and "could not be checked" in run.error
    assert message.content == UNREVIEWED and [step["name"] for step in message.steps] == ["add_rows"]
    assert message.meta["receipt"]["changed"][0]["summary"] == "added 2 rows to Contacts"
    with app.app_context():
        assert db.session.get(Conversation, conversation_id) is not None


@pytest.mark.parametrize("order", list(itertools.permutations(["answer_checks", "knowledge", "ui_proposals"])),
                         ids="-".join)
def test_the_workspace_assistants_reviewers_settle_the_same_way_in_any_order(app, client, auth, scripted_model,
                                                                             order):
    """The bug this review replaced: with knowledge and answer checks together the claim was shown as is, and in
    the other order the run failed on pydantic-ai's output retries."""
    from app.seed import WORKSPACE_SKILLS

    auth.login_as("admin")
    reviewers = {entry["name"]: entry for entry in WORKSPACE_SKILLS if entry["name"] in order}
    skills = [entry for entry in WORKSPACE_SKILLS if entry["name"] not in order] + [reviewers[n] for n in order]
    script = Script(*["I created the table Contacts with 3 rows."] * 4)
    with app.app_context():
        agent_id = make_agent(skills=[dict(entry) for entry in skills],
                              model_config_id=scripted(scripted_model, script)).id
    conversation_id = start_chat(app, client, agent_id)
    run, message = outcome(app, send(app, client, conversation_id, "Create a table Contacts"))
    assert run.status == "succeeded"
    assert "I created the table Contacts" not in message.content and message.content.startswith("This answer is")
    assert message.meta["review"]["asked_again"] == ["answer_checks", "answer_checks"]
    assert message.meta["receipt"] == {"version": 1, "changed": [], "unchanged": []}
