"""Personal API tokens: shown once, hashed at rest, scoped, revocable, expiring; only for /api/."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta

import pytest

from app.extensions import db
from app.models import ApiToken, Conversation, PendingCall, Run, User
from app.models.base import utcnow
from tests.conftest import make_agent


def create(client, name="Laptop script", scope="read", days="30", **more):
    scopes = [scope] if isinstance(scope, str) else scope
    return client.post("/account/tokens/", data={"name": name, "scopes": scopes, "days": days, **more})


def new_secret(client, **kwargs) -> str:
    response = create(client, **kwargs)
    assert response.status_code == 201, response.text
    return re.search(r'data-testid="new-token" value="([^"]+)"', response.text).group(1)


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def patch_preferences(client, headers=None):
    return client.patch("/api/me/preferences", data=json.dumps({"cli": {"a": 1}}),
                        content_type="application/json", headers=headers or {})


def test_a_token_is_shown_once_and_only_its_hash_is_stored(app, client, auth):
    auth.login_as("user")
    secret = new_secret(client)
    assert secret.startswith("sdk_") and len(secret) == 47
    listing = client.get("/account/tokens/").text
    assert secret not in listing and secret[:10] + "…" in listing and "Laptop script" in listing
    with app.app_context():
        token = db.session.scalar(db.select(ApiToken))
        assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest()
        assert secret not in json.dumps([str(v) for v in token.__dict__.values()])
        assert timedelta(days=29) < token.expires_at - utcnow() <= timedelta(days=30)


def test_a_token_signs_in_to_the_api_without_a_session_or_csrf_token(app, client, auth):
    auth.login_as("user")
    secret = new_secret(client, scope="chat")
    app.config["WTF_CSRF_ENABLED"] = True
    stranger = app.test_client()  # no cookie
    assert stranger.get("/api/me/preferences", headers=bearer(secret)).json == {"data": {}}
    assert patch_preferences(stranger, bearer(secret)).json == {"data": {"cli": {"a": 1}}}
    session_write = patch_preferences(client)  # the session still needs its CSRF token
    assert session_write.status_code == 400 and session_write.json["code"] == "BAD_REQUEST"


def test_a_read_token_cannot_write(client, auth, app):
    auth.login_as("user")
    secret = new_secret(client, scope="read")
    stranger = app.test_client()
    assert stranger.get("/api/assistant/capabilities", headers=bearer(secret)).status_code == 200
    for response in (patch_preferences(stranger, bearer(secret)),
                     stranger.delete("/api/me/preferences?namespace=cli", headers=bearer(secret))):
        assert response.status_code == 403 and response.json["code"] == "INSUFFICIENT_SCOPE"


def test_revoked_expired_unknown_and_deactivated_tokens_are_401(app, client, auth):
    user_id = auth.login_as("user")
    revoked, expired, deactivated = (new_secret(client, name=n) for n in ("a", "b", "c"))
    stranger = app.test_client()
    with app.app_context():
        tokens = {t.name: t for t in db.session.scalars(db.select(ApiToken))}
        tokens["b"].expires_at = utcnow() - timedelta(seconds=1)
        db.session.commit()
        revoke_id = tokens["a"].id
    assert client.post(f"/account/tokens/{revoke_id}/revoke").status_code == 302
    assert f'id="token-{revoke_id}"' not in client.get("/account/tokens/").text
    for secret in (revoked, expired, "sdk_" + "x" * 43, "not-a-token", ""):
        response = stranger.get("/api/me/preferences", headers=bearer(secret))
        assert response.status_code == 401 and response.json["code"] == "UNAUTHORIZED", secret
    assert stranger.get("/api/me/preferences", headers=bearer(deactivated)).status_code == 200
    with app.app_context():
        db.session.get(User, user_id).active = False
        db.session.commit()
    assert stranger.get("/api/me/preferences", headers=bearer(deactivated)).status_code == 401


def test_a_token_opens_the_api_and_nothing_else(app, client, auth):
    auth.login_as("user")
    secret = new_secret(client)
    response = app.test_client().get("/chat/", headers=bearer(secret))
    assert response.status_code == 302 and "/login" in response.location


def test_another_users_token_cannot_be_revoked(app, client, auth):
    auth.login_as("user")
    new_secret(client)
    with app.app_context():
        token_id = db.session.scalar(db.select(ApiToken.id))
    auth.logout()
    auth.login_as("user")
    assert client.post(f"/account/tokens/{token_id}/revoke").status_code == 404


@pytest.mark.parametrize(("data", "reason"), [
    ({"name": "", "scopes": "read", "days": "30"}, "This field is required."),
    ({"name": "x" * 81, "scopes": "read", "days": "30"}, "longer than 80"),
    ({"name": "a", "scopes": "admin", "days": "30"}, "not a valid choice"),
    ({"name": "a", "days": "30"}, "Choose at least one scope."),
    ({"name": "a", "scopes": "read", "days": "10000"}, "Not a valid choice"),
    ({"name": "a", "scopes": "read", "days": "soon"}, "could not coerce"),
    ({"name": "a", "scopes": "read", "days": "30", "rate_limit": "0"}, "Use a whole number from 1 to 10,000"),
    ({"name": "a", "scopes": "read", "days": "30", "rate_limit": "many"}, "Use a whole number from 1 to 10,000"),
    ({"name": "a", "scopes": "read", "days": "30", "agents": "999999"}, "not a valid choice"),
])
def test_a_bad_token_form_is_422_beside_the_field(client, auth, data, reason):
    auth.login_as("user")
    response = client.post("/account/tokens/", data=data)
    assert response.status_code == 422 and reason in response.text and 'class="error"' in response.text


def test_a_token_signs_in_beside_a_session_cookie_without_a_user(app, client, auth):
    """A client that once opened a page holds a session cookie with no user in it (only a CSRF token,
    or what a sign-out left): Flask-Login's strong session protection threw that session away and
    never asked the token, so every valid token answered 401."""
    auth.login_as("user")
    secret = new_secret(client, scope="chat")
    script = app.test_client()
    assert script.get("/login").status_code == 200  # the sign-in page writes its CSRF token to a session
    assert script.get_cookie("session") is not None
    assert script.get("/api/me/preferences", headers=bearer(secret)).json == {"data": {}}
    assert patch_preferences(script, bearer(secret)).json == {"data": {"cli": {"a": 1}}}
    client.post("/logout")  # the person's own browser, signed out, keeps its session cookie
    assert client.get("/api/me/preferences", headers=bearer(secret)).status_code == 200


def test_the_token_decides_when_a_signed_in_session_sends_one(app, client, auth):
    """A Bearer header is the request's credential: its scope applies, and a bad one is a 401."""
    auth.login_as("user")
    secret = new_secret(client, scope="read")
    refused = patch_preferences(client, bearer(secret))
    assert refused.status_code == 403 and refused.json["code"] == "INSUFFICIENT_SCOPE"
    assert client.get("/api/me/preferences", headers=bearer("sdk_" + "x" * 43)).status_code == 401
    assert client.get("/api/me/preferences").status_code == 200  # the session alone still signs in


