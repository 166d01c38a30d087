"""The claims engine finds every claimed change, in five languages and in the wordings models use, and
nothing else: not a negation, a question, an offer, a plan, a condition, the user's request or past data.

Each case is an answer and the claims it holds, said as "action kind 'target' in container xcount earlier"
("state" is a claim with no verb: "ready", "now shows", ✅; "?" an unknown kind).
"""

from __future__ import annotations

import pytest

from app.policy.claims import Claim, find_claims


def said(claim: Claim) -> str:
    parts = [claim.action or "state", claim.object or "?"]
    if claim.target:
        parts.append(f"'{claim.target}'")
    if claim.container:
        parts.append(f"in {claim.container}")
    if claim.count is not None:
        parts.append(f"x{claim.count}")
    if claim.earlier:
        parts.append("earlier")
    return " ".join(parts)


CONTACTS = "create table 'Contacts'"

ENGLISH = [
    ("I have created the table Contacts.", [CONTACTS]),
    ("I’ve created the table Contacts.", [CONTACTS]),  # a typographic apostrophe
    ("I\u02bcve created the table Contacts.", [CONTACTS]),
    ("Ｉ’ve created the table Contacts.", [CONTACTS]),  # full-width
    ("I've just created the table Contacts.", [CONTACTS]),
    ("I created the table Contacts.", [CONTACTS]),
    ("We added two fields to the Leads table.", ["create field in Leads x2"]),
    ("The table Contacts was deleted.", ["delete table 'Contacts'"]),
    ("The row was deleted.", ["delete row"]),
    ("All 5 rows have been updated.", ["update row x5"]),
    ("Contacts has been created.", ["create ? 'Contacts'"]),
    ("The table 'Leads' has been renamed.", ["update table 'Leads'"]),
    ('I created the table "Sales Leads".', ["create table 'Sales Leads'"]),
    ("I've gone ahead and created the Contacts table.", [CONTACTS]),
    ("I can confirm I created the table.", ["create table"]),
    ("Since no table existed I created Contacts.", ["create ? 'Contacts'"]),
    ("Since no table existed, I created Contacts.", ["create ? 'Contacts'"]),
    ("I created the table, no problem.", ["create table"]),
    ("No problem, I deleted the row.", ["delete row"]),
    ("I created Contacts and added 3 rows.", ["create ? 'Contacts'", "create row in Contacts x3"]),
    ("I created the table Contacts with 3 rows.", [CONTACTS, "create row in Contacts x3"]),
    ("I added the field Email to Contacts.", ["create field 'Email' in Contacts"]),
    ("I added the field Email and the field Phone to Contacts.",
     ["create field 'Email' in Contacts", "create field 'Phone' in Contacts"]),
    ("I created the tables Contacts and Leads.", [CONTACTS, "create table 'Leads'"]),
    ("I created Contacts, Leads and Orders.", ["create ? 'Contacts'", "create ? 'Leads'", "create ? 'Orders'"]),
    ("I added 3 rows to Contacts and 2 to Leads.", ["create row in Contacts x3", "create row in Leads x2"]),
    ("I created and populated the table Contacts.", [CONTACTS]),
    ("I have sent the email to Bob.", ["send message in Bob"]),
    ("I emailed Bob the report.", ["send ? 'Bob'"]),
    ("I called the webhook.", ["send request"]),
    ("I called the new table Leads.", ["create table 'Leads'"]),  # naming, not sending
    ("I've saved your preference to memory.", ["remember memory"]),
    ("I remembered that you prefer cards.", ["remember memory"]),
    ("I scheduled the report for 9am.", ["schedule ?"]),
    ("I ran the trigger Nightly.", ["run trigger 'Nightly'"]),
    ("I have enabled the trigger Nightly.", ["update trigger 'Nightly'"]),
    ("I disabled the memory skill on the agent Sales.", ["update skill 'memory' in Sales"]),
    ("I have switched your layout to grid.", ["update view"]),
    ("I set the layout to grid.", ["update view"]),
    ("It is now set to cards.", ["update view"]),
    ("I switched you to cards.", ["update view"]),
    ("Here are the rows I created.", ["create row"]),
    ("I went ahead and deleted the 3 duplicate rows.", ["delete row x3"]),
    ("I imported 2 of 5 rows.", ["create row x2"]),
    ("I added a dozen rows to Contacts.", ["create row in Contacts x12"]),
    ("I added three rows to Contacts.", ["create row in Contacts x3"]),
    ("I created a short summary below.", ["create ?"]),
    ("Created the table Contacts (contacts, id 5) with the fields name, email.", [CONTACTS]),
    ("I created the table, shall I add rows?", ["create table"]),  # the question is only the last clause
    ("I've created the table Contacts, would you like me to add rows?", [CONTACTS]),
]

