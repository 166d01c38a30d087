"""The AG-UI encoder of a run's stored events: the stream endpoint's other encoder of the one event pipeline.

Order: RUN_STARTED; each tool call as TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END and, when it
returns, TOOL_CALL_RESULT; the answer as TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT, TEXT_MESSAGE_END,
from the stored message only, so no event carries model text before the answer is checked; a CUSTOM
event `skilldesk.receipt` with the turn's receipt when it has one (what it changed, from its ledger); then
RUN_FINISHED (an `interrupt` outcome when proposals or calls wait for the user, who answers in the
next run) or RUN_ERROR with a coarse code (`REFUSED` after the stored generic refusal, `RUN_CANCELLED`
after Stop: a run that did not complete never ends as a success). Each event is an `id:` line (its own
number: see `event_id`), an `event:` line (its type) and a `data:` line of camelCase JSON without unset
fields, written by ag-ui-protocol's encoder, LF line ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
               "cancelled": "RUN_CANCELLED", "refused": "REFUSED"}
ERROR_MESSAGES = {"refused": "The answer broke an output rule; the conversation keeps the generic refusal.",
                  "cancelled": "The run was stopped before it finished; the conversation keeps what it produced."}
# Ids: a stored event's sequence number times SLOTS plus the slot of the AG-UI event among the ones it
# makes (RUN_STARTED is slot 1 of sequence number 0). So every id is unique and increasing, an event left
# out (no arguments, no text, no receipt) moves no other one, and a resume after any id is exact.
SLOTS = 10
STARTED_ID = 1
_encoder = EventEncoder()


def event_id(seq: int, slot: int) -> int:
    """Return the id of the AG-UI event in `slot` of the stored event numbered `seq`."""
    return seq * SLOTS + slot


def stored_after(after: int) -> int:
    """Return the sequence number to read stored events after, for a resume after an AG-UI event id.

    The stored event the id came from is read again: the events it makes after that id are still to send.
    """
    return max(after // SLOTS - 1, 0)


def frame(event: BaseEvent, number: int) -> str:
    """Frame one AG-UI event: its id, its type as the event name, its JSON."""
    return f"id: {number}\nevent: {event.type.value}\n{_encoder.encode(event)}"


def started(thread_id: str, run_id: str) -> BaseEvent:
    return RunStartedEvent(threadId=thread_id, runId=run_id)


def frames(stored: Iterable[RunEvent | StoredEvent], thread_id: str, run_id: str, message: Message | None,
           after: int) -> list[str]:
    """Frame the AG-UI events the stored events make whose ids come after `after` (the end's from `message`)."""
    numbered: list[tuple[int, BaseEvent]] = []
    for event in stored:
        made = ending(thread_id, run_id, message) if event.type == "end" else tool_events(event)
        numbered += [(event_id(event.seq, slot), item) for slot, item in made]
    return [frame(item, number) for number, item in numbered if number > after]


def tool_events(event: RunEvent | StoredEvent) -> Iterator[tuple[int, BaseEvent]]:
    """The slotted AG-UI events of one stored tool step event (nothing for text: it waits for the checked answer)."""
    data: dict[str, Any] = event.data or {}
    if event.type == "tool_call":
        yield 1, ToolCallStartEvent(toolCallId=data["id"], toolCallName=data["name"])
        if data.get("args"):
            yield 2, ToolCallArgsEvent(toolCallId=data["id"], delta=data["args"])
        yield 3, ToolCallEndEvent(toolCallId=data["id"])
    elif event.type == "tool_result":
        yield 1, ToolCallResultEvent(messageId=f"tool-{data['id']}", toolCallId=data["id"], role="tool",
                                     content=data.get("result") or "")


def ending(thread_id: str, run_id: str, message: Message | None) -> Iterator[tuple[int, BaseEvent]]:
    """The checked answer, then how the run ended, each event in its slot."""
    meta = (message.meta or {}) if message is not None else {}
    status = meta.get("status", "failed")
    if message is not None and message.content:
        message_id = f"message-{message.id}"
        yield 1, TextMessageStartEvent(messageId=message_id, role="assistant")
        yield 2, TextMessageContentEvent(messageId=message_id, delta=message.content)
        yield 3, TextMessageEndEvent(messageId=message_id)
    if isinstance(meta.get(RECEIPT), dict):  # what the turn changed, from its ledger (app/runtime/receipt.py)
        yield 4, CustomEvent(name=RECEIPT_EVENT, value=meta[RECEIPT])
    yield 5, _end(thread_id, run_id, status, meta)


def _end(thread_id: str, run_id: str, status: str, meta: dict[str, Any]) -> BaseEvent:
    if status in ERROR_CODES:
        # The code is coarse and is not stored: the message carries only its status.
        return RunErrorEvent(message=ERROR_MESSAGES.get(
            status, "The run did not finish; the conversation keeps what it produced."), code=ERROR_CODES[status])
    interrupts = [Interrupt(id=p["id"], reason="proposal", message=p.get("reason")) for p in meta.get("proposals", [])]
    interrupts += [Interrupt(id=f"call-{call.get('id')}", reason=str(call.get("kind") or "approval"),
                             message=call.get("tool"), expires_at=call.get("expires_at"))
                   for call in meta.get("pending", []) if isinstance(call, dict)]
    if interrupts:
        return RunFinishedEvent(threadId=thread_id, runId=run_id, outcome=RunFinishedInterruptOutcome(
            interrupts=interrupts))
    return RunFinishedEvent(threadId=thread_id, runId=run_id)
