"""UI proposals: checked tool calls, proposals in the message's metadata, claims of applying replaced."""

from __future__ import annotations

import json

import pytest

from app.assistance.preferences import ui_setting
from app.extensions import db
from app.guards.credentials import save_credential
from app.models import RunEvent, User
from app.policy.claims import claims_applied
from app.policy.proposals import NOT_PROPOSED, PENDING, ProposalRejected, check_reason
from app.runtime import execution
from app.tables.schema import get_table
from tests.chat_driver import last_run_id, outcome, start_chat
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted
from tests.tables.factory import make_table

LAYOUT = {"type": "string", "enum": ["table", "cards"]}
SKILL = [{"name": "ui_proposals", "config": {}}]


def declared(resource: str = "data/orders", current: str = "table") -> list[dict]:
    return [
        {"kind": "preference", "target": {"namespace": "ui", "key": "defaultListLayout"}, "schema": LAYOUT,
         "current": current, "description": "Default layout of lists"},
        {"kind": "view_state", "target": {"resource": resource, "view": "layout"}, "schema": LAYOUT,
         "current": current, "description": "Layout of this list"},
    ]


def cards(reason: str = "You open this list on a phone most of the time.", **target) -> tuple[str, dict]:
    args = {"namespace": "ui", "key": "defaultListLayout", "value": '"cards"', "reason": reason, **target}
    return "propose_preference_change", args


@pytest.fixture
def orders(app):
    with app.app_context():
        make_table(permissions={"read": ["user"], "insert": [], "update": [], "delete": []})
    return get_table


def run_chat(app, client, auth, scripted_model, script: Script, page: dict | None, skills=SKILL):
    user_id = auth.login_as("user")
    with app.app_context():
        agent_id = make_agent(skills=skills, model_config_id=scripted(scripted_model, script)).id
    conversation_id = start_chat(app, client, agent_id)
    data = {"text": "Make this list easier to read on my phone."}
    if page is not None:
        data["context"] = json.dumps({"page": page})
    assert client.post(f"/chat/{conversation_id}/messages", data=data).status_code == 302
    run_id = last_run_id(app, conversation_id)
    execution.wait(run_id)
    run, message = outcome(app, run_id)
    with app.app_context():
        events = [(e.type, e.data) for e in db.session.scalars(db.select(RunEvent).where(
            RunEvent.run_id == run_id).order_by(RunEvent.seq))]
        user = db.session.get(User, user_id)
        db.session.expunge(user)
    return message, events, user


def test_a_proposal_is_stored_and_a_claim_that_it_was_applied_is_replaced(app, client, auth, scripted_model,
                                                                          orders):
    script = Script([cards()], "I have updated your layout to cards; it has been applied.")
    message, events, user = run_chat(app, client, auth, scripted_model, script, {"proposable": declared()})
    assert message.content == PENDING["en"]
    [proposal] = message.meta["proposals"]
    assert proposal["schemaVersion"] == 1 and len(proposal["id"]) == 36
    assert {k: v for k, v in proposal.items() if k not in ("id", "schemaVersion")} == {
        "kind": "preference", "target": {"namespace": "ui", "key": "defaultListLayout"}, "current": "table",
        "proposed": "cards", "reason": "You open this list on a phone most of the time."}
    assert ui_setting(user, "defaultListLayout") == "table" and user.preferences == {}  # nothing applied
    texts = [data["delta"] for kind, data in events if kind == "text"]
    assert texts == [PENDING["en"]]  # the claim never reached the page, not even while streaming
    kinds = [kind for kind, _ in events]
    assert kinds.index("tool_call") < kinds.index("text") and kinds[-1] == "end"
    assert {tool.name for tool in script.infos[0].function_tools} >= {"propose_preference_change",
                                                                      "propose_view_state"}
    assert "never say that you changed" in script.infos[0].instructions.lower()


def test_an_answer_that_does_not_claim_anything_is_kept(app, client, auth, scripted_model, orders):
    script = Script([("propose_view_state", {"resource": "data/orders", "view": "layout", "value": '"cards"',
                                              "reason": "Cards fit a narrow screen."})],
                    "I suggest the cards layout; accept it on the card if you like it.")
    message, _events, _user = run_chat(app, client, auth, scripted_model, script, {"proposable": declared()})
    assert message.content == "I suggest the cards layout; accept it on the card if you like it."
    assert message.meta["proposals"][0]["target"] == {"resource": "data/orders", "view": "layout"}


