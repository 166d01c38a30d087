"""Subagent: another agent becomes a tool, either to delegate a request to or to hand the chat over to.

Delegation runs the other agent (with its own model and skills) on a request and returns its answer
to the caller; its token usage counts towards the caller's run. A hand-over records that the other
agent carries on the conversation: the next turn runs on it, with the configured handover prompt.
Access is checked again for the acting user at every hop, from the database, not from the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ToolFailed, UsageLimitExceeded
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import UsageLimits

from app.extensions import db
from app.models import Agent, Conversation, Message, User
from app.runtime.contract import HEADER, NOTICE, AgentSpec, Person, Skill, SkillContext, build_agent, model_spec_for

# Keys of SkillContext.extras that travel down a chain of delegations.
DEPTH = "subagent_depth"
CHAIN = "subagent_chain"
# However the admins set each hop, a chain never goes deeper than this.
HARD_MAX_DEPTH = 5
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")

DEFAULT_HANDOVER_PROMPT = (
    "You are taking over this conversation from another agent. Read the conversation so far, "
    "then carry on helping the user without asking again for what they already said."
)


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    agent: str = Field(..., max_length=80, title="Agent")
    """The other agent, by name or id. Users reach it only if their role may use that agent."""

    mode: Literal["delegate", "handover"] = Field("delegate", title="Mode")
    """delegate: the other agent answers a request and its answer comes back to this agent.
    handover: the other agent carries on the chat from the user's next message."""

    tool_name: str = Field("", max_length=64, title="Tool name")
    """Optional. The tool's name as the model sees it; by default ask_<agent> or hand_over_to_<agent>."""

    description: str = Field("", max_length=1_000, title="Description",
                             json_schema_extra={"widget": "textarea"})
    """Optional. When the model should use the tool; by default the other agent's own description."""

    handover_prompt: str = Field(DEFAULT_HANDOVER_PROMPT, max_length=4_000, title="Handover prompt",
                                 json_schema_extra={"widget": "textarea"})
    """Hand-over only: what the other agent is told when it takes over the conversation."""

    max_depth: int = Field(2, ge=1, le=HARD_MAX_DEPTH, title="Maximum depth")
    """How many agents deep a request may travel (this agent asks another, which asks a third, ...)."""

    @field_validator("agent")
    @classmethod
    def strip_agent(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Name the other agent (its name or id).")
        return value.strip()

    @field_validator("tool_name")
    @classmethod
    def valid_tool_name(cls, value: str) -> str:
        value = value.strip()
        if value and not TOOL_NAME.match(value):
            raise ValueError("Start with a letter; use letters, digits, _ or - (at most 64).")
        return value


@dataclass(frozen=True)
class Hop:
    """The agent a tool reaches, as the acting user may use it now."""

    spec: AgentSpec
    person: Person
    depth: int
    chain: tuple[int, ...]


def find_agent(reference: str) -> Agent | None:
    """Return the agent an admin named by id or name."""
    if reference.isdigit():
        return db.session.get(Agent, int(reference))
    return db.session.scalar(db.select(Agent).where(Agent.name == reference))


def slug(text: str) -> str:
    """Return text as a tool-name fragment: lowercase letters, digits and underscores."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40] or "agent"


def reach(skill_ctx: SkillContext, reference: str, max_depth: int) -> Hop:
    """Check that the acting user may use the agent now and the chain may grow; else raise ToolFailed."""
    depth = int(skill_ctx.extras.get(DEPTH, 0)) + 1
    chain = tuple(skill_ctx.extras.get(CHAIN, ())) or ((skill_ctx.agent_id,) if skill_ctx.agent_id else ())
    with skill_ctx.app_context():
        agent = find_agent(reference)
        if agent is None:
            raise ToolFailed(f"The agent {reference!r} does not exist (any more); tell the user.")
        user = db.session.get(User, skill_ctx.user_id) if skill_ctx.user_id is not None else None
        if user is None or not user.is_active or not agent.usable_by(user):
            raise ToolFailed(f"The user may not use the agent {agent.name!r}, so it cannot be asked or "
                             "handed over to. Carry on without it, or tell the user to ask an admin.")
        if depth > min(max_depth, HARD_MAX_DEPTH):
            raise ToolFailed(f"Not passed on to {agent.name!r}: the request is already {depth - 1} agents "
                             "deep, the most allowed here. Answer with what you have.")
        if agent.id in chain:
            raise ToolFailed(f"Not passed on to {agent.name!r}: it is already working on this request "
                             "higher up the chain. Answer with what you have.")
        return Hop(AgentSpec.of(agent, model_spec_for(agent)), Person.of(user), depth, (*chain, agent.id))


async def delegate(ctx: RunContext[Any], skill_ctx: SkillContext, hop: Hop, prompt: str) -> str:
    """Run the reached agent on a prompt, with its own skills, counting its usage into the caller's run."""
    built = build_agent(skill_ctx.app, hop.spec, hop.person, skill_ctx.conversation_id, skill_ctx.run_id,
                        extras={DEPTH: hop.depth, CHAIN: hop.chain}, announce=skill_ctx.announce)
    # The usage object is the caller's, so the delegate's requests also count against the caller's cap.
    limits = UsageLimits(request_limit=ctx.usage.requests + max(1, hop.spec.max_requests))
    try:
        result = await built.agent.run(prompt, usage=ctx.usage, usage_limits=limits)
    except UsageLimitExceeded as error:
        raise ToolFailed(f"{hop.spec.name} stopped after {hop.spec.max_requests} model requests, its limit, "
                         "without an answer.") from error
    return str(result.output)


def hand_over(skill_ctx: SkillContext, hop: Hop, reason: str, handover_prompt: str) -> str:
    """Make the reached agent the conversation's agent from the next turn on; return the tool's answer."""
    if hop.depth > 1:
        raise ToolFailed("Only the agent the user is chatting with can hand the conversation over.")
    if skill_ctx.conversation_id is None:
        raise ToolFailed("There is no conversation to hand over here (this is a preview).")
    name = hop.spec.name
    with skill_ctx.app_context():
        conversation = db.session.get(Conversation, skill_ctx.conversation_id)
        if conversation is None or conversation.user_id != skill_ctx.user_id or conversation.deleted_at:
            raise ToolFailed("The conversation is gone; nothing was handed over.")
        previous = conversation.agent.name if conversation.agent else "The previous agent"
        conversation.agent_id = hop.spec.id
        # The picked model was allowed for the previous agent, not necessarily for this one.
        conversation.model_config_id = None
        notice = Message(
            conversation_id=conversation.id, role="notice", run_id=skill_ctx.run_id,
            content=f"{previous} handed the conversation over to {name}.",
            meta={"handover": {"from_agent_id": skill_ctx.agent_id, "to_agent_id": hop.spec.id,
                               "reason": reason[:500], "prompt": handover_prompt}},
        )
        db.session.add(notice)
        db.session.commit()
        notice_id = notice.id
    skill_ctx.tell_page(NOTICE, {"message_id": notice_id})
    skill_ctx.tell_page(HEADER, {})
    # The result stays in the model context, so the next agent reads the handover prompt on its first turn.
    return (f"Handed over: from the user's next message on, {name} answers in this conversation. "
            f"Tell the user so in one short sentence and stop.\n\n"
            f"Handover prompt for {name}: {handover_prompt}\nReason given: {reason}")


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    with ctx.app_context():
        target = find_agent(config.agent)
        name = target.name if target else config.agent
        about = config.description or (target.description if target else "") or f"The agent {name}."
    toolset = FunctionToolset()

    if config.mode == "delegate":
        async def ask(run: RunContext[Any], request: str) -> str:
            """Ask the other agent.

            Args:
                request: What to ask, with every detail the other agent needs to answer.
            """
            hop = reach(ctx, config.agent, config.max_depth)
            return await delegate(run, ctx, hop, request)

        toolset.add_function(
            ask, takes_ctx=True, name=config.tool_name or f"ask_{slug(name)}",
            description=(f"Ask the agent {name} and get its answer. {about} "
                         "It does not see this conversation: put everything it needs in the request."),
        )
    else:
        async def transfer(run: RunContext[Any], reason: str) -> str:
            """Hand the conversation over.

            Args:
                reason: Why the other agent should carry on, in one sentence.
            """
            hop = reach(ctx, config.agent, HARD_MAX_DEPTH)
            return hand_over(ctx, hop, reason, config.handover_prompt)

        toolset.add_function(
            transfer, takes_ctx=True, name=config.tool_name or f"hand_over_to_{slug(name)}",
            description=(f"Hand the conversation over to the agent {name}, which then carries on the chat "
                         f"with the user. {about} Give the reason in one sentence."),
        )
    return toolset


skill = Skill(name="subagent", title="Subagent", config=Config, build=build,
              description="Another agent as a tool: delegate a request to it, or hand the chat over to it.")
