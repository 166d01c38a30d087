"""The agent editor: main fields, an ordered list of skills with generated settings forms, and the preview."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from html.parser import HTMLParser
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.toolsets import FunctionToolset
from werkzeug.datastructures import MultiDict

from app.extensions import db
from app.models import Agent, Conversation, Message, Run
from app.runtime.skill import Skill
from tests.chat_driver import chat_model, send, start_chat, words
from tests.conftest import make_agent, make_user
from tests.test_auth import sign_in_with_csrf


class NotesConfig(BaseModel):
    """A skill config with one field of each kind the form generator knows."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    limit: int = Field(5, ge=1, le=20)
    """How many notes to keep."""
    shared: bool = False
    """Share notes between users."""
    tone: Literal["brief", "detailed"] = "brief"
    """How the notes are written."""
    tags: list[str] = Field(default_factory=list)
    """Tags, one per line."""
    preamble: str = Field("", json_schema_extra={"widget": "textarea"})
    """Text put before every note."""


def notes_skill() -> Skill:
    def build(config: NotesConfig, ctx):
        toolset = FunctionToolset()

        @toolset.tool_plain
        def take_note(text: str) -> str:
            """Take a note."""
            return f"noted ({config.tone}): {text}"

        return toolset

    return Skill(name="notes", title="Notes", config=NotesConfig, build=build, description="Keeps notes.")


@pytest.fixture
def admin(app, auth) -> int:
    app.extensions["skills"]["notes"] = notes_skill()
    return auth.login_as("admin")


def form(**extra) -> dict:
    base = {"name": "Researcher", "description": "Finds things", "instructions": "Help {{ user.name }}.",
            "model_config_id": "", "roles": ["admin", "user"], "max_requests": "8", "skill_count": "0"}
    return {**base, **extra}


def with_skills(*skills: tuple[str, dict], **extra) -> dict:
    data = form(skill_count=str(len(skills)), **extra)
    for index, (name, settings) in enumerate(skills):
        data[f"skills-{index}-name"] = name
        data.update({f"skills-{index}-settings-{key}": value for key, value in settings.items()})
    return data


def listed_skills(html: str) -> list[str]:
    return re.findall(r'name="skills-\d+-name" value="([^"]+)"', html)


def agent_named(name: str) -> Agent | None:
    return db.session.scalar(db.select(Agent).where(Agent.name == name))


def test_the_editor_lists_agents_and_opens_a_blank_form(app, client, admin):
    index = client.get("/admin/agents/")
    assert index.status_code == 200 and "Demo assistant" in index.text
    page = client.get("/admin/agents/new")
    assert page.status_code == 200 and 'id="agent-form"' in page.text
    assert '<option value="notes">Notes</option>' in page.text and "Preview" in page.text


def test_adding_a_skill_shows_its_settings_form_without_saving(app, client, admin):
    response = client.post("/admin/agents/", data=form(action="add", add_skill="notes"))
    assert response.status_code == 200
    page = response.text
    assert listed_skills(page) == ["notes"]
    assert re.search(r'name="skills-0-settings-limit" id="skills-0-settings-limit" type="number" value="5"'
                     r'\s+min="1" max="20"', page)
    assert "How many notes to keep." in page and "Share notes between users." in page
    assert '<select name="skills-0-settings-tone"' in page and '<option value="brief" selected>' in page
    assert '<textarea name="skills-0-settings-tags"' in page
    assert '<textarea name="skills-0-settings-preamble"' in page
    assert 'type="checkbox" name="skills-0-settings-shared"' in page
    with app.app_context():
        assert agent_named("Researcher") is None


