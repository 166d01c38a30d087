"""Each claim is checked against the turn's ledger: a true answer about what was done is never refused, and a
claim no change of this turn supports is caught, one by one, with a reason a model can act on."""

from __future__ import annotations

import pytest

from app.policy.claims import Change, Suggestion, change_from_outcome, check_claims, find_claims


def table(name, count=None, status="succeeded", earlier=False):
    return Change("create_table", "create", "table", name, count, status, earlier)


def rows(name, count, action="create", status="succeeded", earlier=False):
    return Change(f"{action}_rows_in_table_5", action, "row", name, count, status, earlier)


def changed(name, status="succeeded"):
    return Change("update_table", "update", "table", name, None, status)


def trigger(name, action="create"):
    return Change(f"{action}_trigger", action, "trigger", name, None, "succeeded")


def memory():
    return Change("store_in_memory", "remember", "memory", None, None, "succeeded")


def agent(name, action="update"):
    return Change(f"{action}_agent", action, "agent", name, None, "succeeded")


def sent(name):
    return Change("http_request", "send", "request", name, None, "succeeded")


CARD = Suggestion("preference", "lists.layout", "cards")

TRUE = [  # a correct answer about what was done: every claim is kept
    ("I have created the table Contacts.", [table("Contacts")]),
    ("I’ve created the table Contacts.", [table("Contacts")]),
    ("I created the table contacts.", [table("Contacts")]),
    ("I created the table Sales Leads.", [table("sales_leads")]),
    ("I created the table Contacts and added 3 rows.", [table("Contacts"), rows("Contacts", 3)]),
    ("I created the table Contacts with 3 rows.", [table("Contacts", 3)]),
    ("I added three rows to Contacts.", [rows("Contacts", 2), rows("Contacts", 1)]),
    ("I added 3 rows to Contacts and 2 to Leads.", [rows("Contacts", 3), rows("Leads", 2)]),
    ("I added the field Email to Contacts.", [changed("Contacts")]),
    ("I deleted 2 rows from Leads.", [rows("Leads", 2, "delete")]),
    ("I updated the rows of Contacts.", [rows("Contacts", 4, "update")]),
    ("The Contacts table: ready. It holds 3 new rows now.", [table("Contacts"), rows("Contacts", 3)]),
    ("- Contacts: created\n- Leads: created", [table("Contacts"), table("Leads")]),
    ("| Table | Status |\n|---|---|\n| Contacts | created |", [table("Contacts")]),
    ("✅ Contacts created", [table("Contacts")]),
    ("Done! The table Contacts is ready.", [table("Contacts")]),
    ("I created the trigger Nightly.", [trigger("Nightly")]),
    ("I scheduled a nightly run with the trigger Nightly.", [trigger("Nightly")]),
    ("I enabled the memory skill on the agent Sales.", [agent("Sales")]),
    ("I've saved that to memory.", [memory()]),
    ("I remembered that you prefer cards.", [memory()]),
    ("I called the webhook.", [sent("https://hooks.example.com")]),
    ("I suggested the cards layout: accept it on its card.", [], [CARD]),
    ("I created a short summary below.", []),
    ("I ran the numbers for you.", []),
    ("I imported 2 rows; 3 rows are remaining.", [rows("Contacts", 2, status="partial")]),
    ("I imported 2 of the 5 rows.", [rows("Contacts", 2, status="partial")]),
    ("In my previous answer I created the table Leads.", [table("Leads", earlier=True)]),
    ("In my previous answer I created the table Leads, and now I added 3 rows to it.",
     [table("Leads", earlier=True), rows("Leads", 3)]),
    ("Ho creato la tabella Contatti e ho aggiunto tre righe.", [table("Contatti"), rows("Contatti", 3)]),
    ("J'ai créé la table Contacts et ajouté trois lignes.", [table("Contacts"), rows("Contacts", 3)]),
    ("He creado la tabla Contactos y he añadido tres filas.", [table("Contactos"), rows("Contactos", 3)]),
    ("Ich habe die Tabelle Kontakte erstellt und drei Zeilen hinzugefügt.", [table("Kontakte"), rows("Kontakte", 3)]),
    ("Fatto! La tabella Contatti è pronta.", [table("Contatti")]),
    ("C'est fait : la table Contacts est créée.", [table("Contacts")]),
    ("Listo. La tabla Contactos está lista.", [table("Contactos")]),
    ("Erledigt! Die Tabelle Kontakte ist fertig.", [table("Kontakte")]),
    # what models write about records: names, attributes and values of rows are no tables
    ("Sure! I've set up a new table called **Contacts** with Name, Email and Phone fields.", [table("Contacts")]),
    ("I've added Bob Stone (bob@example.com) to Contacts.", [rows("contacts", 1)]),
    ("Bob's email has been updated to bob@new.example.com.", [rows("contacts", 1, "update")]),
    ("I've updated 3 rows in Contacts: Ada, Bob and Carl now have the status Active.",
     [rows("Contacts", 3, "update")]),
    ("J'ai mis à jour l'adresse e-mail de Bob.", [rows("contacts", 1, "update")]),
    ("Ich habe Bob zu den Kontakten hinzugefügt.", [rows("Kontakte", 1)]),
    ("Ho aggiunto Bob Stone ai Contatti.", [rows("contatti", 1)]),
    ("Your Sales agent now has the memory skill enabled.", [agent("Sales")]),
    ("The Email field is now required in Contacts.", [changed("Contacts")]),
    ("I removed the 2 duplicate entries from Leads, so it now has 40 rows.", [rows("Leads", 2, "delete")]),
    ("Created a nightly trigger named Nightly that runs the Reporter agent at 9:00.", [trigger("Nightly")]),
    ("✅ Added 3 rows to Contacts\n✅ Updated the Leads table", [rows("Contacts", 3), changed("Leads")]),
    ("(Offline model) Here is what the tools returned:\n- `create_table` returned: Created the table Contacts "
     "(contacts, id 5) with the fields name, email.", [table("Contacts")]),
]


