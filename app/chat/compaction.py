"""Compaction around the runtime: the job after a reply, `/compact`, the notice and the record.

The transcript is never touched: only the conversation's model context is replaced, and only if
no turn changed it while the summary was being written.
"""

from __future__ import annotations

import logging

from pydantic_ai.messages import ModelMessagesTypeAdapter

from app.chat.purge import conversation_purgers
from app.extensions import db, jobs
from app.models import Agent, CompactionRecord, Conversation, Message
from app.runtime import loop
from app.runtime.compaction import CompactionResult
from app.runtime.execution import load_history, model_spec_for
from app.skills.compaction import Config, compact_conversation_context, skill, summary_spec_for

log = logging.getLogger(__name__)

COMMAND = "/compact"


def compaction_config(agent: Agent | None) -> Config | None:
    """Return the agent's compaction settings, or None when it has no compaction skill."""
    for entry in (agent.skills or []) if agent else []:
        if entry.get("name") == skill.name:
            return skill.parse(entry.get("config"))
    return None


def parse_command(text: str) -> str | None:
    """Return the instructions of a `/compact [instructions]` message, or None for other messages."""
    stripped = text.strip()
    if stripped == COMMAND or stripped.startswith(COMMAND + " ") or stripped.startswith(COMMAND + "\n"):
        return stripped[len(COMMAND):].strip()
    return None


def compact_stored_context(conversation: Conversation, trigger: str, instructions: str | None = None,
                           force: bool = False) -> CompactionResult | None:
    """Compact a conversation's stored model context; returns what was done, or None without the skill."""
    config = compaction_config(conversation.agent)
    if config is None:
        return None
    before = conversation.model_context
    messages = load_history(conversation)
    spec = summary_spec_for(config, model_spec_for(conversation.agent, conversation))
    result = loop.run(compact_conversation_context(messages, config, spec, instructions, force=force),
                      timeout=spec.timeout * 3 + 30)
    if result.changed:
        after = ModelMessagesTypeAdapter.dump_json(result.messages).decode()
        # Compare-and-swap: a turn that ran meanwhile wins, and this compaction is dropped.
        swapped = db.session.execute(
            db.update(Conversation).where(Conversation.id == conversation.id,
                                          Conversation.model_context == before)
            .values(model_context=after)
        ).rowcount
        if not swapped:
            db.session.rollback()
            log.info("compaction of conversation %s dropped: the context changed meanwhile", conversation.id)
            return result
        record_outcome(conversation.id, config, result, trigger)
    elif result.failed:  # said, never hidden: the context stays as it was
        record_outcome(conversation.id, config, result, trigger)
    db.session.commit()
    log.info("conversation %s compaction (%s): changed=%s failed=%s tokens %s -> %s", conversation.id, trigger,
             result.changed, result.failed, result.tokens_before, result.tokens_after)
    return result


def record_outcome(conversation_id: int, config: Config, result: CompactionResult, trigger: str,
                   run_id: str | None = None) -> Message | None:
    """Add the notice and the record a compaction asks for to the session; the caller commits.

    Returns the notice (None when the skill shows none); `run_id` is the run that compacted, if any.
    """
    notice = None
    if config.show_notice:
        notice = Message(conversation_id=conversation_id, role="notice", content=result.notice(),
                         meta={"compaction": trigger}, run_id=run_id)
        db.session.add(notice)
    if config.keep_record and (result.summarized or result.error):
        removed = ModelMessagesTypeAdapter.dump_json(result.removed).decode() if result.removed else None
        db.session.add(CompactionRecord(
            conversation_id=conversation_id, trigger=trigger, tokens_before=result.tokens_before,
            tokens_after=result.tokens_after, cleared_count=result.cleared_count, summary=result.summary,
            removed=removed, error=result.error))
    return notice


@jobs.task()
def compact_after_reply(conversation_id: int) -> None:
    """Compact a conversation above "Compact above", after a reply, so no user waits for it."""
    conversation = db.session.get(Conversation, conversation_id)
    if conversation is None or conversation.deleted_at is not None or conversation.agent is None:
        return
    compact_stored_context(conversation, "threshold")


def _purge_records(conversation: Conversation) -> None:
    db.session.execute(db.delete(CompactionRecord).where(CompactionRecord.conversation_id == conversation.id))


conversation_purgers.append(_purge_records)