def test_reorder_and_remove_skills(app, client, admin):
    data = with_skills(("notes", {"limit": "3"}), ("clock", {"timezone": "Europe/Rome"}))
    down = client.post("/admin/agents/", data={**data, "action": "down:0"})
    assert listed_skills(down.text) == ["clock", "notes"]
    assert 'value="Europe/Rome"' in down.text and 'name="skills-1-settings-limit"' in down.text
    up = client.post("/admin/agents/", data={**data, "action": "up:1"})
    assert listed_skills(up.text) == ["clock", "notes"]
    removed = client.post("/admin/agents/", data={**data, "action": "remove:0"})
    assert listed_skills(removed.text) == ["clock"]
    ignored = client.post("/admin/agents/", data={**data, "action": "up:0"})  # already first
    assert listed_skills(ignored.text) == ["notes", "clock"]


def test_saving_stores_the_ordered_skills_with_validated_settings(app, client, admin):
    data = with_skills(("clock", {"timezone": "Europe/Rome"}),
                       ("notes", {"limit": "7", "shared": "on", "tone": "detailed", "tags": "a\n\nb\n",
                                  "preamble": "Hello"}))
    response = client.post("/admin/agents/", data={**data, "action": "save"})
    assert response.status_code == 302
    with app.app_context():
        agent = agent_named("Researcher")
        assert agent.skills == [
            {"name": "clock", "config": {"timezone": "Europe/Rome"}},
            {"name": "notes", "config": {"limit": 7, "shared": True, "tone": "detailed", "tags": ["a", "b"],
                                         "preamble": "Hello"}},
        ]
        assert (agent.roles, agent.max_requests) == (["admin", "user"], 8)
        assert agent.instructions == "Help {{ user.name }}."
        agent_id = agent.id
    assert response.location == f"/admin/agents/{agent_id}"
    page = client.get(f"/admin/agents/{agent_id}").text
    assert listed_skills(page) == ["clock", "notes"] and "Saved the agent Researcher." in page


@pytest.mark.parametrize(("skill", "field", "error"), [
    (("clock", {"timezone": "Mars/Olympus_Mons"}), "skills-0-settings-timezone", "Unknown time zone"),
    (("notes", {"limit": "50"}), "skills-0-settings-limit", "less than or equal to 20"),
    (("notes", {"limit": "many"}), "skills-0-settings-limit", "valid integer"),
    (("notes", {"tone": "loud"}), "skills-0-settings-tone", "'brief' or 'detailed'"),
])
def test_bad_skill_settings_are_a_422_beside_the_field(app, client, admin, skill, field, error):
    response = client.post("/admin/agents/", data={**with_skills(skill), "action": "save"})
    assert response.status_code == 422
    block = re.search(rf'<div class="field invalid">\s*<label for="{field}">.*?</div>', response.text, re.S)
    assert block and error in unescape(block.group(0)), response.text
    with app.app_context():
        assert agent_named("Researcher") is None


@pytest.mark.parametrize(("change", "field", "error"), [
    ({"name": ""}, "name", "Give the agent a name."),
    ({"name": "x" * 81}, "name", "Use at most 80 characters."),
    ({"name": "Demo assistant"}, "name", "Another agent already has this name."),
    ({"description": "d" * 301}, "description", "Use at most 300 characters."),
    ({"instructions": "Hello {{ user.name "}, "instructions", "Template error"),
    ({"roles": []}, "roles", "Choose at least one role that may use the agent."),
    ({"max_requests": "0"}, "max_requests", "Use a whole number from 1 to 200."),
    ({"max_requests": "ten"}, "max_requests", "Use a whole number from 1 to 200."),
    ({"model_config_id": "99999"}, "model_config_id", "Choose a model configuration that exists."),
])
def test_bad_main_fields_are_a_422_beside_the_field(app, client, admin, change, field, error):
    response = client.post("/admin/agents/", data={**form(**change), "action": "save"})
    assert response.status_code == 422
    block = re.search(rf'class="field invalid">\s*(<label for="{field}">|<legend>).*?'
                      rf'<p class="error">([^<]*)', response.text, re.S)
    assert block and error in block.group(2)
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Agent.id))) == 2  # the demo agent and the Workspace assistant