def test_the_page_that_shows_a_new_token_is_never_stored_by_a_cache(client, auth):
    """The secret is in that one answer: a browser's cache or back button must not keep a copy."""
    auth.login_as("user")
    response = create(client)
    assert response.status_code == 201 and response.headers["Cache-Control"] == "no-store"


def test_a_token_names_its_scopes_agents_and_rate_limit(app, client, auth):
    user_id = auth.login_as("user")
    with app.app_context():
        helper = make_agent("Helper")
        admins = make_agent("Admins only", roles=["admin"])
        helper_id, admins_id = helper.id, admins.id
    page = client.get("/account/tokens/").text
    assert helper.name in page and admins.name not in page  # only agents the user may use are offered
    assert create(client, name="Narrow", scope=["openai", "mcp"], agents=str(helper_id),
                  rate_limit="30").status_code == 201
    assert create(client, name="Sneaky", scope="openai", agents=str(admins_id)).status_code == 422
    with app.app_context():
        token = db.session.scalar(db.select(ApiToken).where(ApiToken.user_id == user_id))
        assert (token.scopes, token.all_agents, [a.id for a in token.agents], token.rate_limit) == (
            ["openai", "mcp"], False, [helper_id], 30)
    listing = client.get("/account/tokens/").text
    assert "openai, mcp" in listing and "30/min" in listing and "never" in listing
    # A token for other tools opens nothing of /api/.
    secret_page = create(client, name="Tools", scope="openai")
    secret = re.search(r'data-testid="new-token" value="([^"]+)"', secret_page.text).group(1)
    refused = app.test_client().get("/api/me/preferences", headers=bearer(secret))
    assert refused.status_code == 403 and refused.json["code"] == "INSUFFICIENT_SCOPE"