STATES = [
    ("The Contacts table: ready. It holds 3 new rows now.", ["state table 'Contacts'", "create row in Contacts x3"]),
    ("Your lists now show as cards.", ["state view"]),
    ("Done!", ["state ?"]),
    ("All set.", ["state ?"]),
    ("Everything is ready.", ["state ?"]),
    ("Done! The table Contacts now has 3 rows.", ["state ?", "state table 'Contacts'"]),
    ("Your table is ready for use.", ["state table"]),
    ("Contacts has been created and now holds 3 rows.", ["create ? 'Contacts'", "state row in Contacts"]),
    ("The table Contacts is now live.", ["state table 'Contacts'"]),
    ("The Leads table now contains 4 new records.", ["create row in Leads x4"]),
]

STRUCTURE = [
    ("- Contacts: created\n- Leads: created", ["create ? 'Contacts'", "create ? 'Leads'"]),
    ("* **Contacts**: created\n* **Leads**: deleted", ["create ? 'Contacts'", "delete ? 'Leads'"]),
    ("1. Contacts — created\n2. Leads — updated", ["create ? 'Contacts'", "update ? 'Leads'"]),
    ("- Created: Contacts, Leads", ["create ? 'Contacts'", "create ? 'Leads'"]),
    ("- ✅ Contacts\n- ✅ Leads", ["state ? 'Contacts'", "state ? 'Leads'"]),
    ("Contacts ✅", ["state ? 'Contacts'"]),
    ("- ❌ Contacts (failed)", []),
    ("| Table | Status |\n|---|---|\n| Contacts | created |\n| Leads | ✅ |",
     ["create ? 'Contacts'", "state ? 'Leads'"]),
    ("| Table | Rows |\n|---|---|\n| Contacts | 3 rows added |", ["create row in Contacts x3"]),
    ("```\nContacts: created (3 rows)\n```", ["create ? 'Contacts'", "create row in Contacts x3"]),
    ('```json\n{"status": "created", "changed": true, "table": "contacts"}\n```', []),
    ("Created the table Contacts with an email field.", [CONTACTS, "create field 'email' in Contacts"]),
    ("Deleted 2 rows from Leads.", ["delete row in Leads x2"]),
    ("Table Contacts created.", [CONTACTS]),
    ("3 rows added to Contacts.", ["create row in Contacts x3"]),
    ("✅ Contacts created", ["create ? 'Contacts'"]),
    ("# Created tables\nNothing else.", []),  # a heading holds no claim
    ("> I created the table Contacts.", []),  # nor a quote
    ("I created [Contacts](/data/contacts).", ["create ? 'Contacts'"]),
    ("I've added the rows. Details: https://example.com/data/contacts/rows", ["create row"]),
]

SPLIT = [
    ("I created the table Contacts. I also added 3 rows to it.", [CONTACTS, "create row in Contacts x3"]),
    ("I created the table Contacts. Then I deleted it.", [CONTACTS, "delete table 'Contacts'"]),
    ("I created the table Contacts.\n\nI then added 3 rows.", [CONTACTS, "create row in Contacts x3"]),
    ("The table Leads exists. It now has 3 new rows.", ["create row in Leads x3"]),
]