@pytest.mark.parametrize("case", TRUE, ids=[case[0] for case in TRUE])
def test_a_true_answer_is_never_refused(case):
    text, changes, *suggestions = case
    findings = check_claims(text, changes, *suggestions)
    assert findings, "the answer claims something"
    assert [f.verdict for f in findings if not f.accepted] == [], [f.reason for f in findings]


FALSE = [  # (answer, changes, the verdict of each claim)
    ("I have created the table Contacts.", [], ["unsupported"]),
    ("I’ve created the table Contacts.", [], ["unsupported"]),
    ("I created Contacts and added 3 rows.", [table("Contacts")], ["supported", "unsupported"]),
    ("I created the table Contacts and added 3 rows.", [table("Contacts"), rows("Contacts", 2)],
     ["supported", "unsupported"]),
    ("I created the table Leads.", [table("Contacts")], ["unsupported"]),
    ("I added 3 rows to Leads.", [rows("Contacts", 3)], ["unsupported"]),
    ("I deleted the rows.", [rows("Contacts", 0, "delete", status="no_op")], ["unsupported"]),
    ("I deleted 3 rows from Contacts.", [rows("Contacts", 3, "delete", status="failed")], ["unsupported"]),
    ("I created the table Contacts.", [table("Contacts", status="reused")], ["unsupported"]),
    ("I imported the rows.", [rows("Contacts", 2, status="partial")], ["unsupported"]),
    ("I created the table Leads.", [table("Leads", earlier=True)], ["unsupported"]),
    ("I have sent the email to Bob.", [table("Contacts")], ["unsupported"]),
    ("The Contacts table: ready. It holds 3 new rows now.", [table("Contacts", 0)], ["supported", "unsupported"]),
    ("Your lists now show as cards.", [], ["unsupported"]),
    ("Your lists now show as cards.", [], ["unsupported"], [CARD]),
    ("I have switched your layout to grid.", [], ["unsupported"]),
    ("I have switched your layout to grid.", [], ["unsupported"], [CARD]),
    ("I suggested cards for your lists: accept it on its card.", [], ["unsupported"]),
    ("- Contacts: created\n- Leads: created", [table("Contacts")], ["supported", "unsupported"]),
    ("| Table | Status |\n|---|---|\n| Contacts | created |\n| Leads | ✅ |", [table("Contacts")],
     ["supported", "unsupported"]),
    ("I scheduled the report for 9am.", [], ["undecided"]),
    ("I've saved that to memory.", [table("Contacts")], ["unsupported"]),
    ("Ho creato la tabella Contatti.", [], ["unsupported"]),
    ("Ho aggiunto tre righe a Contatti.", [rows("Contatti", 2)], ["unsupported"]),
    ("J'ai supprimé la table Contacts.", [table("Contacts")], ["unsupported"]),
    ("Se eliminaron 3 filas.", [], ["unsupported"]),
    ("Ich habe die E-Mail an Bob gesendet.", [], ["unsupported"]),
    ("Le tue liste ora vengono mostrate come schede.", [], ["unsupported"]),
    ("Vos listes s'affichent désormais en cartes.", [], ["unsupported"]),
    ("Tus listas ahora se muestran como tarjetas.", [], ["unsupported"]),
    ("Deine Listen werden jetzt als Karten angezeigt.", [], ["unsupported"]),
]


