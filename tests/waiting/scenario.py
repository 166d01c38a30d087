"""A records skill behind tool approval, run by a webhook trigger or in a chat: the waiting runs these tests drive."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall
from pydantic_ai.toolsets import FunctionToolset

from app.extensions import db
from app.models import PendingCall, Run, Trigger
from app.models.tables import new_hook_token
from app.runtime import execution
from app.runtime.skill import Skill
from app.runtime.untrusted import unfence
from tests.chat_driver import chat_model
from tests.conftest import make_agent, make_user


def records_skill(deleted: list[int]) -> Skill:
    """delete_record(record_id) appends to `deleted`: the test sees whether the tool ran."""

    class Settings(BaseModel):
        pass

    def build(config, ctx):
        toolset = FunctionToolset()

        @toolset.tool_plain
        def delete_record(record_id: int) -> str:
            """Delete a record."""
            deleted.append(record_id)
            return f"Record {record_id} deleted."

        return toolset

    return Skill(name="records", title="Records", config=Settings, build=build)


class Deleter:
    """Deletes the records the latest prompt names ("delete 7", "delete 1 then 2": one call after the
    other), then reports what its tools returned since that prompt."""

    async def __call__(self, messages, info):
        start = max(index for index, message in enumerate(messages)
                    if any(isinstance(part, UserPromptPart) for part in getattr(message, "parts", [])))
        prompt = next(str(part.content) for part in messages[start].parts if isinstance(part, UserPromptPart))
        wanted = [int(n) for n in re.findall(r"\d+", prompt)] if "delete" in prompt else []
        returned = [part for message in messages[start:] for part in getattr(message, "parts", [])
                    if isinstance(part, ToolReturnPart)]
        if len(returned) < len(wanted):
            number = wanted[len(returned)]
            yield {0: DeltaToolCall(name="delete_record", json_args=json.dumps({"record_id": number}),
                                    tool_call_id=f"del-{number}-{len(messages)}")}
            return
        yield " | ".join(f"{r.tool_name}: {unfence(r.model_response_str())}" for r in returned) or "Nothing to do."


def approval_agent(app, scripted_model, deleted: list[int], **agent_fields) -> int:
    """An agent whose delete_record waits for approval; returns its id."""
    app.extensions["skills"]["records"] = records_skill(deleted)
    with app.app_context():
        return make_agent("Clerk", model_config_id=chat_model(scripted_model, Deleter()), skills=[
            {"name": "records", "config": {}}, {"name": "tool_approval", "config": {"tools": ["delete_*"]}},
        ], **agent_fields).id


def webhook_trigger(app, agent_id: int, run_as_id: int | None = None, owner_id: int | None = None,
                    **fields) -> tuple[int, str]:
    """A webhook trigger of the agent that runs as a new user (unless given); returns (its id, its URL path)."""
    with app.app_context():
        run_as_id = run_as_id or make_user("user").id
        trigger = Trigger(name=fields.pop("name", "Cleanup hook"), kind="webhook", agent_id=agent_id,
                          run_as_id=run_as_id, owner_id=owner_id, prompt="delete {{ body.record }}",
                          token=new_hook_token(), **fields)
        db.session.add(trigger)
        db.session.commit()
        return trigger.id, f"/hooks/{trigger.token}"


def fire(app, client, path: str, record: int = 7) -> Run:
    """Post the webhook and wait for its run to end (waiting, here); return the run, detached."""
    response = client.post(path, json={"record": record})
    assert response.status_code == 202, response.text
    run_id = response.json["run"]
    execution.wait(run_id)
    return stored_run(app, run_id)


def stored_run(app, run_id: str) -> Run:
    with app.app_context():
        run = db.session.get(Run, run_id)
        db.session.expunge(run)
        return run


def waiting_call(app, run_id: str) -> PendingCall:
    """The one call the run left waiting, detached."""
    with app.app_context():
        [call] = db.session.scalars(db.select(PendingCall).where(PendingCall.run_id == run_id))
        db.session.expunge(call)
        return call