def test_a_token_naming_some_agents_reaches_nothing_of_the_others(app, client, auth):
    """Lists, reads, deletes, streams and decisions of /api/ narrow to the token's agents; a session sees all."""
    user_id = auth.login_as("user")
    with app.app_context():
        named, other = make_agent("Named"), make_agent("Other")
        chats = {}
        for agent in (named, other):
            conversation = Conversation(user_id=user_id, agent_id=agent.id, title=f"With {agent.name}")
            db.session.add(conversation)
            db.session.flush()
            run = Run(conversation_id=conversation.id, user_id=user_id, agent_id=agent.id, status="waiting")
            db.session.add(run)
            db.session.flush()
            call = PendingCall(conversation_id=conversation.id, run_id=run.id, tool_call_id="c1",
                               tool_name="delete_record", kind="approval", args={}, details={})
            db.session.add(call)
            db.session.flush()
            chats[agent.id] = (conversation.id, run.id, call.id)
        db.session.commit()
        named_id, other_id = named.id, other.id
    secret = new_secret(client, name="Named only", scope=["read", "chat"], agents=str(named_id))
    api = app.test_client()
    listed = api.get("/api/conversations", headers=bearer(secret)).json["data"]
    assert [c["id"] for c in listed] == [chats[named_id][0]]
    assert {c["id"] for c in client.get("/api/conversations").json["data"]} == {c for c, _r, _k in chats.values()}
    other_chat, other_run, other_call = chats[other_id]
    for response in (api.get(f"/api/conversations/{other_chat}", headers=bearer(secret)),
                     api.get(f"/api/conversations/{other_chat}/messages", headers=bearer(secret)),
                     api.delete(f"/api/conversations/{other_chat}", headers=bearer(secret)),
                     api.get(f"/api/agent/{other_run}", headers=bearer(secret)),
                     api.post(f"/api/approvals/{other_call}", data=json.dumps({"decision": "deny"}),
                              content_type="application/json", headers=bearer(secret)),
                     api.post(f"/api/conversations/{other_chat}/answers", content_type="application/json",
                              data=json.dumps({"callId": other_call, "answer": "yes"}), headers=bearer(secret))):
        assert response.status_code == 404 and "message" in response.json
    waiting = api.get("/api/approvals", headers=bearer(secret)).json["data"]
    assert other_call not in [c["id"] for c in waiting]
    assert api.get(f"/api/conversations/{chats[named_id][0]}", headers=bearer(secret)).status_code == 200
    with app.app_context():
        assert db.session.get(Conversation, other_chat).deleted_at is None
        assert db.session.get(PendingCall, other_call).status == "pending"


def test_an_admin_sees_and_revokes_every_token(app, client, auth):
    auth.login_as("user")
    secret = new_secret(client, name="Someone's script")
    auth.logout()
    auth.login_as("admin")
    page = client.get("/admin/tokens/")
    assert page.status_code == 200 and "Someone&#39;s script" in page.text and secret not in page.text
    with app.app_context():
        token_id = db.session.scalar(db.select(ApiToken.id))
    assert client.post(f"/admin/tokens/{token_id}/revoke").status_code == 302
    assert app.test_client().get("/api/me/preferences", headers=bearer(secret)).status_code == 401
    assert client.post(f"/admin/tokens/{token_id}/revoke").status_code == 404  # revoked already