@pytest.mark.parametrize("case", FALSE, ids=[case[0] for case in FALSE])
def test_each_claim_is_judged_on_its_own(case):
    text, changes, expected, *suggestions = case
    assert [f.verdict for f in check_claims(text, changes, *suggestions)] == expected


@pytest.mark.parametrize(("text", "changes", "reason"), [
    ("I created Contacts and added 3 rows.", [table("Contacts")],
     "claims 3 rows created in Contacts; this turn created 0 rows"),
    ("I added 3 rows to Contacts.", [rows("Contacts", 2)], "claims 3 rows created in Contacts; this turn created 2"),
    ("I created the table Contacts.", [table("Contacts", status="reused")], "reused what already existed"),
    ("I deleted 3 rows from Contacts.", [rows("Contacts", 3, "delete", status="failed")], "failed"),
    ("I created the table Leads.", [table("Leads", earlier=True)], "only an earlier turn did that"),
    ("I have switched your layout to grid.", [], "the server never applies"),
    ("I imported the rows.", [rows("Contacts", 2, status="partial")], "say what was done and what is unfinished"),
])
def test_the_reason_says_what_is_wrong(text, changes, reason):
    assert reason in [f for f in check_claims(text, changes) if f.verdict == "unsupported"][0].reason


def test_a_claim_no_tool_can_make_says_so():
    finding, = check_claims("I have sent the email to Bob.", [], tools=["create_table", "list_tables"])
    assert finding.verdict == "unsupported" and "no tool of this agent can send message" in finding.reason
    finding, = check_claims("I have sent the email to Bob.", [], tools=["send_email"])
    assert finding.verdict == "unsupported" and "no tool" not in finding.reason


def test_a_noun_a_tool_names_is_checked_like_a_kind():
    text = "I created the ticket for the outage."
    assert [f.fallback for f in check_claims(text, [])] == ["supported"]  # maybe part of the answer
    assert [f.verdict for f in check_claims(text, [], tools=["create_ticket"])] == ["unsupported"]
    ticket = Change("create_ticket", "create", "ticket", None, None, "succeeded")
    assert [f.verdict for f in check_claims(text, [ticket], tools=["create_ticket"])] == ["supported"]


def test_a_run_claim_that_names_nothing_is_met_by_any_tool_call():
    assert [f.verdict for f in check_claims("I ran it.", [], calls=["run_javascript"])] == ["supported"]
    assert [f.accepted for f in check_claims("I ran it.", [], calls=[])] == [False]


@pytest.mark.parametrize(("changes", "verdict", "accepted"), [
    ([], "undecided", False),
    ([table("Contacts")], "supported", True),
    ([table("Contacts"), rows("Contacts", 3, status="failed")], "undecided", False),
])
def test_a_completion_that_names_nothing_is_decided_by_what_the_turn_did(changes, verdict, accepted):
    finding, = check_claims("Done!", changes)
    assert (finding.verdict, finding.accepted) == (verdict, accepted)


