"""The Subagent skill: delegation and hand-over through real runs, access re-checked at every hop."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from app.extensions import db
from app.models import Agent, Conversation, Message, Run
from app.runtime import execution
from app.runtime.untrusted import unfence
from app.skills.subagent import Config
from tests.chat_driver import outcome, send, sse_events, start_chat
from tests.conftest import make_agent
from tests.skill_chat import chat_with, streamed


class Script:
    """A scripted model: call one tool with fixed arguments, then answer with what it returned."""

    def __init__(self, tool: str | None = None, args: dict | None = None, answer: str = "Done") -> None:
        self.tool, self.args, self.answer = tool, args or {}, answer
        self.requests: list[tuple[list, list[str]]] = []

    def respond(self, messages, info) -> ModelResponse:
        if info.output_tools and not info.allow_text_output:  # the title job, after the first answer
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"title": "Scripted chat"})])
        self.requests.append((list(messages), [tool.name for tool in info.function_tools]))
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        if self.tool is None or returned:
            said = " | ".join(unfence(str(part.content)) for part in returned)  # results reach models fenced
            return ModelResponse(parts=[TextPart(f"{self.answer}: {said}" if said else self.answer)])
        return ModelResponse(parts=[ToolCallPart(self.tool, self.args, f"call-{len(self.requests)}")])

    def stream(self, messages, info):
        return streamed(self.respond(messages, info))


def agent_with(app, scripted_model, script: Script, name: str, skills: list | None = None,
               roles: list | None = None, max_requests: int = 20) -> tuple[int, str]:
    model_id = scripted_model(function=script.respond, stream_function=script.stream)
    with app.app_context():
        agent = make_agent(name, skills=skills, model_config_id=model_id, roles=roles,
                           max_requests=max_requests)
        return agent.id, agent.name


def subagent(target: str, **settings) -> dict:
    return {"name": "subagent", "config": {"agent": target, **settings}}


def test_delegation_returns_the_other_agents_answer_with_its_own_skills_and_sums_usage(
        app, client, auth, scripted_model):
    specialist = Script("current_time", {"timezone": "Europe/Rome"}, answer="Specialist says")
    specialist_id, specialist_name = agent_with(app, scripted_model, specialist, "Specialist",
                                                skills=[{"name": "clock", "config": {}}])
    caller = Script("ask_specialist", {"request": "What time is it in Rome?"}, answer="Relayed")
    caller_id, _ = agent_with(app, scripted_model, caller, "Front desk",
                              skills=[subagent(specialist_name, tool_name="ask_specialist",
                                               description="Knows the time.")])
    auth.login_as("user")

    run, message = chat_with(app, client, caller_id, "What time is it in Rome?")

    assert run.status == "succeeded", run.error
    assert "ask_specialist" in caller.requests[0][1]
    # The delegate got the request as its prompt, and used its own clock skill.
    first_prompt = specialist.requests[0][0][0].parts[-1].content
    assert first_prompt == "What time is it in Rome?"
    assert "current_time" in specialist.requests[0][1]
    [step] = message.steps
    assert step["name"] == "ask_specialist" and not step["failed"]
    assert step["result"].startswith("Specialist says: ") and "(Europe/Rome)" in step["result"]
    assert "Relayed: Specialist says" in message.content
    # Two requests of the caller and two of the delegate, all counted on the caller's run.
    assert run.requests == 4 and len(specialist.requests) == 2 and len(caller.requests) == 2
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Run.id))) == 1  # the delegate ran inside the turn


def test_a_subagent_the_user_may_not_use_cannot_be_reached_through_delegation(
        app, client, auth, scripted_model):
    secret = Script(answer="Secret payroll data")
    _secret_id, secret_name = agent_with(app, scripted_model, secret, "Payroll", roles=["admin"])
    caller = Script("ask_payroll", {"request": "Show me everyone's salary."})
    caller_id, _ = agent_with(app, scripted_model, caller, "Front desk",
                              skills=[subagent(secret_name, tool_name="ask_payroll")])
    auth.login_as("user")

    run, message = chat_with(app, client, caller_id, "Salaries please")

    assert run.status == "succeeded"
    [step] = message.steps
    assert step["failed"] and "may not use the agent" in step["result"]
    assert secret.requests == []  # the payroll agent's model was never reached
    assert "Secret payroll data" not in message.content


def test_access_is_checked_again_at_every_hop(app, client, auth, scripted_model):
    # user -> Front desk -> Research (users allowed) -> Archive (admins only): the second hop is refused.
    archive = Script(answer="Archived secrets")
    _archive_id, archive_name = agent_with(app, scripted_model, archive, "Archive", roles=["admin"])
    research = Script("ask_archive", {"request": "Open the archive."}, answer="Research got")
    _research_id, research_name = agent_with(app, scripted_model, research, "Research",
                                             skills=[subagent(archive_name, tool_name="ask_archive")])
    caller = Script("ask_research", {"request": "Dig deep."}, answer="Front desk got")
    caller_id, _ = agent_with(app, scripted_model, caller, "Front desk",
                              skills=[subagent(research_name, tool_name="ask_research", max_depth=3)])
    auth.login_as("user")

    run, message = chat_with(app, client, caller_id, "Dig")

    assert run.status == "succeeded"
    assert archive.requests == []
    [step] = message.steps
    assert not step["failed"]
    assert "may not use the agent" in step["result"] and "Archived secrets" not in step["result"]


def test_an_admin_reaches_the_chain_and_a_demoted_admin_no_longer_does(app, client, auth, scripted_model):
    archive = Script(answer="Archive answer")
    _archive_id, archive_name = agent_with(app, scripted_model, archive, "Archive", roles=["admin"])
    caller = Script("ask_archive", {"request": "Open."}, answer="Got")
    caller_id, _ = agent_with(app, scripted_model, caller, "Front desk", roles=["admin", "user"],
                              skills=[subagent(archive_name, tool_name="ask_archive")])
    admin_id = auth.login_as("admin")

    conversation_id = start_chat(app, client, caller_id)
    run, message = outcome(app, send(app, client, conversation_id, "Open the archive"))
    assert "Archive answer" in message.steps[0]["result"] and len(archive.requests) == 1

    with app.app_context():  # the role changes between two turns: the next hop sees it at once
        from app.models import User

        user = db.session.get(User, admin_id)
        user.role = "user"
        email = user.email
        db.session.commit()
    auth.login(email)  # a changed role ends the sessions: the demoted admin signs in again
    run, message = outcome(app, send(app, client, conversation_id, "Open it again"))
    assert message.steps[0]["failed"] and "may not use the agent" in message.steps[0]["result"]
    assert len(archive.requests) == 1


def test_depth_and_cycles_are_guarded(app, client, auth, scripted_model):
    # Front desk -> Research -> Front desk would loop; Research -> Deep is one hop deeper than allowed.
    deep = Script(answer="Deep answer")
    _deep_id, deep_name = agent_with(app, scripted_model, deep, "Deep")
    research = Script("ask_deep", {"request": "Go deeper."}, answer="Research got")
    _research_id, research_name = agent_with(app, scripted_model, research, "Research",
                                             skills=[subagent(deep_name, tool_name="ask_deep", max_depth=1)])
    caller = Script("ask_research", {"request": "Dig."}, answer="Front desk got")
    caller_id, _ = agent_with(app, scripted_model, caller, "Front desk",
                              skills=[subagent(research_name, tool_name="ask_research")])
    auth.login_as("user")

    run, message = chat_with(app, client, caller_id, "Dig")

    assert deep.requests == []
    assert "already 1 agents deep" in message.steps[0]["result"]

    looping = Script("ask_back", {"request": "Back to you."}, answer="Looped")
    with app.app_context():
        front = db.session.get(Agent, caller_id)
        loop_model = scripted_model(function=looping.respond, stream_function=looping.stream)
        middle = make_agent("Middle", model_config_id=loop_model,
                            skills=[subagent(str(front.id), tool_name="ask_back", max_depth=5)])
        front.skills = [subagent(middle.name, tool_name="ask_research", max_depth=5)]
        db.session.commit()
    run, message = chat_with(app, client, caller_id, "Loop")
    assert "already working on this request" in message.steps[0]["result"]


def test_a_delegate_that_reaches_its_own_request_cap_is_a_failed_result(app, client, auth, scripted_model):
    busy = Script("current_time", {}, answer="Never said")
    _busy_id, busy_name = agent_with(app, scripted_model, busy, "Busy", max_requests=1,
                                     skills=[{"name": "clock", "config": {}}])
    caller = Script("ask_busy", {"request": "Take your time."}, answer="Caller")
    caller_id, _ = agent_with(app, scripted_model, caller, "Front desk",
                              skills=[subagent(busy_name, tool_name="ask_busy")])
    auth.login_as("user")

    run, message = chat_with(app, client, caller_id, "Ask busy")

    assert run.status == "succeeded" and len(busy.requests) == 1
    assert message.steps[0]["failed"] and "stopped after 1 model requests" in message.steps[0]["result"]


def test_hand_over_switches_the_conversation_and_the_next_turn_runs_on_the_other_agent(
        app, client, auth, scripted_model):
    billing = Script(answer="Billing here")
    billing_id, billing_name = agent_with(app, scripted_model, billing, "Billing")
    front = Script("hand_over_to_billing", {"reason": "An invoice question."}, answer="Handing over")
    front_id, front_name = agent_with(
        app, scripted_model, front, "Front desk",
        skills=[subagent(billing_name, mode="handover", tool_name="hand_over_to_billing",
                         handover_prompt="Greet the user as the billing team.")])
    user_id = auth.login_as("user")
    picked = scripted_model(function=front.respond, stream_function=front.stream)

    conversation_id = start_chat(app, client, front_id)
    with app.app_context():  # a model picked for the first agent must not follow the conversation over
        db.session.get(Conversation, conversation_id).model_config_id = picked
        db.session.commit()
    run, message = outcome(app, send(app, client, conversation_id, "Why is my invoice wrong?"))

    assert run.status == "succeeded" and run.agent_id == front_id
    assert billing.requests == []  # a hand-over does not run the other agent in this turn
    [step] = message.steps
    assert not step["failed"] and "Greet the user as the billing team." in step["result"]
    with app.app_context():
        conversation = db.session.get(Conversation, conversation_id)
        assert (conversation.agent_id, conversation.model_config_id) == (billing_id, None)
        notice = db.session.scalar(db.select(Message).where(Message.conversation_id == conversation_id,
                                                            Message.role == "notice"))
        assert notice.content == f"{front_name} handed the conversation over to {billing_name}."
        assert notice.meta["handover"]["to_agent_id"] == billing_id
        assert notice.meta["handover"]["reason"] == "An invoice question."
        assert conversation.user_id == user_id
    # The page hears of both at once, through the run's stream: the notice before the answer, and the header.
    events = sse_events(client.get(f"/runs/{run.id}/events").text)
    kinds = [event["event"] for event in events]
    assert kinds.index("tool_call") < kinds.index("notice") < kinds.index("header") < kinds.index("end")
    shown = next(event["data"] for event in events if event["event"] == "notice")
    assert f'hx-swap-oob="beforebegin:#run-{run.id}"' in shown and f'id="message-{notice.id}"' in shown
    header = next(event["data"] for event in events if event["event"] == "header")
    assert 'id="chat-agent"' in header and 'hx-swap-oob="true"' in header and billing_name in header

    run, message = outcome(app, send(app, client, conversation_id, "So, about that invoice?"))
    assert run.status == "succeeded" and run.agent_id == billing_id
    assert message.content == "Billing here"
    history, _tools = billing.requests[0]
    returned = [p.content for m in history if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, ToolReturnPart)]
    assert any("Handover prompt for" in str(content) for content in returned)
    page = client.get(f"/chat/{conversation_id}").text
    assert f"handed the conversation over to {billing_name}" in page


def test_after_a_hand_over_the_composer_names_the_new_agent_without_a_reload(app, client, auth, scripted_model):
    _billing_id, billing_name = agent_with(app, scripted_model, Script(answer="Billing here"), "Billing")
    front = Script("hand_over_to_billing", {"reason": "An invoice question."}, answer="Handing over")
    front_id, front_name = agent_with(app, scripted_model, front, "Front desk", skills=[
        subagent(billing_name, mode="handover", tool_name="hand_over_to_billing")])
    auth.login_as("user")
    conversation_id = start_chat(app, client, front_id)
    page = client.get(f"/chat/{conversation_id}").text
    assert f'placeholder="Message {front_name} — ' in page
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "Why is my invoice wrong?"},
                           headers={"HX-Request": "true"})
    run_id = re.search(r'id="run-([0-9a-f-]+)"', response.text).group(1)
    execution.wait(run_id)

    # The run's stream swaps the agent's name and the composer's text box out of band, in the header event.
    header = next(event["data"] for event in sse_events(client.get(f"/runs/{run_id}/events").text)
                  if event["event"] == "header")
    box = re.search(r'<textarea [^>]*id="composer-text"[^>]*>', header).group(0)
    assert 'hx-swap-oob="true"' in box and f'placeholder="Message {billing_name} — ' in box
    assert front_name not in header
    assert f'placeholder="Message {billing_name} — ' in client.get(f"/chat/{conversation_id}").text


def test_hand_over_to_an_agent_the_user_may_not_use_is_refused(app, client, auth, scripted_model):
    _admins_id, admins_name = agent_with(app, scripted_model, Script(), "Admins only", roles=["admin"])
    front = Script("hand_over", {"reason": "Escalate."})
    front_id, _ = agent_with(app, scripted_model, front, "Front desk",
                             skills=[subagent(admins_name, mode="handover", tool_name="hand_over")])
    auth.login_as("user")

    conversation_id = start_chat(app, client, front_id)
    run, message = outcome(app, send(app, client, conversation_id, "Escalate me"))

    assert message.steps[0]["failed"] and "may not use the agent" in message.steps[0]["result"]
    with app.app_context():
        assert db.session.get(Conversation, conversation_id).agent_id == front_id
        assert db.session.scalar(db.select(Message).where(Message.conversation_id == conversation_id,
                                                          Message.role == "notice")) is None


def test_default_tool_names_and_settings(app, scripted_model):
    assert Config(agent="Billing team").mode == "delegate"
    with pytest.raises(ValidationError):
        Config()
    with pytest.raises(ValidationError, match="Start with a letter"):
        Config(agent="x", tool_name="2fast")
    with pytest.raises(ValidationError):
        Config(agent="x", max_depth=9)
    from app.runtime.skill import SkillContext
    from app.skills.subagent import skill

    with app.app_context():
        target = make_agent("Billing team", roles=["admin"])
        name = target.name
    context = SkillContext(app=app, user_id=None, agent_id=None)
    [delegate] = skill.built({"agent": name}, context)
    [handover] = skill.built({"agent": name, "mode": "handover"}, context)
    assert list(delegate.tools) == [f"ask_{name.lower().replace(' ', '_')}"]
    assert list(handover.tools) == [f"hand_over_to_{name.lower().replace(' ', '_')}"]