def test_the_italian_claim_gets_the_italian_statement(app, client, auth, scripted_model, orders):
    script = Script([cards()], "Fatto! Ho modificato il layout: è stato salvato.")
    message, _events, _user = run_chat(app, client, auth, scripted_model, script,
                                       {"locale": "it", "proposable": declared()})
    assert message.content == PENDING["it"]


@pytest.mark.parametrize(("call", "fix"), [
    (cards(key="theme"), "not declared by the page"),
    (cards(namespace="mobile"), "not declared by the page"),
    (("propose_view_state", {"resource": "data/payroll", "view": "layout", "value": '"cards"', "reason": "x"}),
     "not declared by the page"),
    (cards(value='"grid"'), "does not fit the target's schema"),
    (cards(value="cards"), "must be JSON text"),
    (cards(value='{"a": 1, "a": 2}'), "must be JSON text"),
    (cards(value="NaN"), "must be JSON text"),
    (cards(reason="See https://example.org for why."), "no link"),
    (cards(reason="<b>Better</b>"), "no markup"),
    (cards(reason="[docs](x)"), "no markup"),
    (cards(reason="two\nlines"), "no control character"),
    (cards(reason="x" * 241), "keep it under 240"),
    (cards(reason="  "), "Give a short reason"),
    (cards(reason="Your token sdk_" + "a" * 43 + " says so"), "breaks the output rule 'api_token'"),
])
def test_a_call_that_breaks_a_rule_is_retried_and_nothing_is_stored(app, client, auth, scripted_model, orders,
                                                                    call, fix):
    script = Script([call], "Nothing to suggest.")
    message, _events, _user = run_chat(app, client, auth, scripted_model, script, {"proposable": declared()})
    assert "proposals" not in message.meta and message.content == "Nothing to suggest."
    [(content, _attempt)] = script.retries
    assert fix in str(content)


@pytest.mark.parametrize("call", [cards(), ("propose_view_state", {"resource": "data/orders", "view": "layout",
                                                                 "value": '"cards"', "reason": "Cards fit."})])
def test_a_proposal_of_the_value_in_force_makes_no_card_and_the_answer_may_not_claim_the_switch(
        app, client, auth, scripted_model, orders, call):
    # The model insists: it claims the switch after the no-op result, and again when asked to fix that.
    script = Script([call], "I switched your layout to cards.", "I switched your layout to cards.")
    message, _events, user = run_chat(app, client, auth, scripted_model, script,
                                      {"proposable": declared(current="cards")})
    assert "proposals" not in message.meta and script.retries == []  # refused plainly, not as a mistake
    [step] = message.steps
    assert not step["failed"] and 'already "cards"' in step["result"] and "no card" in step["result"]
    assert message.content == NOT_PROPOSED["en"] and "switched" not in message.content
    assert message.meta["proposal_check"] == {"unsupported": True}
    assert user.preferences == {}
    page = client.get(f"/chat/{message.conversation_id}", headers={"HX-Request": "true"}).text
    assert 'data-testid="proposal"' not in page and "I switched" not in page


def test_a_proposal_of_the_value_in_force_lets_the_model_say_so(app, client, auth, scripted_model, orders):
    script = Script([cards()], "Your lists already use cards, so there is nothing to change.")
    message, _events, _user = run_chat(app, client, auth, scripted_model, script,
                                       {"proposable": declared(current="cards")})
    assert "proposals" not in message.meta
    assert message.content == "Your lists already use cards, so there is nothing to change."


def test_a_reason_that_leaks_a_saved_credential_is_retried_naming_the_rule(app, client, auth, scripted_model):
    secret = "hunter2-but-longer-9f"
    script = Script([cards(reason=f"Your key {secret} fits cards.")], "Nothing to suggest.")
    real_login = auth.login_as

    def login_with_credential(role):
        user_id = real_login(role)
        with app.app_context():
            save_credential(user_id, "ci", secret)
            db.session.commit()
        return user_id

    auth.login_as = login_with_credential
    message, _events, _user = run_chat(app, client, auth, scripted_model, script, {"proposable": declared()})
    assert "proposals" not in message.meta and message.content == "Nothing to suggest."
    [(content, _attempt)] = script.retries
    assert "breaks the output rule 'credential'" in str(content) and secret not in str(content)