def test_a_partial_turn_supports_a_bare_completion_that_says_what_is_left():
    changes = [table("Contacts"), rows("Contacts", 3, status="failed")]
    assert [f.accepted for f in check_claims("Done, but the rows failed: 3 rows are still to add.", changes)] == [True]


@pytest.mark.parametrize(("changes", "verdict", "accepted"), [
    ([], "undecided", False),  # no earlier turn stored a change: nothing backs it (fail closed)
    ([table("Leads", earlier=True)], "supported_past", True),
    ([table("Orders", earlier=True)], "undecided", False),  # the stored ledger shows no such change
    ([table("Leads")], "supported", True),
])
def test_a_claim_about_an_earlier_turn_is_checked_against_the_stored_ledger(changes, verdict, accepted):
    finding, = check_claims("In my previous answer I created the table Leads.", changes)
    assert (finding.verdict, finding.accepted) == (verdict, accepted)


def test_a_count_no_tool_reported_is_undecided_but_kept():
    finding, = check_claims("I added 3 rows to Contacts.", [rows("Contacts", None)])
    assert (finding.verdict, finding.accepted) == ("undecided", True)


def test_a_proposal_claim_needs_a_stored_card_and_applying_one_is_never_supported():
    text = "I suggested the cards layout: accept it on its card. I have also switched your layout to grid."
    assert [f.verdict for f in check_claims(text, [], [CARD])] == ["supported", "unsupported"]
    assert [f.verdict for f in check_claims(text, [])] == ["unsupported", "unsupported"]
    # a negated true statement is no claim at all
    assert check_claims("I have not changed your layout: accept the card to apply it.", [], [CARD]) == []


def test_an_answer_without_claims_has_no_findings():
    assert check_claims("Here are the 3 rows of Contacts.", [rows("Contacts", 3)]) == []
    assert check_claims("Nothing has changed until you accept it.", []) == []


def test_a_ledger_entry_is_read_from_an_outcome_of_the_runtime():
    assert change_from_outcome({"tool": "create_rows_in_table_5", "status": "succeeded", "table": "contacts",
                                "count": 3}) == Change("create_rows_in_table_5", "create", "row", "contacts", 3,
                                                       "succeeded")
    assert change_from_outcome({"tool": "delete_rows_in_table_5", "status": "no_op", "ids": []}, earlier=True) == (
        Change("delete_rows_in_table_5", "delete", "row", None, 0, "no_op", True))
    assert change_from_outcome({"tool": "create_table", "name": "contacts"}).action == "create"
    assert change_from_outcome({"tool": "notify_team", "status": "odd"}) == Change("notify_team", "send", "team",
                                                                                   None, None, "succeeded")
    assert change_from_outcome({"tool": "jira"}).action == "change"  # the name says no verb: any action fits
    assert [f.verdict for f in check_claims("I created the issue ABC-1.",
                                            [change_from_outcome({"tool": "jira"})])] == ["supported"]


def test_a_row_claimed_in_one_table_is_not_supported_by_a_row_written_to_another():
    leads = rows("Leads", 1)
    assert [f.verdict for f in check_claims("I added Ada to Contacts.", [leads])] == ["unsupported"]
    assert [f.verdict for f in check_claims("I added Ada to Leads.", [leads])] == ["supported"]


def test_a_claim_made_a_moment_ago_is_this_turns_and_is_checked():
    claims = find_claims("I made it a moment ago, with 3 rows in it.")
    assert claims and all(claim.action == "create" and not claim.earlier for claim in claims)
    assert find_claims("I created the table two days ago.")[0].earlier


def test_a_table_created_with_the_fields_named_is_supported_and_its_field_names_are_no_messages():
    table = Change("create_table", "create", "table", "Contacts", 0, "succeeded")
    text = "Created the table Contacts (contacts, id 1) with the fields email, phone."
    assert {f.verdict for f in check_claims(text, [table])} == {"supported"}
