"""The AG-UI encoder of a run's stored events: the stream endpoint's other encoder of the one event pipeline.

Order: RUN_STARTED; each tool call as TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END and, when it
returns, TOOL_CALL_RESULT; the answer as TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT, TEXT_MESSAGE_END,
from the stored message only, so no event carries model text before the answer is checked; a CUSTOM
event `skilldesk.receipt` with the turn's receipt when it has one (what it changed, from its ledger); then
RUN_FINISHED (an `interrupt` outcome when proposals or calls wait for the user, who answers in the
next run) or RUN_ERROR with a coarse code (`REFUSED` after the stored generic refusal). Each event is
an `id:` line (the sequence number of the stored event it comes from, so a client resumes after it), an
`event:` line (its type) and a `data:` line of camelCase JSON without unset fields, written by
ag-ui-protocol's encoder, LF line ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import RunFinishedInterruptOutcome
from ag_ui.core.types import Interrupt
from ag_ui.encoder import EventEncoder

from app.models import Message, RunEvent
from app.runtime.feeds import StoredEvent

RECEIPT = "receipt"
# The CUSTOM event that carries a turn's receipt, before RUN_FINISHED (or RUN_ERROR).
RECEIPT_EVENT = "skilldesk.receipt"
ERROR_CODES = {"failed": "RUN_FAILED", "unfinished": "RUN_UNFINISHED", "interrupted": "RUN_INTERRUPTED",
               "refused": "REFUSED"}
ERROR_MESSAGES = {"refused": "The answer broke an output rule; the conversation keeps the generic refusal."}
_encoder = EventEncoder()


def frame(event: BaseEvent, seq: int) -> str:
    """Frame one AG-UI event: the stored event's sequence number as its id, its type as the event name."""
    return f"id: {seq}\nevent: {event.type.value}\n{_encoder.encode(event)}"


def started(thread_id: str, run_id: str) -> BaseEvent:
    return RunStartedEvent(threadId=thread_id, runId=run_id)


def tool_events(event: RunEvent | StoredEvent) -> Iterator[BaseEvent]:
    """The AG-UI events of one stored tool step event (nothing for text: it waits for the checked answer)."""
    data: dict[str, Any] = event.data or {}
    if event.type == "tool_call":
        yield ToolCallStartEvent(toolCallId=data["id"], toolCallName=data["name"])
        if data.get("args"):
            yield ToolCallArgsEvent(toolCallId=data["id"], delta=data["args"])
        yield ToolCallEndEvent(toolCallId=data["id"])
    elif event.type == "tool_result":
        yield ToolCallResultEvent(messageId=f"tool-{data['id']}", toolCallId=data["id"], role="tool",
                                  content=data.get("result") or "")


def ending(thread_id: str, run_id: str, message: Message | None) -> Iterator[BaseEvent]:
    """The checked answer, then how the run ended."""
    meta = (message.meta or {}) if message is not None else {}
    status = meta.get("status", "failed")
    if message is not None and message.content:
        message_id = f"message-{message.id}"
        yield TextMessageStartEvent(messageId=message_id, role="assistant")
        yield TextMessageContentEvent(messageId=message_id, delta=message.content)
        yield TextMessageEndEvent(messageId=message_id)
    if isinstance(meta.get(RECEIPT), dict):  # what the turn changed, from its ledger (app/runtime/receipt.py)
        yield CustomEvent(name=RECEIPT_EVENT, value=meta[RECEIPT])
    if status in ERROR_CODES:
        # The code is coarse and is not stored: the message carries only its status.
        yield RunErrorEvent(message=ERROR_MESSAGES.get(
            status, "The run did not finish; the conversation keeps what it produced."), code=ERROR_CODES[status])
        return
    interrupts = [Interrupt(id=p["id"], reason="proposal", message=p.get("reason")) for p in meta.get("proposals", [])]
    interrupts += [Interrupt(id=f"call-{call.get('id')}", reason=str(call.get("kind") or "approval"),
                             message=call.get("tool"), expires_at=call.get("expires_at"))
                   for call in meta.get("pending", []) if isinstance(call, dict)]
    if interrupts:
        yield RunFinishedEvent(threadId=thread_id, runId=run_id, outcome=RunFinishedInterruptOutcome(
            interrupts=interrupts))
    else:
        yield RunFinishedEvent(threadId=thread_id, runId=run_id)