def test_at_most_three_proposals_and_one_per_target(app, client, auth, scripted_model):
    targets = [{"kind": "preference", "target": {"namespace": "cli", "key": f"k{i}"}, "schema": LAYOUT}
               for i in range(5)]
    calls = [("propose_preference_change", {"namespace": "cli", "key": key, "value": '"cards"', "reason": "r"})
             for key in ("k0", "k0", "k1", "k2", "k3")]
    script = Script(*[[one] for one in calls], "Suggested.")  # one call per step: in order
    message, _events, _user = run_chat(app, client, auth, scripted_model, script, {"proposable": targets})
    assert [p["target"]["key"] for p in message.meta["proposals"]] == ["k0", "k1", "k2"]
    fixes = [str(content) for content, _ in script.retries]
    assert any("already has a proposal" in fix for fix in fixes)
    assert any("at most 3 proposals" in fix for fix in fixes)


def test_without_declared_targets_the_tools_are_not_offered_and_the_answer_streams(app, client, auth,
                                                                                  scripted_model):
    script = Script("I have updated nothing, but here is an answer.")
    message, events, _user = run_chat(app, client, auth, scripted_model, script, None)
    assert not {"propose_preference_change", "propose_view_state"} & {t.name for t in script.infos[0].function_tools}
    assert message.content == "I have updated nothing, but here is an answer."  # no proposal, no rewrite


def test_only_the_kinds_the_page_declared_are_offered(app, client, auth, scripted_model, orders):
    script = Script("Fine.")
    run_chat(app, client, auth, scripted_model, script, {"proposable": declared()[:1]})
    names = {t.name for t in script.infos[0].function_tools}
    assert "propose_preference_change" in names and "propose_view_state" not in names


@pytest.mark.parametrize("text", [
    "I have updated your layout.", "I've changed it to cards.", "I changed the layout.", "I switched you to cards.",
    "The layout has been applied.", "Your preference was saved.", "It is now set to cards.", "Done! Enjoy.",
    "We have applied the change.", "Ho modificato il layout.", "Ho già cambiato la vista.",
    "L'impostazione è stata salvata.", "Il layout è stato applicato.", "L'ho aggiornato per te.",
    "Le preferenze sono state aggiornate.", "Fatto!",
])
def test_claims_of_applying_are_detected_in_english_and_italian(text):
    assert claims_applied(text)


@pytest.mark.parametrize("text", [
    "I suggest the cards layout.", "You can accept or refuse the suggestion.", "It will change once you accept.",
    "Ti propongo il layout a schede.", "Puoi accettare o rifiutare la proposta.", PENDING["en"], PENDING["it"],
])
def test_suggestions_are_not_claims(text):
    assert not claims_applied(text)


def test_a_plain_reason_is_kept():
    assert check_reason("  Cards fit a phone screen better.  ") == "Cards fit a phone screen better."
    with pytest.raises(ProposalRejected):
        check_reason(None)


def test_the_answer_shows_a_card_per_proposal_with_accept_and_refuse(app, client, auth, scripted_model, orders):
    script = Script([cards()], "I suggest cards.")
    message, _events, _user = run_chat(app, client, auth, scripted_model, script, {"proposable": declared()})
    page = client.get(f"/chat/{message.conversation_id}").text
    [proposal] = message.meta["proposals"]
    assert f'id="proposal-{proposal["id"]}"' in page and 'data-testid="proposal-accept"' in page
    assert "You open this list on a phone most of the time." in page
    assert '<code>"table"</code> → <code>"cards"</code>' in page


def test_a_view_state_in_the_url_changes_the_list_for_this_page_only(app, client, auth, orders):
    user_id = auth.login_as("user")
    assert 'data-layout="cards"' in client.get("/data/orders?layout=cards").text
    assert 'data-layout="table"' in client.get("/data/orders?layout=grid").text
    assert 'data-layout="table"' in client.get("/data/orders").text
    with app.app_context():
        assert db.session.get(User, user_id).preferences == {}
