"""Preferences as namespaces: GET, PATCH and DELETE on /api/me/preferences, every limit, the ui settings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from app.assistance import preferences as prefs
from app.extensions import db
from app.models import User


def patch(client, body, **kwargs):
    return client.patch("/api/me/preferences", data=body if isinstance(body, str) else json.dumps(body),
                        content_type="application/json", **kwargs)


def test_a_new_user_has_no_preferences_and_patch_merges_by_namespace(client, auth):
    auth.login_as("user")
    assert client.get("/api/me/preferences").json == {"data": {}}
    assert patch(client, {"ui": {"theme": "dark"}, "mobile-app": {"fontScale": 1.2}}).status_code == 200
    response = patch(client, {"ui": {"defaultListLayout": "cards"}, "mobile-app": {"tabs": ["a", "b"]}})
    assert response.json == {"data": {"ui": {"theme": "dark", "defaultListLayout": "cards"},
                                      "mobile-app": {"fontScale": 1.2, "tabs": ["a", "b"]}}}
    assert client.get("/api/me/preferences").json == response.json


def test_a_null_value_removes_its_key_and_an_emptied_namespace(client, auth):
    auth.login_as("user")
    patch(client, {"ui": {"theme": "dark"}, "cli": {"a": 1}})
    assert patch(client, {"cli": {"a": None}, "ui": {"sidebarCollapsed": True}}).json == {
        "data": {"ui": {"theme": "dark", "sidebarCollapsed": True}}}


def test_delete_removes_a_key_or_a_namespace(client, auth):
    auth.login_as("guest")  # guests keep their own settings too
    patch(client, {"ui": {"theme": "dark", "sidebarCollapsed": True}, "cli": {"a": 1}})
    assert client.delete("/api/me/preferences?namespace=ui&key=theme").json == {
        "data": {"ui": {"sidebarCollapsed": True}, "cli": {"a": 1}}}
    assert client.delete("/api/me/preferences?namespace=cli").json == {"data": {"ui": {"sidebarCollapsed": True}}}
    assert client.delete("/api/me/preferences?namespace=ui&key=sidebarCollapsed").json == {"data": {}}
    missing = client.delete("/api/me/preferences")
    assert missing.status_code == 422 and missing.json["fields"] == {"namespace": "required"}


@pytest.mark.parametrize(("body", "field", "reason"), [
    ({"ui": {"theme": "purple"}}, "ui.theme", "is not one of"),
    ({"ui": {"defaultListLayout": "grid"}}, "ui.defaultListLayout", "is not one of"),
    ({"ui": {"sidebarCollapsed": "yes"}}, "ui.sidebarCollapsed", "is not of type 'boolean'"),
    ({"ui": {"fontSize": 3}}, "ui.fontSize", "ui has no setting fontSize"),
    ({"UI": {"theme": "dark"}}, "UI", "not a valid namespace name"),
    ({"a" * 33: {"k": 1}}, "a" * 33, "not a valid namespace name"),
    ({"cli": {"bad key": 1}}, "cli.bad key", "not a valid key name"),
    ({"cli": {"k" * 65: 1}}, "cli." + "k" * 65, "not a valid key name"),
    ({"cli": ["not", "an", "object"]}, "cli", "must be an object"),
    ({"cli": {"blob": "x" * (prefs.MAX_VALUE_BYTES - 1)}}, "cli.blob", "1001 bytes; the limit is 1000"),
])
def test_a_bad_change_is_a_422_with_the_reason_and_changes_nothing(client, auth, body, field, reason):
    auth.login_as("user")
    patch(client, {"cli": {"kept": True}})
    response = patch(client, body)
    assert response.status_code == 422
    assert response.json["code"] == "PREFERENCES_INVALID" and reason in response.json["message"]
    assert field in response.json["fields"]
    assert client.get("/api/me/preferences").json == {"data": {"cli": {"kept": True}}}


def test_a_value_of_exactly_the_limit_is_kept():
    value = "x" * (prefs.MAX_VALUE_BYTES - 2)  # two quotes make it MAX_VALUE_BYTES of JSON
    user = User(preferences={})
    assert prefs.update_preferences(user, {"cli": {"blob": value}}) == {"cli": {"blob": value}}


def test_namespace_key_and_total_limits(client, auth):
    auth.login_as("user")
    namespaces = {f"client{i}": {"k": i} for i in range(prefs.MAX_NAMESPACES)}
    assert patch(client, namespaces).status_code == 200
    over = patch(client, {"one-more": {"k": 1}})
    assert over.status_code == 422 and "11 namespaces; the limit is 10" in over.json["message"]
    client.delete("/api/me/preferences?namespace=client0")
    keys = {f"k{i}": i for i in range(prefs.MAX_KEYS)}  # and the "k" it has: one too many
    too_many = patch(client, {"client1": keys})
    assert too_many.status_code == 422 and "51 keys in client1" in too_many.json["message"]
    assert too_many.json["fields"] == {"client1": "too many keys"}
    big = {f"k{i}": "x" * 900 for i in range(18)}  # 18 values of ~900 bytes: over 16,000 in all
    total = patch(client, {"client1": big})
    assert total.status_code == 422 and "the limit is 16000" in total.json["message"]


@pytest.mark.parametrize(("body", "status", "code"), [
    ('{"ui": {"theme": "dark", "theme": "light"}}', 400, "INVALID_JSON"),
    ('{"cli": {"n": NaN}}', 400, "INVALID_JSON"),
    ('{"cli": {"n": 1e999}}', 400, "INVALID_JSON"),
    ("{", 400, "INVALID_JSON"),
    ("[]", 422, "PREFERENCES_INVALID"),
    ("{}", 422, "PREFERENCES_INVALID"),
])
def test_bodies_that_are_not_a_strict_json_object(client, auth, body, status, code):
    auth.login_as("user")
    response = patch(client, body)
    assert response.status_code == status and response.json["code"] == code


def test_another_media_type_is_a_415_in_json_whatever_the_accept_header(client, auth):
    auth.login_as("user")
    response = client.patch("/api/me/preferences", data={"ui": "x"}, headers={"Accept": "text/html"})
    assert response.status_code == 415 and response.json["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_anonymous_requests_get_a_401_in_json(client, auth):
    auth.create("user")  # not the first-run page
    for method in ("get", "patch", "delete"):
        response = getattr(client, method)("/api/me/preferences", headers={"Accept": "text/html"})
        assert response.status_code == 401 and response.json["code"] == "UNAUTHORIZED"
    assert client.get("/api/nothing-here").json["code"] == "NOT_FOUND"


def test_the_list_layout_form_and_the_api_share_one_preference(app, client, auth):
    user_id = auth.login_as("admin")
    patch(client, {"ui": {"defaultListLayout": "cards"}})
    with app.app_context():
        assert prefs.ui_setting(db.session.get(User, user_id), "defaultListLayout") == "cards"


def test_a_stored_value_that_is_no_longer_valid_reads_as_the_default():
    user = User(preferences={"ui": {"defaultListLayout": "grid", "theme": "dark"}, "junk": 3})
    assert prefs.ui_setting(user, "defaultListLayout") == "table"
    assert prefs.ui_setting(user, "theme") == "dark"
    assert prefs.preferences_of(user) == {"ui": {"defaultListLayout": "grid", "theme": "dark"}}


def _migration():
    path = next(Path("migrations/versions").glob("*_preferences_as_namespaces.py"))
    spec = importlib.util.spec_from_file_location("preferences_migration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("stored", "migrated"), [
    (None, {}),
    ([], {}),
    ({"ui": {"defaultListLayout": "cards"}}, {"ui": {"defaultListLayout": "cards"}}),
    ({"ui": {"defaultListLayout": "grid", "theme": "dark", "x": 1}}, {"ui": {"theme": "dark"}}),
    ({"ui": {"sidebarCollapsed": 1}}, {}),
    ({"ui": "cards", "cli": {"a": 1}, "empty": {}}, {"cli": {"a": 1}}),
])
def test_the_migration_carries_stored_values_over_in_the_new_shape(stored, migrated):
    assert _migration().normalized(stored) == migrated
    if migrated:  # what the migration keeps passes the checks of a PATCH
        assert prefs.update_preferences(User(preferences={}), migrated) == migrated


def test_pages_follow_the_theme_and_sidebar_settings(client, auth):
    auth.login_as("user")
    page = client.get("/chat/").text
    assert 'data-theme="auto" data-sidebar="open"' in page and 'aria-expanded="true"' in page
    patch(client, {"ui": {"theme": "dark", "sidebarCollapsed": True}})
    page = client.get("/chat/").text
    assert 'data-theme="dark" data-sidebar="collapsed"' in page and 'aria-expanded="false"' in page