def test_preview_runs_the_form_as_it_stands_and_stores_nothing(app, client, admin):
    data = with_skills(("clock", {"timezone": "UTC"}), preview_prompt="What is the current time?")
    response = client.post("/admin/agents/preview", data=data, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.text
    assert html.startswith('<div id="preview-result"')
    assert "<code>current_time</code>" in html and "done" in html  # the tool call, with its result
    assert "Here is what the tools returned" in html and "(UTC)" in html  # the answer
    with app.app_context():
        assert agent_named("Researcher") is None
        assert db.session.scalar(db.select(db.func.count(Conversation.id))) == 0
        assert db.session.scalar(db.select(db.func.count(Run.id))) == 0


def test_preview_uses_the_chosen_model_and_shows_failures(app, client, admin, scripted_model):
    async def stream(messages, info):  # pragma: no cover - the preview does not stream
        yield ""

    def model(messages, info):
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[ToolCallPart("take_note", {"text": "milk"}, "n1")])
        return ModelResponse(parts=[TextPart("Noted the **milk**.")])

    config_id = scripted_model(function=model, stream_function=stream)
    data = with_skills(("notes", {"tone": "detailed"}), model_config_id=str(config_id), preview_prompt="milk")
    html = client.post("/admin/agents/preview", data=data, headers={"HX-Request": "true"}).text
    assert "<code>take_note</code>" in html and "noted (detailed): milk" in html
    assert "Noted the <strong>milk</strong>." in html


@pytest.mark.parametrize(("data", "error"), [
    (form(preview_prompt=""), "Write a message to try."),
    (form(preview_prompt="hi", roles=[]), "Fix the highlighted fields first."),
])
def test_preview_needs_a_message_and_a_valid_form(app, client, admin, data, error):
    response = client.post("/admin/agents/preview", data=data, headers={"HX-Request": "true"})
    assert response.status_code == 422 and error in response.text


def test_preview_ignores_the_unique_name_rule(app, client, admin):
    data = form(name="Demo assistant", preview_prompt="hello")
    assert client.post("/admin/agents/preview", data=data, headers={"HX-Request": "true"}).status_code == 200


def test_instructions_get_the_users_name_and_today(app, client, auth, scripted_model):
    seen = []

    async def model(messages, info):
        seen.append(info.instructions)
        yield "ok"

    auth.login_as("user", name="Grace Hopper")
    conversation_id = start_chat(app, client, model_config_id=chat_model(scripted_model, model),
                                 instructions="You help {{ user.name }} ({{ user.role }}) on {{ today }}.")
    send(app, client, conversation_id, "hi")
    today = datetime.now(UTC).date().isoformat()
    assert f"You help Grace Hopper (user) on {today}." in seen[0]


def test_deleting_an_agent_keeps_its_conversations_readable(app, client, auth, scripted_model):
    auth.login_as("admin")
    with app.app_context():
        agent_id = make_agent(model_config_id=chat_model(scripted_model, words("Kept answer"))).id
    conversation_id = start_chat(app, client, agent_id=agent_id)
    send(app, client, conversation_id, "Kept question")
    assert client.post(f"/admin/agents/{agent_id}/delete").status_code == 302
    page = client.get(f"/chat/{conversation_id}")
    assert page.status_code == 200 and "Kept question" in page.text and "Kept answer" in page.text
    assert "Deleted agent" in page.text
    response = client.post(f"/chat/{conversation_id}/messages", data={"text": "more"},
                           headers={"HX-Request": "true"})
    assert response.status_code == 422 and "You can no longer use this agent." in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Message.id))) == 2


