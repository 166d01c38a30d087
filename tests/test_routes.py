"""Every route of the app, and which roles reach it.

The table below has one entry per endpoint. A route added without an entry fails
`test_every_route_has_an_entry`, so the table grows with the app. For each entry the test signs in as
each role and asks the route with real objects (a conversation, a run, a share, an agent, ...):
- anonymous visitors are sent to sign in (or get a 401 JSON answer), unless the route is public;
- the roles the entry names reach it; the others get `denied` (403, or 404 where existence is hidden);
- for owner routes, another user and an admin asking for someone else's object get 404.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from flask import url_for
from werkzeug.security import generate_password_hash

from app import create_app
from app.api.tokens import create_token
from app.extensions import db
from app.guards.credentials import save_credential
from app.models import (
    Agent,
    Conversation,
    EvalCaseResult,
    EvalRun,
    KnowledgeBase,
    KnowledgeDocument,
    KnowledgePassage,
    Message,
    ModelConfig,
    PendingCall,
    Run,
    RunEvent,
    Share,
    Trigger,
    User,
)
from app.models.memories import Memory
from app.seed import ensure_defaults
from app.tables.records import insert_row
from app.tables.schema import add_field, create_table
from tests.conftest import PASSWORD, _empty_tables

ANONYMOUS, GUEST, USER, ADMIN = "anonymous", "guest", "user", "admin"
EVERYONE = (GUEST, USER, ADMIN)
MEMBERS = (USER, ADMIN)
ADMINS = (ADMIN,)


@dataclass(frozen=True)
class Access:
    """Who reaches an endpoint, and with which objects its URL is filled."""

    roles: tuple[str, ...] = EVERYONE  # signed-in roles that reach it
    public: bool = False  # anonymous visitors reach it too
    owner: bool = False  # another user, and an admin, get 404 for someone else's object
    denied: int | dict[str, int] = 403  # what the signed-in roles outside `roles` get (one, or by role)
    args: dict[str, str] = field(default_factory=dict)  # URL argument -> "@object" of the world, or a value
    data: dict[str, str] = field(default_factory=dict)  # the form of a POST (values as in `args`)
    reach: tuple[int, ...] = ()  # statuses that count as reaching (default: all but 401/403/404/5xx, sign-in)
    anonymous: str = ""  # "login" when even a public route sends anonymous visitors to sign in
    changes: bool = False  # it deletes, revokes or signs out: the next entry starts from a fresh world
    token: bool = False  # personal tokens only (/v1/, /mcp/): each role asks with its token; a session gets 401

    def denied_for(self, role: str) -> int:
        return self.denied.get(role, 403) if isinstance(self.denied, dict) else self.denied


CONVERSATION = {"conversation_id": "@conversation"}
RUN = {"run_id": "@run"}
SHARE = {"share_id": "@share"}
TABLE = {"name": "@table"}
ROW = {"name": "@table", "row_id": "@row"}
CALL = {"call_id": "@call"}
READ_ONLY = {GUEST: 404, USER: 403}  # a table the user may read but not change, and the guest may not see

ROUTES: dict[str, Access] = {
    # Foundation
    "static": Access(public=True, args={"filename": "css/app.css"}),
    "home.index": Access(),
    "home.health": Access(public=True),
    "auth.login": Access(public=True),
    "auth.logout": Access(reach=(302,), changes=True),  # back to the sign-in page
    "auth.setup": Access(public=True, reach=(404,)),  # gone once a user exists
    "account.show": Access(),
    "account.update_password": Access(data={"current": "wrong"}),  # 422 beside the field
    "account.sign_out_everywhere": Access(reach=(302,), changes=True),  # back to the sign-in page
    "admin.index": Access(ADMINS),
    "admin.create": Access(ADMINS),
    "admin.update": Access(ADMINS, args={"user_id": "@victim"}, data={"role": "user", "active": "y"}),
    "admin.delete": Access(ADMINS, args={"user_id": "@victim"}, changes=True),
    # Diagnostics of compaction: admins read the records of any conversation (not only their own)
    "admin.compactions": Access(ADMINS, args=CONVERSATION),
    # Models and agents (admin)
    "models.index": Access(ADMINS),
    "models.new": Access(ADMINS),
    "models.create": Access(ADMINS),
    "models.edit": Access(ADMINS, args={"config_id": "@config"}),
    "models.update": Access(ADMINS, args={"config_id": "@config"}),
    "models.delete": Access(ADMINS, args={"config_id": "@config"}, changes=True),
    "models.test": Access(ADMINS, args={"config_id": "@default_config"}),
    "agents.index": Access(ADMINS),
    "agents.new": Access(ADMINS),
    "agents.create": Access(ADMINS),
    "agents.edit": Access(ADMINS, args={"agent_id": "@agent"}),
    "agents.update": Access(ADMINS, args={"agent_id": "@agent"}),
    "agents.delete": Access(ADMINS, args={"agent_id": "@spare_agent"}, changes=True),
    "agents.preview": Access(ADMINS),
    # Chat
    "chat.index": Access(),
    "chat.sidebar": Access(),
    "chat.create": Access(MEMBERS, data={"agent_id": "@agent"}),
    "chat.show": Access(owner=True, args=CONVERSATION),
    "chat.earlier": Access(owner=True, args={**CONVERSATION, "before": 1_000_000}),
    "chat.send": Access(MEMBERS, owner=True, args=CONVERSATION, data={"text": ""}),
    "chat.rename": Access(owner=True, args=CONVERSATION, data={"title": "Renamed"}),
    "chat.title": Access(owner=True, args=CONVERSATION),
    "chat.notices_after": Access(owner=True, args={**CONVERSATION, "message_id": 1}),
    "chat.accept_preference": Access(owner=True, args=CONVERSATION,
                                     data={"namespace": "ui", "key": "theme", "value": '"dark"'}),
    "chat.delete": Access(owner=True, args=CONVERSATION, changes=True),
    "chat.export": Access(owner=True, args={**CONVERSATION, "fmt": "md"}),
    "model_picker.update": Access(MEMBERS, owner=True, args=CONVERSATION, data={"model_config_id": ""}),
    # Runs
    "runs.events": Access(owner=True, args=RUN),
    "runs.message": Access(owner=True, args=RUN),
    "runs.stop": Access(owner=True, args=RUN),
    "runs.index": Access(ADMINS),
    # Sharing
    "shares.dialog": Access(owner=True, args=CONVERSATION),
    "shares.create": Access(owner=True, args=CONVERSATION, data={"audience": "instance"}),
    "shares.index": Access(),
    "shares.revoke": Access(owner=True, args=SHARE, changes=True),
    "shares.refresh": Access(owner=True, args=SHARE),
    "shares.view": Access(public=True, anonymous="login", args={"token": "@token"}),  # an instance link
    "shares.copy": Access(MEMBERS, args={"token": "@token"}),
    # Cards of calls that wait for the user, the inbox (guests decide nothing: 404), and the approvals audit
    "approvals.index": Access(MEMBERS),
    "approvals.count": Access(),  # nothing to count for a guest
    "approvals.show": Access(MEMBERS, owner=True, denied=404, args=CALL),
    "approvals.answer": Access(owner=True, args=CALL, data={"answer": ""}),
    "approvals.decide": Access(MEMBERS, owner=True, denied=404, args=CALL, data={"decision": "once"}),
    "approvals.review": Access(owner=True, args=CALL, data={"decision": "approve"}),
    "approvals.audit": Access(ADMINS),
    # A person's own credentials and memories
    "credentials.index": Access(MEMBERS),
    "credentials.create": Access(MEMBERS, data={"name": "", "value": ""}),
    "credentials.delete": Access(MEMBERS, owner=True, args={"credential_id": "@credential"}, changes=True),
    # Knowledge bases: admin pages; passage and document pages for the roles the knowledge base names
    "evals.index": Access(ADMINS),
    "evals.dataset": Access(ADMINS, args={"name": "workspace"}),
    "evals.save_dataset": Access(ADMINS, args={"name": "workspace"}, data={"text": "not: [valid"}),
    "evals.create": Access(ADMINS, args={"agent_id": "@agent"}, data={"dataset": "no-such-dataset"}),
    "evals.show": Access(ADMINS, args={"run_id": "@eval_run"}),
    "evals.case": Access(ADMINS, args={"run_id": "@eval_run", "result_id": "@eval_result"}),
    "evals.export": Access(ADMINS, args={"run_id": "@eval_run"}),
    "evals.compare": Access(ADMINS, args={"before": "@eval_run", "after": "@eval_run"}),
    "knowledge.index": Access(ADMINS),
    "knowledge.save": Access(ADMINS, data={"name": ""}),
    "knowledge.base": Access(ADMINS, args={"kb_id": "@kb"}),
    "knowledge.progress": Access(ADMINS, args={"kb_id": "@kb"}),
    "knowledge.upload": Access(ADMINS, args={"kb_id": "@kb"}),
    "knowledge.sync": Access(ADMINS, args={"kb_id": "@kb"}),
    "knowledge.preview": Access(ADMINS, args={"document_id": "@document"}),
    "knowledge.delete_doc": Access(ADMINS, args={"document_id": "@document"}, changes=True),
    "knowledge.delete": Access(ADMINS, args={"kb_id": "@kb"}, changes=True),
    "knowledge.passage": Access(MEMBERS, denied=404, args={"passage_id": "@passage"}),  # the base names no guest
    "knowledge.document": Access(MEMBERS, denied=404, args={"document_id": "@document"}),
    "memories.index": Access(MEMBERS),
    "memories.update": Access(MEMBERS, owner=True, args={"memory_id": "@memory"}, data={"text": ""}),
    "memories.delete": Access(MEMBERS, owner=True, args={"memory_id": "@memory"}, changes=True),
    # Data tables: users may read the test table, only admins change it; guests may not even see it
    "data.tables": Access(),
    "data.index": Access(MEMBERS, denied=404, args=TABLE),
    "data.layout": Access(MEMBERS, denied=404, args=TABLE, data={"layout": "cards"}),
    "data.show": Access(MEMBERS, denied=404, args=ROW),
    "data.assistant": Access(MEMBERS, denied=404, args=TABLE, data={"text": ""}),
    "assistant_panel.send": Access(MEMBERS, denied=404, data={"text": ""}),
    "data.new": Access(ADMINS, denied=READ_ONLY, args=TABLE),
    "data.create": Access(ADMINS, denied=READ_ONLY, args=TABLE),
    "data.update": Access(ADMINS, denied=READ_ONLY, args=ROW),
    "data.delete": Access(ADMINS, denied=READ_ONLY, args=ROW, changes=True),
    "tables_admin.index": Access(ADMINS),
    "tables_admin.create": Access(ADMINS),
    "tables_admin.show": Access(ADMINS, args=TABLE),
    "tables_admin.update": Access(ADMINS, args=TABLE),
    "tables_admin.delete": Access(ADMINS, args=TABLE, changes=True),
    "tables_admin.export": Access(ADMINS, args=TABLE),
    "tables_admin.create_field": Access(ADMINS, args=TABLE),
    "tables_admin.update_field": Access(ADMINS, args={**TABLE, "field_id": "@field"}),
    "tables_admin.delete_field": Access(ADMINS, args={**TABLE, "field_id": "@field"}, changes=True),
    "tables_admin.import_form": Access(ADMINS, args=TABLE),
    "tables_admin.preview_import": Access(ADMINS, args=TABLE),
    "tables_admin.confirm_import": Access(ADMINS, args=TABLE),
    # Triggers, and the webhook they listen on (public: its unguessable token is the credential)
    "triggers_admin.index": Access(ADMINS),
    "triggers_admin.new": Access(ADMINS),
    "triggers_admin.create": Access(ADMINS),
    "triggers_admin.show": Access(ADMINS, args={"trigger_id": "@trigger"}),
    "triggers_admin.update": Access(ADMINS, args={"trigger_id": "@trigger"}),
    "triggers_admin.delete": Access(ADMINS, args={"trigger_id": "@trigger"}, changes=True),
    "triggers_admin.rotate_token": Access(ADMINS, args={"trigger_id": "@trigger"}, changes=True),
    "hooks.receive": Access(public=True, args={"token": "@hook_token"}),  # a form body: 415, no run
    # The JSON API (anonymous requests get a 401 JSON answer, never a redirect)
    "api.preferences_show": Access(),
    "api.preferences_update": Access(),  # no body: 415
    "api.preferences_delete": Access(),  # no namespace: 422
    "api.capabilities": Access(MEMBERS),
    "api.openapi": Access(public=True),  # the document of the API is no secret
    "api_chat.conversations_index": Access(),
    "api_chat.conversations_create": Access(MEMBERS),  # no body: 415
    "api_chat.conversations_show": Access(owner=True, args=CONVERSATION),
    "api_chat.messages_index": Access(owner=True, args=CONVERSATION),
    "api_chat.messages_create": Access(MEMBERS, owner=True, args=CONVERSATION),  # no body: 415
    "api_chat.conversations_delete": Access(owner=True, args=CONVERSATION, changes=True),
    "api_chat.agent_resume": Access(owner=True, args=RUN),
    "api_chat.agent": Access(),  # no body: 415 (a guest's valid body gets 403, see test_agui_stream.py)
    "api_approvals.index": Access(MEMBERS),
    "api_approvals.decide": Access(MEMBERS, owner=True, denied=404, args=CALL),  # the world's call: a question, 422
    "api_approvals.answer": Access(MEMBERS, owner=True, args=CONVERSATION),  # no body: 415
    "assistant_admin.show": Access(ADMINS),
    "assistant_admin.update": Access(ADMINS, data={"enabled": "y"}),
    "tokens.index": Access(MEMBERS),
    "tokens.create": Access(MEMBERS, data={"name": "Script", "scope": "read", "days": "30"}),
    "tokens.revoke": Access(MEMBERS, owner=True, args={"token_id": "@api_token"}, changes=True),
    "token_admin.index": Access(ADMINS),
    "token_admin.revoke": Access(ADMINS, args={"token_id": "@api_token"}, changes=True),
    # Other tools, on tokens only: the OpenAI-compatible API and an MCP server per agent. A guest's token
    # lists no agent (the demo agent is for users and admins) and reaches none.
    "openai_api.models": Access(token=True),
    "openai_api.model": Access(MEMBERS, token=True, denied=404, args={"model": "@agent_slug"}),
    "openai_api.chat_completions": Access(token=True),  # no JSON body: 415 before the agent is read
    "mcp.endpoint": Access(MEMBERS, token=True, denied=404, args={"slug": "@agent_slug"}),  # 405, 415, 400
}

# A cheap hash: this test signs in five people for each of ~90 routes.
FAST_HASH = generate_password_hash(PASSWORD, method="pbkdf2:sha256:1")


def make_person(role: str, email: str) -> User:
    user = User(email=email, name=email.split("@")[0].title(), role=role, active=True, preferences={},
                password_hash=FAST_HASH)
    db.session.add(user)
    db.session.flush()
    return user


def own_objects(user: User, agent: Agent) -> dict[str, object]:
    """A conversation with a finished run, a share, a waiting card, a memory and a credential of the user."""
    conversation = Conversation(user_id=user.id, agent_id=agent.id, title=f"{user.role}'s chat")
    db.session.add(conversation)
    db.session.flush()
    run = Run(conversation_id=conversation.id, user_id=user.id, agent_id=agent.id, prompt="Hi",
              status="succeeded")
    db.session.add(run)
    db.session.flush()
    answer = Message(conversation_id=conversation.id, role="assistant", content="Hello", run_id=run.id,
                     meta={"status": "succeeded"})
    db.session.add_all([Message(conversation_id=conversation.id, role="user", content="Hi", run_id=run.id),
                        answer])
    db.session.flush()
    db.session.add(RunEvent(run_id=run.id, seq=1, type="end",
                            data={"status": "succeeded", "message_id": answer.id}))
    share = Share(conversation_id=conversation.id, owner_id=user.id, audience="instance", snapshot=[])
    call = PendingCall(conversation_id=conversation.id, message_id=answer.id, run_id=run.id,
                       tool_call_id="ask-1", tool_name="ask_user", kind="question",
                       args={"question": "Which one?"}, details={})
    memory = Memory(user_id=user.id, scope="personal", collection=f"memories-user-{user.id}",
                    text="Likes tea")
    db.session.add_all([share, call, memory])
    credential = save_credential(user.id, "API_TOKEN", "secret-value-123")
    api_token, _secret = create_token(user, "Script", "read", 30)
    _tools_token, tools_secret = create_token(user, "Tools", ["openai", "mcp"], 30)
    db.session.flush()
    return {"conversation": conversation.id, "run": run.id, "share": share.id, "token": share.token,
            "call": call.id, "memory": memory.id, "credential": credential.id,
            "api_token": api_token.id, "tools_secret": tools_secret}


def build_world() -> dict[str, dict[str, object]]:
    """People of every role, each with their own objects, and the shared ones (agents, models, tables)."""
    ensure_defaults()
    agent = db.session.scalar(db.select(Agent).where(Agent.name == "Demo assistant"))
    spare = Agent(name="Spare agent", instructions="", roles=["admin", "user"], skills=[], max_requests=5)
    config = ModelConfig(name="Spare model", provider="offline", model_name="skilldesk-offline",
                         context_window=32_000, timeout=30, profiles={})
    db.session.add_all([spare, config])
    people = {role: make_person(role, f"{role}@example.org") for role in EVERYONE}
    make_person(USER, "other@example.org")  # a stranger to everyone's objects
    victim = make_person(USER, "victim@example.org")
    table = create_table("inventory", "Inventory")
    table.assistant_agent_id = agent.id
    item = add_field(table, "item", "Item", "text")
    db.session.flush()
    row = insert_row(table, {"item": "Lamp"}, user_id=people[ADMIN].id)
    trigger = Trigger(name="Hook", kind="webhook", token="hook-token-" + "x" * 40, agent_id=agent.id,
                      run_as_id=people[USER].id, prompt="Handle {{ body }}")
    db.session.add(trigger)
    kb = KnowledgeBase(name="Routes handbook", roles=["admin", "user"])
    db.session.add(kb)
    db.session.flush()
    document = KnowledgeDocument(knowledge_base_id=kb.id, title="Guide", source="upload:guide.md",
                                 content="Backups run nightly.", status="indexed", passage_count=1)
    db.session.add(document)
    db.session.flush()
    passage = KnowledgePassage(document_id=document.id, knowledge_base_id=kb.id, position=0, start=0, end=20,
                               text="Backups run nightly.", embedded="Guide\nBackups run nightly.",
                               chunker_version=2)
    db.session.add(passage)
    db.session.flush()
    eval_run = EvalRun(dataset="workspace", agent_id=agent.id, agent_name=agent.name, status="finished",
                       population={"cases": ["a"], "total": 1, "skipped": []}, total=1, done=1, passed=1)
    db.session.add(eval_run)
    db.session.flush()
    eval_result = EvalCaseResult(run_id=eval_run.id, case_id="a", passed=True, status="succeeded")
    db.session.add(eval_result)
    db.session.flush()
    shared = {"eval_run": eval_run.id, "eval_result": eval_result.id,
              "agent": agent.id, "agent_slug": agent.slug, "spare_agent": spare.id, "config": config.id,
              "victim": victim.id,
              "default_config": db.session.scalar(db.select(ModelConfig.id).where(ModelConfig.is_default)),
              "table": table.name, "field": item.id, "row": row, "trigger": trigger.id,
              "hook_token": trigger.token, "kb": kb.id, "document": document.id, "passage": passage.id}
    objects = {role: {**shared, **own_objects(person, agent)} for role, person in people.items()}
    db.session.commit()
    objects[ANONYMOUS] = objects[USER]
    return objects


class World:
    """The objects and one signed-in client per role; `renew` starts again from an empty database."""

    def __init__(self, app) -> None:
        self.app = app
        self.renew(empty=False)

    def renew(self, empty: bool = True) -> None:
        with self.app.app_context():
            if empty:
                db.session.remove()
                _empty_tables()
            self.objects = build_world()
        self.clients = {role: client_of(self.app, role) for role in (ANONYMOUS, *EVERYONE, "other")}


@pytest.fixture
def world(app) -> World:
    return World(app)


def client_of(app, role: str):
    client = app.test_client()
    if role != ANONYMOUS:
        email = f"{role}@example.org"
        assert client.post("/login", data={"email": email, "password": PASSWORD}).status_code == 302, role
    return client


def resolve(values: dict[str, str], objects: dict[str, object]) -> dict[str, object]:
    return {key: objects[value[1:]] if isinstance(value, str) and value.startswith("@") else value
            for key, value in values.items()}


def call(app, client, endpoint: str, method: str, access: Access, objects: dict, headers=None, token=None):
    with app.test_request_context():
        url = url_for(endpoint, **resolve(access.args, objects))
    data = resolve(access.data, objects) if method == "POST" else None
    if token is not None:
        headers = {**(headers or {}), "Authorization": f"Bearer {token}"}
    response = client.open(url, method=method, data=data, headers=headers or {})
    response.get_data()  # read streams (SSE, files) to their end, then release them
    response.close()
    return response


def is_sign_in(response) -> bool:
    return response.status_code == 302 and urlsplit(response.location).path in ("/login", "/setup")


def reached(response, access: Access) -> bool:
    if access.reach:
        return response.status_code in access.reach
    status = response.status_code
    return status not in (401, 403, 404) and status < 500 and not is_sign_in(response)


def methods_of(app, endpoint: str) -> list[str]:
    return sorted({m for rule in app.url_map.iter_rules(endpoint=endpoint) for m in rule.methods}
                  - {"HEAD", "OPTIONS"})


@pytest.fixture(scope="module")
def endpoints(settings, _database) -> set[str]:
    """The endpoints of a freshly made app (not of one a test added routes to)."""
    fresh = create_app(dict(settings))
    with fresh.app_context():
        db.engine.dispose()
    return {rule.endpoint for rule in fresh.url_map.iter_rules()}


def test_every_route_has_an_entry(endpoints):
    missing = sorted(endpoints - set(ROUTES))
    stale = sorted(set(ROUTES) - endpoints)
    assert not missing, f"add these endpoints to ROUTES in tests/test_routes.py: {missing}"
    assert not stale, f"these ROUTES entries name no endpoint any more: {stale}"


def test_who_reaches_each_route(app, world):
    """One pass over the table; an entry that changes the world hands a fresh one to the next."""
    problems: list[str] = []
    for endpoint, access in ROUTES.items():
        problems += [f"{endpoint}: {problem}" for problem in check_route(app, world, endpoint, access)]
        if access.changes:
            world.renew()
    assert not problems, "\n".join(["routes whose access is not as the table says:", *problems])


def check_route(app, world: World, endpoint: str, access: Access) -> list[str]:
    problems: list[str] = []
    objects, clients = world.objects, world.clients
    for method in methods_of(app, endpoint):
        # Anonymous visitors first: they must change nothing.
        response = call(app, clients[ANONYMOUS], endpoint, method, access, objects[ANONYMOUS])
        if access.token:
            # No token, or a signed-in session without one: 401 in the area's own JSON shape.
            signed_in = call(app, clients[USER], endpoint, method, access, objects[USER])
            for who, answer in (("anonymous", response), ("a session without a token", signed_in)):
                if answer.status_code != 401 or "error" not in (answer.json or {}):
                    problems.append(f"{method} {who}: expected a 401 JSON error, got {answer.status_code}")
        elif access.public and not access.anonymous:
            if not reached(response, access):
                problems.append(f"{method} anonymous: expected to reach, got {response.status_code}")
        elif endpoint.startswith(("api.", "api_chat.", "api_approvals.")):
            if response.status_code != 401 or (response.json or {}).get("code") != "UNAUTHORIZED":
                problems.append(f"{method} anonymous API: expected 401 UNAUTHORIZED, got {response.status_code}")
        else:
            if not is_sign_in(response):
                problems.append(f"{method} anonymous: expected to sign in first, got {response.status_code}")
            if not access.public:
                as_json = call(app, clients[ANONYMOUS], endpoint, method, access, objects[ANONYMOUS],
                               headers={"Accept": "application/json"})
                if as_json.status_code != 401 or (as_json.json or {}).get("error") != "unauthorized":
                    problems.append(f"{method} anonymous JSON: expected 401, got {as_json.status_code}")
        # Then strangers: another user and an admin asking for the user's own objects.
        if access.owner:
            for stranger, role in (("other", USER), (ADMIN, ADMIN)):
                if role not in access.roles:
                    continue
                response = call(app, clients[stranger], endpoint, method, access, objects[USER])
                if response.status_code != 404:
                    problems.append(f"{method} {stranger} on the user's object: expected 404, "
                                    f"got {response.status_code}")
        # Then each role with its own objects: the roles outside the entry first, the allowed ones last.
        for role in sorted(EVERYONE, key=lambda r: r in access.roles):
            token = objects[role]["tools_secret"] if access.token else None
            response = call(app, clients[role] if not access.token else app.test_client(), endpoint, method, access,
                            objects[role], token=token)
            if role in access.roles and not reached(response, access):
                problems.append(f"{method} {role}: expected to reach, got {response.status_code}")
            elif role not in access.roles and response.status_code != access.denied_for(role):
                problems.append(f"{method} {role}: expected {access.denied_for(role)}, "
                                f"got {response.status_code}")
    return problems


def test_pages_keep_a_strict_content_security_policy(app, world):
    """Every page a signed-in admin opens: a strict CSP header, no inline script, no inline handler."""
    client = world.clients[ADMIN]
    checked = 0
    for endpoint, access in ROUTES.items():
        if "GET" not in methods_of(app, endpoint) or endpoint in ("runs.events", "static", "auth.setup"):
            continue
        response = call(app, client, endpoint, "GET", access, world.objects[ADMIN])
        if response.mimetype != "text/html":
            continue
        checked += 1
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy and response.headers["X-Content-Type-Options"] == "nosniff"
        for script in re.findall(r"<script\b[^>]*>", response.text):
            assert "src=" in script, f"{endpoint} has an inline script: {script}"
        handler = re.search(r"<[^>]+\son[a-z]+\s*=", response.text)
        assert not handler, f"{endpoint} has an inline event handler: {handler.group(0)}"
        assert 'href="javascript:' not in response.text
    assert checked > 20