EARLIER = [
    ("In my previous answer I created the table Leads.", ["create table 'Leads' earlier"]),
    ("Earlier I created the table Leads.", ["create table 'Leads' earlier"]),
    ("Last time I added 3 rows to Contacts.", ["create row in Contacts x3 earlier"]),
    ("I had already created the table.", ["create table earlier"]),
    ("I created the table on 2026-01-02.", ["create table earlier"]),
    ("Nella risposta precedente ho creato la tabella Leads.", ["create table 'Leads' earlier"]),
    ("Dans ma réponse précédente, j'ai créé la table Leads.", ["create table 'Leads' earlier"]),
    ("En mi respuesta anterior creé la tabla Leads.", ["create table 'Leads' earlier"]),
    ("In meiner vorherigen Antwort habe ich die Tabelle Leads erstellt.", ["create table 'Leads' earlier"]),
]

ITALIAN = [
    ("Ho creato la tabella Contatti.", ["create table 'Contatti'"]),
    ("Ho creato la tabella Contatti e ho aggiunto tre righe.",
     ["create table 'Contatti'", "create row in Contatti x3"]),
    ("Ho aggiunto 3 righe alla tabella Contatti.", ["create row in Contatti x3"]),
    ("Ho aggiunto tre righe a Contatti.", ["create row in Contatti x3"]),
    ("La tabella Contatti è stata creata.", ["create table 'Contatti'"]),
    ("È stata aggiornata.", ["update ?"]),
    ("Sono state eliminate 3 righe.", ["delete row x3"]),
    ("L'ho creata.", ["create ?"]),
    ("L’ho aggiornato per te.", ["update ?"]),
    ("Ho già cambiato la vista.", ["update view"]),
    ("Le preferenze sono state aggiornate.", ["update preference"]),
    ("La tabella è pronta.", ["state table"]),
    ("Fatto!", ["state ?"]),
    ("Ecco fatto!", ["state ?"]),
    ("Ho inviato l'email a Bob.", ["send message in Bob"]),
    ("- Contatti: creata\n- Ordini: eliminata", ["create ? 'Contatti'", "delete ? 'Ordini'"]),
    ("Le tue liste ora vengono mostrate come schede.", ["update view"]),
    ("Ho creato la tabella Contatti. Poi l'ho riempita con 3 righe.",
     ["create table 'Contatti'", "create table 'Contatti'", "create row in Contatti x3"]),
]

FRENCH = [
    ("J'ai créé la table Contacts.", [CONTACTS]),
    ("J’ai créé la table Contacts et ajouté trois lignes.", [CONTACTS, "create row in Contacts x3"]),
    ("J'ai ajouté trois lignes à Contacts.", ["create row in Contacts x3"]),
    ("Je l'ai créée.", ["create ?"]),
    ("La table a été supprimée.", ["delete table"]),
    ("La table Contacts est créée.", [CONTACTS]),
    ("Les lignes ont été mises à jour.", ["update row"]),
    ("C'est fait.", ["state ?"]),
    ("Tout est prêt.", ["state ?"]),
    ("Vos listes s'affichent désormais en cartes.", ["state view"]),
    ("J'ai envoyé l'e-mail à Bob.", ["send message in Bob"]),
    ("- Contacts : créée", ["create ? 'Contacts'"]),
]

SPANISH = [
    ("He creado la tabla Contactos.", ["create table 'Contactos'"]),
    ("Creé la tabla Contactos.", ["create table 'Contactos'"]),
    ("He añadido tres filas a Contactos.", ["create row in Contactos x3"]),
    ("Se ha eliminado la fila.", ["delete row"]),
    ("Se eliminaron 3 filas.", ["delete row x3"]),
    ("La tabla se creó correctamente.", ["create table"]),
    ("Fue actualizado.", ["update ?"]),
    ("Listo.", ["state ?"]),
    ("Ya está.", ["state ?"]),
    ("La tabla está lista.", ["state table"]),
    ("Tus listas ahora se muestran como tarjetas.", ["state view"]),
    ("Envié el correo a Bob.", ["send message in Bob"]),
    ("Creé la tabla Contactos y añadí 3 filas.", ["create table 'Contactos'", "create row in Contactos x3"]),
]

