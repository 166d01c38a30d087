"""The Markdown export of a chat: each answer under the agent that gave it, tool data kept literal, long results
folded, and a turn that waited for a person with what it asked and who decided what and when."""

from __future__ import annotations

import html
import json
import re

from markdown_it import MarkdownIt

from app.extensions import db
from app.models import PendingCall, User
from tests.chat_driver import resumed_run, send, start_chat
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted
from tests.waiting.scenario import approval_agent, waiting_call

RUNBOOK = ("# Restart the service\n\nRun this:\n\n```\nsystemctl restart app\n```\n\n"
           "**Done.** <b>bold</b> | a | table |\n````\nstill the result")


def exported(client, conversation_id: int) -> str:
    response = client.get(f"/chat/{conversation_id}/export.md")
    assert response.status_code == 200
    return response.text


def headings(markdown: str) -> list[str]:
    """The speaker of each message, as its `## … — <date>` heading names it."""
    return re.findall(r"^## (.+?) — \d{4}-\d\d-\d\d \d\d:\d\d UTC$", markdown, re.MULTILINE)


def code_blocks(markdown: str) -> list[str]:
    """The text of every fenced or indented code block, as a CommonMark renderer shows it."""
    rendered = MarkdownIt("commonmark").render(markdown)
    return [html.unescape(body) for body in re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, re.DOTALL)]


def delegating_chat(app, client, scripted_model, answer: str) -> int:
    """A chat whose agent asks a helper agent once; the helper answers `answer`, which is the tool's result."""
    with app.app_context():
        helper = make_agent("Runbooks", model_config_id=scripted(scripted_model, Script(answer)))
        front = make_agent("Front desk", model_config_id=scripted(scripted_model, Script(
            [("ask_runbooks", {"request": "How do I restart **the** `app`?"})], "Here is how.")),
            skills=[{"name": "subagent", "config": {"agent": helper.name, "tool_name": "ask_runbooks"}}])
        front_id = front.id
    conversation_id = start_chat(app, client, front_id)
    send(app, client, conversation_id, "How do I restart the app?")
    return conversation_id


def test_after_a_hand_over_each_answer_is_under_the_agent_that_gave_it(app, client, auth, scripted_model):
    with app.app_context():
        billing = make_agent("Billing", model_config_id=scripted(scripted_model, Script("Billing here.")))
        front = make_agent("Front desk", model_config_id=scripted(scripted_model, Script(
            [("hand_over_to_billing", {"reason": "An invoice question."})], "Billing takes it from here.")),
            skills=[{"name": "subagent", "config": {"agent": billing.name, "mode": "handover",
                                                    "tool_name": "hand_over_to_billing"}}])
        front_id, front_name, billing_name = front.id, front.name, billing.name
    auth.login_as("user")
    conversation_id = start_chat(app, client, front_id)
    send(app, client, conversation_id, "Why is my invoice wrong?")
    send(app, client, conversation_id, "So, about that invoice?")

    markdown = exported(client, conversation_id)
    assert headings(markdown) == ["You", "Note", front_name, "You", billing_name], markdown
    assert markdown.index(f"## {front_name}") < markdown.index("Billing takes it from here.") \
        < markdown.index(f"## {billing_name}") < markdown.index("Billing here.")
    data = json.loads(client.get(f"/chat/{conversation_id}/export.json").text)
    assert [m.get("agent") for m in data["messages"] if m["role"] == "assistant"] == [front_name, billing_name]


def test_a_tool_result_with_markdown_and_fences_stays_inside_its_own_fence(app, client, auth, scripted_model):
    auth.login_as("user")
    conversation_id = delegating_chat(app, client, scripted_model, RUNBOOK)

    markdown = exported(client, conversation_id)
    rendered = MarkdownIt("commonmark").render(markdown)
    # Nothing of the result renders: no heading, no bold, no HTML, no code block of its own.
    assert "<h1>Restart the service" not in rendered and "<strong>Done.</strong>" not in rendered
    assert "<b>" not in rendered
    [block] = [block for block in code_blocks(markdown) if "systemctl" in block]
    assert "# Restart the service" in block and "```\nsystemctl restart app\n```" in block
    assert "**Done.** <b>bold</b>" in block and block.rstrip().endswith("still the result")
    # The arguments are a code span: their Markdown does not render either.
    assert "<strong>the</strong>" not in rendered
    assert re.search(r"<code>[^<]*How do I restart \*\*the\*\* `app`\?[^<]*</code>", html.unescape(rendered)), rendered
    assert "Here is how." in markdown


def test_a_long_tool_result_is_folded_with_a_note_of_what_was_left_out(app, client, auth, scripted_model):
    auth.login_as("user")
    lines = [f"Line {n:02d}: " + "x" * 30 for n in range(1, 81)]  # 80 lines, about 3 KB
    conversation_id = delegating_chat(app, client, scripted_model, "\n".join(lines))

    markdown = exported(client, conversation_id)
    assert "<details>" in markdown and "</details>" in markdown
    [block] = [block for block in code_blocks(markdown) if "Line 01" in block]
    assert "Line 40" in block and "Line 41" not in block and "Line 80" not in markdown
    assert re.search(r"40 more lines \([\d,]+ characters\) left out", markdown), markdown
    assert len(markdown) < 3_000


def test_a_turn_that_waited_exports_what_it_asked_who_allowed_it_and_when(app, client, auth, scripted_model):
    deleted: list[int] = []
    agent_id = approval_agent(app, scripted_model, deleted)
    user_id = auth.login_as("user")
    conversation_id = start_chat(app, client, agent_id)
    call = waiting_call(app, send(app, client, conversation_id, "delete 4"))

    client.post(f"/approvals/{call.id}/decision", data={"decision": "once"})
    resumed_run(app, call.id)
    with app.app_context():
        email = db.session.get(User, user_id).email
        decided_at = db.session.get(PendingCall, call.id).answered_at
    markdown = exported(client, conversation_id)
    assert deleted == [4]
    assert '**Waiting for approval:** tool `delete_record` `{"record_id": 4}`' in markdown
    assert f"**Allowed once** by {email} at {decided_at:%Y-%m-%d %H:%M} UTC." in markdown
    # The run that carried the decision: the tool's step and the answer, after the request.
    assert markdown.index("**Allowed once**") < markdown.index("Record 4 deleted.")
