"""Conversation titles: 2 to 5 plain words from the title role, or the first words of the question.

Every path follows the same rules: plain text (no markup), at most 40 characters cut at a word
boundary, no ending punctuation. A chat whose first turn brought no answer (it failed, was stopped,
was refused, or ended on a card) is titled from its question without asking a model, and so is one
whose generated title the output guardrails refuse.

The log records the conversation id, whether the title was generated and its length, never its text.
"""

from __future__ import annotations

import logging
import re

from flask import current_app
from pydantic import BaseModel, Field, field_validator
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.exceptions import AgentRunError, UserError

from app.extensions import db, jobs
from app.models import Agent, Conversation, Message
from app.policy.bidi import BIDI_CONTROL
from app.runtime import loop
from app.runtime.guardrails import OutputGuardrail
from app.runtime.model_choice import model_spec_for
from app.runtime.plain_text import TRAILING, first_words, plain_text
from app.runtime.profiles import profile_for
from app.runtime.providers import ModelUnavailable, build_model

log = logging.getLogger(__name__)

MAX_CHARS = 40
INSTRUCTIONS = (
    "Write a title for this conversation: 2 to 5 words, at most 40 characters, plain text, "
    "no quotes, no markdown, no line break, no ending punctuation. Use the language of the question."
)


class GeneratedTitle(BaseModel):
    title: str = Field(description="2 to 5 words, at most 40 characters, plain text")

    @field_validator("title")
    @classmethod
    def plain_short_title(cls, value: str) -> str:
        problems = []
        words = value.split()
        if not 2 <= len(words) <= 5:
            problems.append(f"use 2 to 5 words (this has {len(words)})")
        if len(value) > MAX_CHARS:
            problems.append(f"use at most {MAX_CHARS} characters (this has {len(value)})")
        if "\n" in value or "\r" in value:
            problems.append("do not break the line")
        if BIDI_CONTROL.search(value):
            problems.append("do not use bidirectional control characters")
        if re.search(r"[\"'“”‘’`]", value):
            problems.append("do not use quotes")
        if re.search(r"[*_#\[\]<>|~]", value) or plain_text(value) != " ".join(value.split()):
            problems.append("do not use markdown")
        if value.rstrip() != value or value[-1:] in TRAILING:
            problems.append("do not end with punctuation")
        if problems:
            raise ValueError("; ".join(problems))
        return value


def fallback_title(question: str) -> str:
    """Return the first words of the question as plain text, cut at a word boundary to 40 characters."""
    return first_words(BIDI_CONTROL.sub("", plain_text(question)), MAX_CHARS) or "New chat"  # a message may hold them


async def ask_title_model(spec, question: str, answer: str) -> str:
    """Ask the title role for a structured title; one retry with what was wrong."""
    agent = PydanticAgent(build_model(spec), instructions=INSTRUCTIONS, output_type=GeneratedTitle,
                          model_settings=profile_for(spec).settings("title"), retries={"output": 1})
    # The question comes first and alone: the title describes it, the answer only helps.
    prompt = f"{question[:2000]}\n\n---\nThe answer it got:\n{answer[:2000]}"
    result = await agent.run(prompt)
    return result.output.title


@jobs.task()
def generate_title(conversation_id: int) -> str | None:
    """Give a conversation its title after its first turn, only while it has none."""
    conversation = db.session.get(Conversation, conversation_id)
    if conversation is None or conversation.title is not None or conversation.deleted_at is not None:
        return None
    question = db.session.scalar(db.select(Message.content).where(
        Message.conversation_id == conversation_id, Message.role == "user").order_by(Message.id).limit(1))
    first_answer = db.session.execute(db.select(Message.content, Message.meta).where(
        Message.conversation_id == conversation_id, Message.role == "assistant")
        .order_by(Message.id).limit(1)).first()
    if not question:
        return None
    agent = db.session.get(Agent, conversation.agent_id) if conversation.agent_id else None
    title, generated = fallback_title(question), False
    # Without an answer (the turn failed, was stopped or refused, or ended on a card) the question is the title.
    answered = first_answer is not None and (first_answer.meta or {}).get("status") == "succeeded" \
        and bool(first_answer.content.strip())
    if answered:
        try:
            spec = model_spec_for(agent) if agent else None
            if spec is None:
                raise ModelUnavailable("no agent")
            asked = loop.run(ask_title_model(spec, question, first_answer.content),
                             timeout=current_app.config.get("TITLE_TIMEOUT_SECONDS", 60))
            # A title the output guardrails refuse is never written (five words hold no instructions to leak).
            if OutputGuardrail(conversation.user_id, "").broken_rule(asked) is None:
                title, generated = asked, True
        except (AgentRunError, UserError, ModelUnavailable, TimeoutError, ValueError) as error:
            log.info("title of conversation %s falls back: %s", conversation_id, type(error).__name__)
    # Written only while still empty: a title given at creation or by a rename is never overwritten.
    updated = db.session.execute(
        db.update(Conversation).where(Conversation.id == conversation_id, Conversation.title.is_(None))
        .values(title=title)
    ).rowcount
    db.session.commit()
    log.info("conversation %s title generated=%s length=%s written=%s", conversation_id, generated,
             len(title), bool(updated))
    return title if updated else None