class FormReader(HTMLParser):
    """Collect what a browser would submit from the page's #agent-form (its inputs, textareas, selects)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._inside = False
        self._text: tuple[str, list[str]] | None = None
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self._inside = attrs.get("id") == "agent-form"
        if not self._inside or "name" not in attrs and tag != "option":
            return
        if tag == "input" and attrs.get("type") not in ("submit", "button"):
            if attrs.get("type") != "checkbox" or "checked" in attrs:
                self.fields.append((attrs["name"], attrs.get("value") or ""))
        elif tag == "textarea":
            self._text = (attrs["name"], [])
        elif tag == "select":
            self._select = attrs["name"]
        elif tag == "option" and self._select and "selected" in attrs:
            self.fields.append((self._select, attrs.get("value") or ""))

    def handle_data(self, data):
        if self._text:
            self._text[1].append(data)

    def handle_endtag(self, tag):
        if tag == "textarea" and self._text:
            self.fields.append((self._text[0], unescape("".join(self._text[1]))))
            self._text = None
        elif tag == "select":
            self._select = None
        elif tag == "form":
            self._inside = False


def submitted(html: str, **changes: str) -> MultiDict:
    """Return the form as the page would submit it, with the fields labelled by id changed."""
    reader = FormReader()
    reader.feed(html)
    ids = dict(re.findall(r'<label for="([^"]+)">([^<*]+)', html))
    fields = MultiDict(reader.fields)
    for field_id, value in changes.items():
        assert field_id in ids, f"no field {field_id} on the page"
        fields.setlist(field_id, [value])
    return fields


def test_a_skill_setting_named_like_an_editor_field_is_kept(app, client, admin):
    """The JavaScript skill's tool name is a setting called `name`, like the field that records the skill."""
    page = client.post("/admin/agents/", data=form(action="add", add_skill="javascript")).text
    data = submitted(page, **{"skills-0-settings-name": "double_it"})
    data.setlist("action", ["save"])
    assert client.post("/admin/agents/", data=data).status_code == 302
    with app.app_context():
        agent = agent_named("Researcher")
        assert [(s["name"], s["config"]["name"]) for s in agent.skills] == [("javascript", "double_it")]
        agent_id = agent.id
    assert 'name="skills-0-settings-name" id="skills-0-settings-name" type="text" value="double_it"' in \
        client.get(f"/admin/agents/{agent_id}").text


def error_beside(html: str, field: str) -> str | None:
    block = re.search(rf'<div class="field invalid">\s*<label for="{field}">.*?<p class="error">([^<]*)', html, re.S)
    return unescape(block.group(1)) if block else None


@pytest.mark.parametrize(("skills", "field", "error"), [
    ((("javascript", {}), ("javascript", {})), "skills-1-settings-name",
     "Skill 1 (JavaScript function) already gives a tool named count_words"),
    ((("clock", {"timezone": "UTC"}), ("javascript", {"name": "current_time"})), "skills-1-settings-name",
     "Skill 1 (Clock) already gives a tool named current_time"),
    ((("javascript", {"name": "github_search"}),
      ("mcp", {"url": "https://mcp.example.org/mcp", "allowed_tools": "search", "tool_prefix": "github"})),
     None, "Skill 1 (JavaScript function) already gives a tool named github_search"),
])
def test_two_skills_giving_the_same_tool_name_are_refused_in_the_editor(app, client, admin, skills, field,
                                                                       error):
    response = client.post("/admin/agents/", data={**with_skills(*skills), "action": "save"})
    assert response.status_code == 422
    if field:
        assert error in (error_beside(response.text, field) or ""), response.text
    else:  # no setting holds the name itself (a prefix does): the message stands on the skill
        skill = re.search(r'<li class="skill card" id="skill-1">.*?</li>', response.text, re.S).group(0)
        assert f'<p class="error" role="alert">{error}' in unescape(skill)
    with app.app_context():
        assert agent_named("Researcher") is None


