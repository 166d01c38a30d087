"""The other checks of an answer, in five languages: a printed tool call, a mode limit, a hand-off, saying what
is unfinished; and the yes/no questions other modules ask (claims_change, claims_applied, detect_language)."""

from __future__ import annotations

import pytest

from app.policy.claims import (
    claims_applied,
    claims_change,
    claims_mode_limit,
    detect_language,
    hands_off,
    prints_tool_call,
    says_unfinished,
)
from app.policy.proposals import PENDING


@pytest.mark.parametrize(("text", "tools"), [
    ("<tool_call>{}</tool_call>", []), ('{"tool_calls": [{"name": "x"}]}', []), ("functions.create_table({})", []),
    ('create_table({"label": "Contacts"})', ["create_table"]), ("`add_rows()`", ["add_rows"]),
    ('{"name": "add_rows", "arguments": {}}', ["add_rows"]),
])
def test_a_printed_tool_call_is_found(text, tools):
    assert prints_tool_call(text, tools)


@pytest.mark.parametrize("text", ["add rows to it", "The add_rows tool adds rows.", "I used create_table."])
def test_a_mentioned_tool_is_no_printed_call(text):
    assert not prints_tool_call(text, ["add_rows", "create_table"])


@pytest.mark.parametrize("text", [
    "I can't create triggers in the current mode.", "I cannot do that in this mode.",
    "Switch to the automation mode and I will do it.", "Non posso farlo in questa modalità.",
    "In questa modalità non posso creare trigger.", "Je ne peux pas le faire dans ce mode.",
    "No puedo hacerlo en este modo.", "Das kann ich in diesem Modus nicht.", "Wechsle in den Modus Automatisierung.",
])
def test_a_mode_limit_is_found_in_every_language(text):
    assert claims_mode_limit(text)


@pytest.mark.parametrize("text", [
    "I cannot see that table: you have no access to it.", "Dark mode is on in your settings.",
    "La modalità scura è attiva.", "De este modo los datos quedan ordenados.",
])
def test_other_sentences_are_no_mode_limit(text):
    assert not claims_mode_limit(text)


@pytest.mark.parametrize("text", [
    "You can add the rows yourself from the table page.", "Please do it manually.", "You'll need to add them by hand.",
    "Puoi aggiungerla manualmente.", "Fallo tu stesso dalla pagina.", "Vous pouvez le faire manuellement.",
    "Faites-le vous-même.", "Puedes hacerlo manualmente.", "Hazlo tú mismo.", "Du kannst das manuell machen.",
])
def test_a_hand_off_is_found_in_every_language(text):
    assert hands_off(text)


@pytest.mark.parametrize("text", ["I added it for you.", "I did it manually for you.", "L'ho aggiunta io.",
                                  "Ho inserito i dati manualmente."])
def test_doing_the_work_is_no_hand_off(text):
    assert not hands_off(text)


@pytest.mark.parametrize("text", [
    "I have imported 2 rows; 3 rows are remaining.", "Only 2 rows were added.", "The import failed.",
    "Not all rows could be written.", "Ho importato 2 righe, ne mancano 3.", "Non ho ancora finito.",
    "Il reste trois lignes à importer.", "Je n'ai pas pu tout importer.", "Faltan tres filas.", "Todavía no terminé.",
    "Drei Zeilen fehlen noch.", "Das konnte nicht abgeschlossen werden.",
])
def test_saying_what_is_unfinished_is_heard_in_every_language(text):
    assert says_unfinished(text)


@pytest.mark.parametrize("text", ["I have created the table Contacts.", "Ho creato la tabella."])
def test_a_finished_answer_does_not_say_unfinished(text):
    assert not says_unfinished(text)


@pytest.mark.parametrize(("text", "language"), [
    ("I have created the table.", "en"), ("Ho creato la tabella Contatti.", "it"), ("J'ai créé la table.", "fr"),
    ("He creado la tabla.", "es"), ("Ich habe die Tabelle erstellt.", "de"),
    ("Ho creato la tabella. Then I added rows. Poi ho aggiunto tre righe alla tabella.", "it"),
])
def test_the_language_of_an_answer_is_read_from_its_words(text, language):
    assert detect_language(text, "en" if language != "en" else "de") == language


def test_an_answer_without_words_takes_the_locale():
    assert detect_language("✅", "fr-FR") == "fr" and detect_language("", None) == "en"


def test_claims_change_counts_claims_of_this_turn_but_no_suggestion():
    assert claims_change("I've deleted the row.") and claims_change("La tabella è stata creata.")
    assert claims_change("J’ai supprimé la ligne.") and claims_change("Ich habe die Zeile gelöscht.")
    assert not claims_change("In my previous answer I created the table Leads.")
    assert not claims_change(PENDING["en"]) and not claims_change(PENDING["it"])


@pytest.mark.parametrize("text", [
    "I have updated your layout.", "Done!", "C'est fait : j'ai appliqué la vue en cartes.", "He cambiado el diseño.",
    "Ich habe die Ansicht umgestellt.", "Your lists now show as cards.",
])
def test_claims_applied_hears_every_language(text):
    assert claims_applied(text)


@pytest.mark.parametrize("text", [PENDING["en"], PENDING["it"], "I have created the table Contacts.",
                                  "I suggest the cards layout."])
def test_claims_applied_is_not_a_suggestion_or_a_creation(text):
    assert not claims_applied(text)
