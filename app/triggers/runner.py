"""Fire a trigger: a conversation and a queued run with the filled prompt, then a job that runs it.

The run is stored before the job starts, so even a trigger that fails at once (a broken template,
an agent that errs) leaves a run at /runs that says what went wrong.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import current_app
from jinja2 import TemplateError

from app.chat import turns
from app.extensions import db, jobs
from app.models import Conversation, Message, Run, Trigger, TriggerRun
from app.models.base import utcnow
from app.runtime import execution
from app.runtime.prompts import clock_variables, render_prompt
from app.tables.records import update_row

log = logging.getLogger(__name__)

RUN_TIMEOUT_SECONDS = 600.0
SOURCES = {"event": "table", "webhook": "webhook", "schedule": "schedule"}


@jobs.task()
def run_trigger(run_id: str) -> None:
    """Run a trigger's queued run on the runtime and wait for it to end."""
    execution.launch(current_app._get_current_object(), run_id).result(RUN_TIMEOUT_SECONDS)


def fire(trigger: Trigger, variables: dict[str, Any], extras: dict[str, Any] | None = None,
         title: str | None = None, row_id: int | None = None) -> Run | None:
    """Start the trigger's agent with the filled prompt; None when it has no user to run as."""
    user = trigger.run_as
    if user is None or not user.active:
        log.warning("trigger %s has no active user to run as; not fired", trigger.id)
        return None
    source = SOURCES[trigger.kind]
    variables = {**clock_variables(), "trigger": {"name": trigger.name, "id": trigger.id}, **variables}
    try:
        prompt, error = render_prompt(trigger.prompt, variables), None
    except TemplateError as failure:
        prompt, error = trigger.prompt, f"The prompt template could not be filled: {failure}"
    title = title or trigger.name
    if trigger.agent is not None:
        conversation = turns.start_conversation(user, trigger.agent, title=title, source=source)
    else:  # the runtime records that the agent is gone
        conversation = Conversation(user_id=user.id, agent_id=None, title=title, source=source)
        db.session.add(conversation)
    db.session.flush()
    _message, run = turns.send_message(conversation, user, prompt or "(empty prompt)", launch=False,
                                       extras={"trigger": trigger.id, **(extras or {})})
    db.session.add(TriggerRun(run_id=run.id, trigger_id=trigger.id, trigger_name=trigger.name,
                              table_name=(extras or {}).get("table"), row_id=(extras or {}).get("row_id")))
    db.session.commit()
    if row_id is not None and trigger.write_back_field and trigger.table is not None:
        _write_back(trigger, row_id, conversation.id)
    if error:
        return _fail(run, error)
    run_trigger.delay(run.id)
    db.session.expire_all()
    return db.session.get(Run, run.id)


def _fail(run: Run, error: str) -> Run:
    run.status, run.error, run.started_at, run.finished_at = "failed", error, utcnow(), utcnow()
    db.session.add(Message(conversation_id=run.conversation_id, role="assistant", content="", run_id=run.id,
                           meta={"status": "failed", "error": error}))
    db.session.commit()
    log.info("trigger run %s failed before starting", run.id)
    return run


def _write_back(trigger: Trigger, row_id: int, conversation_id: int) -> None:
    """Store the run's conversation id in the row, without firing update triggers."""
    definition = trigger.table
    field = definition.field(trigger.write_back_field)
    if field is None or field.kind not in ("integer", "text"):
        return
    value = conversation_id if field.kind == "integer" else str(conversation_id)
    update_row(definition, row_id, {field.name: value}, emit=False)