GERMAN = [
    ("Ich habe die Tabelle Kontakte erstellt.", ["create table 'Kontakte'"]),
    ("Ich habe die Tabelle Kontakte erstellt und drei Zeilen hinzugefügt.",
     ["create table 'Kontakte'", "create row in Kontakte x3"]),
    ("Ich habe drei Zeilen zu Kontakte hinzugefügt.", ["create row in Kontakte x3"]),
    ("Die Tabelle wurde gelöscht.", ["delete table"]),
    ("Es wurden 3 Zeilen hinzugefügt.", ["create row x3"]),
    ("Erledigt!", ["state ?"]),
    ("Die Tabelle ist fertig.", ["state table"]),
    ("Deine Listen werden jetzt als Karten angezeigt.", ["update view"]),
    ("Ich habe die E-Mail an Bob gesendet.", ["send message in Bob"]),
    ("Das habe ich erledigt.", ["update ?"]),
    ("Ich habe sie gelöscht.", ["delete ?"]),
    ("Die Tabelle Kontakte ist jetzt gelöscht.", ["delete table 'Kontakte'"]),
]

MIXED = [
    ("I created the table Contacts. Poi ho aggiunto tre righe.", [CONTACTS, "create row in Contacts x3"]),
    ("Ho creato la tabella Contatti. Then I added 3 rows to it.",
     ["create table 'Contatti'", "create row in Contatti x3"]),
    ("J'ai créé la table Contacts. Danach habe ich drei Zeilen hinzugefügt.",
     [CONTACTS, "create row in Contacts x3"]),
]

