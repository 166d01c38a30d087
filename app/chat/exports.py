"""A chat's exports: Markdown for people to read, JSON for programs.

Each answer is under the agent that gave it (its run's agent), so a chat handed over mid-way still says who
said what. Tool data is quoted, never rendered: short values are code spans, longer ones fenced blocks
whose fence is longer than any run of backticks inside, so nothing a tool returned can close its fence or
become a heading; a long result keeps its first lines in a folded `<details>` block and says how much was
left out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.chat.call_summaries import call_summary, calls_by_message
from app.extensions import db
from app.models import Agent, Conversation, Message, PendingCall, Run
from app.runtime import receipt

INLINE_CHARS = 160  # a value on one line up to this long stays in the step's line, as a code span
FOLD_LINES = 40  # a longer block shows this many lines at most, folded...
FOLD_CHARS = 2_000  # ...and this many characters at most
INDENT = "  "  # a block of a step belongs to its list item


def export_markdown(conversation: Conversation, messages: list[Message]) -> str:
    """Render the transcript as a Markdown document.

    Each part of a message (heading, tool steps, status, text) is a block of its own, separated by a
    blank line, so no part runs into the one before it (an answer is never a continuation of the last
    step's bullet).
    """
    blocks = [f"# {conversation.display_title}"]
    names = {"user": "You", "notice": "Note"}
    speakers = agents_by_message(conversation)
    fallback = conversation.agent.name if conversation.agent else "Assistant"
    calls = calls_by_message(conversation.id)
    for message in messages:
        name = speakers.get(message.id, fallback) if message.role == "assistant" else names.get(message.role,
                                                                                                  message.role)
        blocks.append(f"## {name} — {message.created_at:%Y-%m-%d %H:%M} UTC")
        if message.steps:
            blocks.append("\n".join(step_markdown(step) for step in message.steps))
        status = (message.meta or {}).get("status")
        if status and status != "succeeded":
            error = (message.meta or {}).get("error")
            waits_for = (message.meta or {}).get("waiting_for")
            status = f"{status} for {waits_for}" if status == "waiting" and waits_for else status
            blocks.append(f"_({status}: {error})_" if error else f"_({status})_")
        if message.content.strip():
            blocks.append(message.content.strip("\n"))
        # A turn that waited for a person: what it asked, and who decided what and when.
        blocks += [call_markdown(call) for call in calls.get(message.id, [])]
        found = receipt.read(message.meta)
        if found is not None:
            blocks.append(_receipt_block(found))
    return "\n\n".join(blocks) + "\n"


def export_json(conversation: Conversation, messages: list[Message]) -> str:
    """Render the transcript as JSON; an assistant message names the agent that gave it."""
    calls = calls_by_message(conversation.id)
    speakers = agents_by_message(conversation)
    fallback = conversation.agent.name if conversation.agent else None
    data: dict[str, Any] = {
        "id": conversation.id,
        "title": conversation.title,
        "agent": conversation.agent.name if conversation.agent else None,
        "created_at": conversation.created_at.isoformat(),
        "messages": [
            {"id": m.id, "role": m.role, "content": m.content, "steps": m.steps or [], "meta": m.meta or {},
             **({"agent": speakers.get(m.id, fallback)} if m.role == "assistant" else {}),
             "input_tokens": m.input_tokens, "output_tokens": m.output_tokens,
             "created_at": m.created_at.isoformat(),
             **({"calls": [call_summary(call) for call in calls[m.id]]} if m.id in calls else {})}
            for m in messages
        ],
    }
    return json.dumps(data, ensure_ascii=False, indent=2)


def agents_by_message(conversation: Conversation) -> dict[int, str]:
    """Return the name of the agent that gave each answer, by message id, from the run that wrote it.

    An answer whose agent is gone is "a deleted agent"; one with no run (a copied chat) is left out, for
    the caller to name by the conversation's agent.
    """
    rows = db.session.execute(
        db.select(Message.id, Agent.name).join(Run, Run.id == Message.run_id)
        .outerjoin(Agent, Agent.id == Run.agent_id)
        .where(Message.conversation_id == conversation.id, Message.role == "assistant"))
    return {message_id: name or "A deleted agent" for message_id, name in rows}


def step_markdown(step: dict[str, Any]) -> str:
    """Render one tool step as a list item: its name, arguments and result quoted, a long one folded."""
    line = f"- tool {code_span(str(step.get('name') or '?'))}"
    blocks = []
    args = str(step.get("args") or "").strip()
    if args and args != "{}":
        if _inline(args):
            line += f" {code_span(args)}"
        else:
            line += " with arguments below"
            blocks.append(data_block("Arguments", _pretty_json(args)))
    result, failed = step.get("result"), " (failed)" if step.get("failed") else ""
    if result is None:
        line += f" → no result{failed}"
    elif _inline(result):
        line += f" → {code_span(result) if result.strip() else 'nothing'}{failed}"
    else:
        line += f" → result{failed}:"
        blocks.append(data_block("Result", result))
    return "\n\n".join([line, *[_indented(block) for block in blocks]])


def call_markdown(call: PendingCall) -> str:
    """Say in Markdown what a waiting call asked and how it was answered, by whom and when."""
    summary = call_summary(call)
    asked = f"{call.created_at:%Y-%m-%d %H:%M} UTC"
    if call.kind == "question":
        options = f" ({', '.join(summary['options'])})" if summary["options"] else ""
        lines = [f"**Question:** {_one_line(summary['question'])}{options} — asked {asked}"]
    elif call.kind == "plan":
        lines = [f"**Plan for approval** — asked {asked}:", "", *[f"> {line}" for line in
                                                                 summary["plan"].strip().splitlines()], ""]
    else:
        args = json.dumps(call.args or {}, ensure_ascii=False, sort_keys=True, default=str)
        lines = [f"**Waiting for {'approval' if call.kind == 'approval' else 'a result'}:** tool "
                 f"{code_span(call.tool_name)} {code_span(args)} — asked {asked}"]
    decision = summary["decision"]
    if decision is None:
        until = f", until {call.expires_at:%Y-%m-%d %H:%M} UTC" if call.expires_at else ""
        lines.append(f"**Waiting** for a decision{until}.")
    else:
        at = f"{call.answered_at:%Y-%m-%d %H:%M} UTC" if call.answered_at else "an unknown time"
        outcome = decision["outcome"].capitalize()
        if decision.get("scope"):
            outcome += {"once": " once", "run": " in this run", "always": " in this chat"}.get(decision["scope"], "")
        if decision["outcome"] == "expired":
            lines.append(f"**Expired** at {at}: no decision came in time; the choice applied: "
                         f"{decision.get('choice') or 'deny'}.")
        else:
            details = "".join(f"; {key}: {_one_line(decision[key])}" for key in ("answer", "changes", "comment")
                              if decision.get(key))
            lines.append(f"**{outcome}** by {decision['by'] or 'someone no longer known'} at {at}{details}.")
    return "\n".join(lines)


def code_span(text: str) -> str:
    """Quote text on one line as a code span that no backtick inside it can close."""
    text = _one_line(text)
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""  # CommonMark strips one space each side
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fenced(text: str) -> str:
    """Quote text as a fenced block whose fence is longer than any run of backticks inside it."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def data_block(label: str, text: str) -> str:
    """Quote tool data as a fenced block; past FOLD_LINES lines or FOLD_CHARS characters, fold its start."""
    whole = text.rstrip()
    lines = whole.splitlines()
    count = min(len(lines), FOLD_LINES)
    while count > 1 and len("\n".join(lines[:count])) > FOLD_CHARS:
        count -= 1
    shown = "\n".join(lines[:count])[:FOLD_CHARS]  # one line longer than that is cut
    if shown == whole:
        return fenced(whole)
    left, chars = len(lines) - count, len(whole) - len(shown)
    note = f"{left} more lines ({chars:,} characters) left out" if left else f"{chars:,} more characters left out"
    return (f"<details><summary>{label}: {len(lines):,} lines, {len(whole):,} characters</summary>\n\n"
            f"{fenced(shown)}\n\n_({note}; the JSON export has all of it.)_\n\n</details>")


def _receipt_block(found: dict[str, Any]) -> str:
    """A turn's receipt as a quoted block: what it changed, and what it tried without changing anything."""
    lines = [f"> **Receipt.** {receipt.headline(found)}"]
    lines += [f"> - not changed: {entry.get('summary')}" for entry in found.get("unchanged") or []]
    return "\n".join(lines)


def _inline(text: str) -> bool:
    return "\n" not in text.strip() and len(text.strip()) <= INLINE_CHARS


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, indent=2)
    except (ValueError, RecursionError):  # not JSON, or nested past what json can walk: as it was sent
        return text


def _indented(block: str) -> str:
    return "\n".join(INDENT + line if line else "" for line in block.splitlines())


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())