def test_two_javascript_functions_with_their_own_names_are_saved_and_offered(app, client, admin):
    data = with_skills(("javascript", {"name": "double_it"}), ("javascript", {"name": "halve_it"}),
                       preview_prompt="hello")
    preview = client.post("/admin/agents/preview", data=data, headers={"HX-Request": "true"})
    assert preview.status_code == 200 and "Tools available: double_it, halve_it." in preview.text
    assert client.post("/admin/agents/", data={**data, "action": "save"}).status_code == 302


def test_every_installed_skill_can_be_added_then_saved_or_refused_beside_its_fields(app, client, admin):
    for name in sorted(app.extensions["skills"]):
        added = client.post("/admin/agents/", data=form(action="add", add_skill=name, name=f"With {name}"))
        assert added.status_code == 200, name
        assert listed_skills(added.text) == [name]
        data = submitted(added.text)
        data.setlist("action", ["save"])
        saved = client.post("/admin/agents/", data=data)
        assert saved.status_code in (302, 422), name  # settings without a default need filling in
        if saved.status_code == 422:
            assert '<div class="field invalid">' in saved.text, name


@pytest.mark.parametrize(("given", "error"), [
    ({"arguments": "[{not json"}, "Not valid JSON"),
    ({"arguments": '[{"name": "a"}, {"name": "a"}]'}, "Each argument needs its own name; repeated: a."),
    ({"timeout_seconds": "31"}, "less than or equal to 30"),
])
def test_a_setting_the_config_refuses_is_a_422_beside_the_field_and_its_text_is_kept(app, client, admin,
                                                                                     given, error):
    response = client.post("/admin/agents/", data={**with_skills(("javascript", given)), "action": "save"})
    assert response.status_code == 422
    field, text = next(iter(given.items()))
    assert error in (error_beside(response.text, f"skills-0-settings-{field}") or ""), response.text
    if field != "arguments":
        assert f'value="{text}"' in response.text


def test_a_skill_that_is_no_longer_installed_is_shown_as_such_and_dropped_on_save(app, client, admin):
    with app.app_context():
        agent_id = make_agent(skills=[{"name": "gone", "config": {"x": 1}}, {"name": "clock", "config": {}}]).id
    page = client.get(f"/admin/agents/{agent_id}").text
    assert "gone (not installed)" in page and listed_skills(page) == ["gone", "clock"]
    data = with_skills(("gone", {"x": "1"}), ("clock", {"timezone": "UTC"}))
    assert client.post("/admin/agents/", data={**data, "action": "save"}).status_code == 302
    with app.app_context():
        assert agent_named("Researcher").skills == [{"name": "clock", "config": {"timezone": "UTC"}}]


def test_the_workspace_path_is_judged_by_the_editors_rules(app, admin):
    from app.agents import editor

    registry = app.extensions["skills"]
    with app.app_context():  # the Workspace tools run on the runtime loop, outside any request
        form = editor.form_of({"name": " Tidy   name ", "max_requests": 999},
                              [{"name": "notes", "config": {"limit": 50}}, {"name": "nowhere"}], registry, None)
        assert not form.valid
        assert form.error_map()["max_requests"] == "Use a whole number from 1 to 200."
        assert form.error_map()["skills"].startswith("There is no skill 'nowhere'")
        assert "less than or equal to 20" in form.skill_errors()[0]["limit"]
        good = editor.form_of({"name": " Tidy   name "}, [{"name": "notes", "config": {"limit": 3}}], registry, None)
        assert good.valid and good.values()["name"] == "Tidy name"
        assert good.stored_skills()[0]["config"]["limit"] == 3


def test_the_editor_needs_the_csrf_token(csrf_app, app):
    with app.app_context():
        make_user("admin", email="hal@example.org")
    client = csrf_app.test_client()
    token = sign_in_with_csrf(client, "hal@example.org")
    assert client.post("/admin/agents/", data={**form(), "action": "save"}).status_code == 400
    assert client.post("/admin/agents/", data={**form(), "action": "save", "csrf_token": token}).status_code == 302