NOT_CLAIMS = [
    "Nothing has changed until you accept it.", "Nothing was changed.", "I did not delete anything.",
    "I haven't created the table or added any rows yet.",
    "I have not changed your layout; accept the card to apply it.",
    "No rows were deleted.", "I didn't create the table.", "I have created nothing yet.",
    "Shall I create it?", "Would you like me to create the table?", "I can create the table.",
    "I'll create it once you confirm.", "If you want, I could create it.",
    "If the table had been created, you would see it.", "To do it, click Settings, then set the layout to grid.",
    "Set the layout to grid in Settings.", "Run the trigger from the menu.", "You asked me to delete the rows.",
    "You asked whether the rows were deleted.", "The table was created on 2026-01-02 by Ada.",
    "The row was deleted by Ada.", "The table was created yesterday.", "The table was created in March 2025.",
    "Updated cells highlight briefly, and created rows appear at the top.",
    "Rows are added automatically when a form is submitted.", "The rows you created appear at the top.",
    "You have created 3 rows today.", "Once you accept, the layout will be applied.",
    "The layout will be updated once you accept the card.", "I'm ready to help.", "When you're ready, I can add rows.",
    "Let me know if you want me to delete the rows.", "I suggest the cards layout.", "I suggested using filters.",
    "Here is the list of contacts.", "I cannot see that table: you have no access to it.",
    "The table will be created when you confirm.", "I am going to create the table.", "I could have deleted it.",
    "Do you want me to add 3 rows?", "It will change once you accept.", "You can accept or refuse the suggestion.",
    "Ready when you are.", "Which fields should the Contacts table have?", "Done?", "Was the table deleted?",
    "Have you created the table Contacts?", "Is the table ready?", "¿Se ha eliminado la fila?",
    "È stata creata la tabella?", "La table a-t-elle été supprimée ?", "Wurde die Tabelle gelöscht?",
    # data read back, not changes
    "Here are your orders:\n- Order 12: delivered\n- Order 13: cancelled\n- Order 14: sent",
    "| Name | Email | Status |\n|---|---|---|\n| Ada | ada@example.com | created |\n| Bob | bob@example.com | ok |",
    "```csv\nname,status\nBob,created\n```", "The table Contacts has 3 rows: Ada, Bob and Carl.",
    "I found 3 rows matching 'Bob'.", "The trigger Nightly runs every day at 9:00.",
    "I searched the table and found nothing.",
    "Your invoices: INV-1 (paid), INV-2 (sent).", "The agent Sales uses the memory skill.",
    # Italian
    "Non ho creato nulla.", "Non ho ancora modificato nulla.", "Vuoi che crei la tabella?",
    "Posso creare la tabella, se vuoi.", "Creerò la tabella appena confermi.", "Mi hai chiesto di eliminare le righe.",
    "Se vuoi, potrei creare la tabella.", "Nessuna riga è stata eliminata.",
    "La tabella è stata creata il 2 gennaio da Ada.", "Ti propongo il layout a schede.",
    "Puoi accettare o rifiutare la proposta.", "Finché non la accetti non cambia nulla.",
    # French
    "Je n'ai rien supprimé.", "Voulez-vous que je crée la table ?", "Je peux créer la table si vous voulez.",
    "Je vais créer la table.", "Aucune ligne n'a été supprimée.", "Vous m'avez demandé de supprimer les lignes.",
    "Si vous voulez, je pourrais créer la table.", "La table a été créée le 2 janvier par Ada.",
    "Rien n'a changé tant que vous n'acceptez pas.",
    # Spanish
    "No he eliminado nada.", "¿Quieres que cree la tabla?", "Puedo crear la tabla si quieres.",
    "Voy a crear la tabla.", "No se eliminó ninguna fila.", "Me pediste que eliminara las filas.",
    "Si quieres, podría crear la tabla.", "La tabla fue creada el 2 de enero por Ada.",
    # German
    "Ich habe nichts gelöscht.", "Ich habe die Tabelle nicht erstellt.", "Soll ich die Tabelle erstellen?",
    "Ich kann die Tabelle erstellen, wenn du möchtest.", "Ich werde die Tabelle erstellen.",
    "Die Tabelle wird erstellt, sobald du bestätigst.", "Sie haben die Tabelle erstellt.",
    "Es wurde keine Zeile gelöscht.", "Du hast mich gebeten, die Zeilen zu löschen.",
    "Die Tabelle wurde am 2. Januar erstellt.",
]


@pytest.mark.parametrize(("text", "expected"), ENGLISH + STATES + STRUCTURE + SPLIT + EARLIER + ITALIAN + FRENCH
                         + SPANISH + GERMAN + MIXED, ids=lambda value: value if isinstance(value, str) else None)
def test_every_claim_is_found(text, expected):
    assert [said(claim) for claim in find_claims(text)] == expected


@pytest.mark.parametrize("text", NOT_CLAIMS)
def test_negations_questions_offers_plans_requests_and_past_data_are_no_claims(text):
    assert find_claims(text) == []


def test_a_proposal_claim_is_read_only_when_the_answer_speaks_of_a_card():
    assert [said(c) for c in find_claims("I suggested the cards layout: accept it on its card.")] == ["suggest view"]
    assert find_claims("I suggested the cards layout.") == []


def test_each_claim_knows_its_language_and_where_it_is_in_the_answer():
    text = "Bonjour ! J’ai créé la table Contacts. Then I added 3 rows to it, and ich habe sie geprüft."
    claims = find_claims(text)
    assert [claim.language for claim in claims] == ["fr", "en"]
    for claim in claims:
        assert text[claim.span[0]:claim.span[1]] == claim.text
    assert claims[0].text.startswith("J’ai créé") and claims[1].text.startswith("Then I added 3 rows")


def test_the_locale_breaks_ties_but_the_words_decide():
    assert [c.language for c in find_claims("Fatto!", "en")] == ["it"]
    assert [said(c) for c in find_claims("Ho creato la tabella Contatti.", "de")] == ["create table 'Contatti'"]
