"""Tool routing in real runs (scripted model): modes load their groups, other groups are found by search,
revealed calls run at once or are answered `changed: false`, and a mode never grants a permission."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from app.skills.tool_routing import skill
from tests.conftest import make_agent
from tests.skill_chat import Script, chat_with, scripted
from tests.skills.discipline_skills import MODES, installed, skill_entries


def names(info) -> set[str]:
    return {tool.name for tool in info.function_tools}


def run(app, client, scripted_model, script, **settings):
    with installed(app):
        with app.app_context():
            agent = make_agent(skills=skill_entries({"name": "tool_routing", "config": {**MODES, **settings}}),
                               model_config_id=scripted(scripted_model, script))
            agent_id = agent.id
        return chat_with(app, client, agent_id, "Set things up")


def test_active_mode_loads_its_groups_and_search_reveals_the_others(app, client, auth, scripted_model):
    script = Script([("search_tools", {"queries": ["trigger schedule"]})],
                    [("create_trigger", {"name": "Nightly", "schedule": "0 2 * * *"})],
                    "Created the trigger Nightly.")
    auth.login_as("user")
    run_, message = run(app, client, scripted_model, script)
    assert run_.status == "succeeded", run_.error
    first, second, third = script.infos[:3]
    # data mode: its rows tools and the docs search are loaded; automation is deferred; maintenance is not the
    # user's and never appears.
    assert {"add_rows", "count_rows", "search_docs", "search_tools"} <= names(first)
    assert "create_trigger" not in names(first) and "purge_everything" not in names(first)
    assert "create_trigger" in names(second)  # revealed by the search
    # calling the revealed tool switched to the automation mode: the rows tools are now deferred, docs stay.
    assert "create_trigger" in names(third) and "search_docs" in names(third)
    assert "add_rows" not in names(third)
    assert "'automation'" in third.instructions
    step = next(step for step in message.steps if step["name"] == "create_trigger")
    assert json.loads(step["result"])["changed"] is True and not step["failed"]


def test_an_incomplete_revealed_call_is_answered_changed_false_without_a_retry(app, client, auth, scripted_model):
    script = Script([("search_tools", {"queries": ["trigger"]})],
                    [("create_trigger", {"name": "Nightly"})],  # no schedule
                    [("create_trigger", {"name": "Nightly", "schedule": "0 2 * * *"})],
                    "Created.")
    auth.login_as("user")
    run_, message = run(app, client, scripted_model, script)
    assert run_.status == "succeeded", run_.error
    incomplete, complete = [step for step in message.steps if step["name"] == "create_trigger"]
    result = json.loads(incomplete["result"])
    assert result["changed"] is False and "schedule" in result["next_steps"]
    assert not incomplete["failed"]  # an ordinary result, not a correction
    assert script.retries == []  # no tool retry was spent
    assert "reissue" in script.infos[2].instructions and "create_trigger" in script.infos[2].instructions
    assert "create_trigger" in names(script.infos[2])  # loaded with its full schema
    assert json.loads(complete["result"])["changed"] is True
    assert "reissue" not in script.infos[3].instructions  # reissued: no longer listed


def test_an_invalid_call_of_a_loaded_tool_is_still_a_retry(app, client, auth, scripted_model):
    script = Script([("add_rows", {"table": "Contacts"})], "Sorry.")
    auth.login_as("user")
    _run, message = run(app, client, scripted_model, script)
    step = next(step for step in message.steps if step["name"] == "add_rows")
    assert step["failed"] and "count" in step["result"]  # a correction, as without routing


def test_unavailable_groups_stay_hidden_after_a_mode_switch(app, client, auth, scripted_model):
    script = Script([("search_tools", {"queries": ["trigger"]})],
                    [("create_trigger", {"name": "N", "schedule": "* * * * *"})],
                    [("search_tools", {"queries": ["purge everything maintenance"]})],
                    "ok")
    auth.login_as("user")
    run_, message = run(app, client, scripted_model, script)
    assert run_.status == "succeeded", run_.error
    assert all("purge_everything" not in names(info) for info in script.infos)
    search = [step for step in message.steps if step["name"] == "search_tools"][-1]
    assert "purge_everything" not in search["result"]
    assert "maintenance" in script.infos[2].instructions  # the mode is named, its tools stay out of reach


def test_an_admin_finds_the_maintenance_group_by_search(app, client, auth, scripted_model):
    script = Script([("search_tools", {"queries": ["purge everything"]})], "ok")
    auth.login_as("admin")
    run(app, client, scripted_model, script)
    assert "purge_everything" not in names(script.infos[0])
    assert "purge_everything" in names(script.infos[1])


def test_calls_run_one_after_another(app, client, auth, scripted_model):
    script = Script([("search_tools", {"queries": ["trigger"]})],
                    [("create_trigger", {"name": "A", "schedule": "* * * * *"}),
                     ("create_trigger", {"name": "B", "schedule": "* * * * *"})],
                    "ok")
    auth.login_as("user")
    _run, message = run(app, client, scripted_model, script)
    results = [json.loads(step["result"]) for step in message.steps if step["name"] == "create_trigger"]
    assert [result["seen_before"] for result in results] == [0, 1]  # the second saw the first's change
    assert all(tool.sequential for tool in script.infos[2].function_tools if tool.name == "create_trigger")


def test_modes_need_distinct_names():
    with pytest.raises(ValidationError, match="same name"):
        skill.parse({"modes": [{"name": "data"}, {"name": "data"}]})
    assert skill.parse({}).always_active == ["docs", "knowledge"]
