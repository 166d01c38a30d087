"""Benchmark the claims engine: the deterministic review of an answer, on realistic answers in five languages.

Run with `.venv/bin/python benchmarks/claims.py`. Prints one figure per line, `name: value unit (target …)`,
and exits 1 when a target is missed. Each round reviews every answer once, uncached (the engine keeps its
last readings: the cache is cleared first), as the runtime's answer check does: find the claims and judge
them against the turn's ledger, then the other checks (printed call, mode limit, hand-off). Times are CPU
time of this process, so other work on the shared machine does not count; the wall time is printed too, and
the cost against rendering the same answer's Markdown (markdown-it-py, what the chat does to every answer)
in the same run. Targets: p95 ≤ 5 ms per answer (issue 20); an adversarial 100,000-character answer ≤ 1 s.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _figures import Figures  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

from app.policy import claims  # noqa: E402
from app.policy.claims import Change, Suggestion  # noqa: E402

ROUNDS = 60
LONG = 200
TOOLS = ["create_table", "update_table", "list_tables", "describe_table", "create_rows_in_table_5",
         "update_rows_in_table_5", "delete_rows_in_table_5", "store_in_memory", "search_knowledge"]
LEDGER = [Change("create_table", "create", "table", "Contacts", 3, "succeeded"),
          Change("create_rows_in_table_5", "create", "row", "Contacts", 3, "succeeded"),
          Change("update_table", "update", "table", "Leads", None, "succeeded"),
          Change("create_table", "create", "table", "Orders", None, "succeeded", earlier=True)]
CARDS = [Suggestion("preference", "lists.layout", "cards")]

ANSWERS = {
    "en_summary": (
        "I've created the table **Contacts** with the fields Name, Email, Phone and Company, and added 3 sample "
        "rows so you can see how it looks. I also updated the Leads table: its Status field now has the choices "
        "New, Qualified and Lost.\n\nHere is what changed in this turn:\n\n- Contacts: created (3 rows)\n"
        "- Leads: updated (Status choices)\n\n| Table | Status |\n|---|---|\n| Contacts | created |\n"
        "| Leads | ✅ |\n\nNothing else was changed. In my previous answer I created the table Orders; it still "
        "has no rows. If you want, I can import the remaining 12 contacts from your CSV file, or set up a "
        "trigger that notifies you when a lead is marked as qualified. You can also rename the fields at any "
        "time from the table's settings page. Would you like me to add a field for the contact's city?"),
    "en_readonly": (
        "Here are the 5 most recent rows of Contacts, sorted by creation date:\n\n| Name | Email | Status |\n"
        "|---|---|---|\n| Ada Lovelace | ada@example.com | active |\n| Bob Stone | bob@example.com | created |\n"
        "| Carl Jung | carl@example.com | pending |\n| Dora Marquez | dora@example.com | active |\n"
        "| Eve Adams | eve@example.com | closed |\n\nThe table has 48 rows in total. Two contacts, Bob and Eve, "
        "have no phone number yet. I did not change anything: tell me if you want me to fill in the missing "
        "numbers, or to delete the closed contacts. The trigger Nightly runs every day at 9:00 and sends a "
        "summary to the sales team; it was created on 2026-01-02 by Ada."),
    "en_refusal": (
        "I could not add the rows: the table Contacts requires an email address for every row, and two of the "
        "rows you gave me have none. Nothing was written. Shall I add the three complete rows now and leave the "
        "other two for later, or would you rather give me the missing addresses first? Once you confirm, I'll "
        "create the rows in one go. I can't change your layout for you, but I suggested the cards layout: "
        "accept it on its card and your lists will show as cards."),
    "it_summary": (
        "Ho creato la tabella Contatti con i campi Nome, Email e Telefono, e ho aggiunto tre righe di esempio. "
        "Ho anche aggiornato la tabella Leads: il campo Stato ora ha le scelte Nuovo, Qualificato e Perso.\n\n"
        "Ecco cosa è cambiato:\n\n- Contatti: creata (3 righe)\n- Leads: aggiornata\n\nNon ho modificato "
        "nient'altro. Se vuoi, posso importare gli altri 12 contatti dal tuo file CSV oppure creare un trigger "
        "che ti avvisi quando un lead viene qualificato. Vuoi che aggiunga un campo per la città?"),
    "fr_summary": (
        "J'ai créé la table Contacts avec les champs Nom, Email et Téléphone, et j'ai ajouté trois lignes "
        "d'exemple. J'ai aussi mis à jour la table Leads : le champ Statut propose désormais les choix Nouveau, "
        "Qualifié et Perdu.\n\nVoici ce qui a changé :\n\n- Contacts : créée (3 lignes)\n- Leads : mise à jour\n\n"
        "Je n'ai rien modifié d'autre. Si vous voulez, je peux importer les 12 autres contacts de votre fichier "
        "CSV, ou créer un déclencheur qui vous prévient quand un lead est qualifié. Voulez-vous que j'ajoute un "
        "champ pour la ville ?"),
    "es_summary": (
        "He creado la tabla Contactos con los campos Nombre, Email y Teléfono, y he añadido tres filas de "
        "ejemplo. También actualicé la tabla Leads: el campo Estado ahora tiene las opciones Nuevo, Calificado y "
        "Perdido.\n\nEsto es lo que cambió:\n\n- Contactos: creada (3 filas)\n- Leads: actualizada\n\nNo he "
        "modificado nada más. Si quieres, puedo importar los otros 12 contactos de tu archivo CSV o crear un "
        "disparador que te avise cuando un lead quede calificado. ¿Quieres que añada un campo para la ciudad?"),
    "de_summary": (
        "Ich habe die Tabelle Kontakte mit den Feldern Name, E-Mail und Telefon erstellt und drei Beispielzeilen "
        "hinzugefügt. Außerdem habe ich die Tabelle Leads aktualisiert: Das Feld Status hat jetzt die Auswahl "
        "Neu, Qualifiziert und Verloren.\n\nDas hat sich geändert:\n\n- Kontakte: erstellt (3 Zeilen)\n"
        "- Leads: aktualisiert\n\nSonst habe ich nichts geändert. Wenn du möchtest, kann ich die übrigen 12 "
        "Kontakte aus deiner CSV-Datei importieren oder einen Auslöser anlegen, der dich benachrichtigt, sobald "
        "ein Lead qualifiziert ist. Soll ich ein Feld für die Stadt hinzufügen?"),
    "en_long": (
        "Here is what I did for the quarterly clean-up you asked for. First, I looked at the three tables you "
        "named. The Contacts table had 214 rows, of which 37 had no email address and 12 were exact duplicates "
        "of another row (same name, same phone). I did not delete the duplicates: two of them have different "
        "notes, and you may want to keep those notes. Instead I created the table Contacts and added 3 rows for "
        "the new partners you listed, each with name, email, phone and company filled in.\n\n"
        "Second, the Leads table: I updated its Status field so that it now offers the choices New, Contacted, "
        "Qualified and Lost, as you wanted; the 58 existing leads keep their current status. No lead was "
        "removed. Third, the Orders table, which I created in my previous answer, still has no rows: the CSV "
        "file you attached lists 12 orders, but 4 of them refer to customers that are not in Contacts, so I "
        "have not imported anything yet.\n\n"
        "What I suggest next:\n\n1. Decide what to do with the 12 duplicates (I can merge them, keeping both "
        "notes).\n2. Tell me whether the 4 orders without a known customer should create new contacts.\n"
        "3. If you want a weekly reminder to review new leads, I can set up a trigger that notifies you every "
        "Monday at 9:00.\n\nI suggested the cards layout for your lists, since most of your tables have few "
        "fields: accept it on its card if you like it, nothing changes until you do. Let me know how you want "
        "to proceed, and I will do the rest in one go."),
    "it_long": (
        "Ecco cosa ho fatto per la pulizia trimestrale che mi hai chiesto. Ho controllato le tre tabelle che "
        "hai indicato. La tabella Contatti aveva 214 righe: 37 senza indirizzo email e 12 duplicati esatti di "
        "un'altra riga. Non ho eliminato i duplicati, perché due di loro hanno note diverse che potresti voler "
        "conservare. Ho invece creato la tabella Contatti e ho aggiunto tre righe per i nuovi partner che mi "
        "hai elencato, con nome, email, telefono e azienda.\n\nPoi ho aggiornato la tabella Leads: il campo "
        "Stato ora offre le scelte Nuovo, Contattato, Qualificato e Perso; i 58 lead esistenti mantengono il "
        "loro stato. Nessun lead è stato rimosso. La tabella Ordini, che ho creato nella risposta precedente, "
        "non ha ancora righe: il file CSV che hai allegato elenca 12 ordini, ma 4 riguardano clienti che non "
        "sono in Contatti, quindi non ho importato nulla.\n\nCosa ti propongo:\n\n- Decidere cosa fare dei "
        "12 duplicati (posso unirli conservando entrambe le note).\n- Dirmi se i 4 ordini senza cliente noto "
        "devono creare nuovi contatti.\n- Se vuoi un promemoria settimanale, posso creare un trigger che ti "
        "avvisi ogni lunedì alle 9:00.\n\nFammi sapere come vuoi procedere e farò il resto in una volta sola."),
    "mixed_long": (
        "Done! I've created the table Contacts and added 3 rows. The Contacts table: ready. It holds 3 new rows "
        "now.\n\n```\nContacts: created (3 rows)\nLeads: updated\n```\n\nPoi ho aggiornato la tabella Leads. "
        "Your lists now show as cards. " * 3),
}
ADVERSARIAL = ("I have created the table Contacts and added 3 rows. \u202e" + "✅ | - : " * 4 + "'\" ") * 1_000


def review(text: str) -> None:
    """The deterministic review of one answer, uncached."""
    claims._reading.cache_clear()
    claims._claims.cache_clear()
    claims.check_claims(text, LEDGER, CARDS, "en", tools=TOOLS, calls=TOOLS[:3])
    claims.prints_tool_call(text, TOOLS)
    claims.claims_mode_limit(text, "en")
    claims.hands_off(text, "en")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    figures = Figures()
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    cpu: list[float] = []
    long: list[float] = []
    wall: list[float] = []
    rendering: list[float] = []
    for text in ANSWERS.values():  # warm the caches of the regular expressions
        review(text)
    gc.collect()
    for _ in range(ROUNDS):
        for text in ANSWERS.values():
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            review(text)
            cpu.append(time.process_time() - start_cpu)
            if len(text.split()) >= LONG:
                long.append(cpu[-1])
            wall.append(time.perf_counter() - start_wall)
            start_cpu = time.process_time()
            markdown.render(text)
            rendering.append(time.process_time() - start_cpu)
    words = statistics.mean(len(text.split()) for text in ANSWERS.values())
    p95 = percentile(cpu, 0.95) * 1000
    figures.report("claims_answer_words", words, "words (mean of the realistic answers)")
    figures.report("claims_review_p50", percentile(cpu, 0.5) * 1000, "ms CPU")
    figures.report("claims_review_p95", p95, "ms CPU", "≤ 5 ms", p95 <= 5.0)
    long_p95 = percentile(long, 0.95) * 1000
    figures.report("claims_review_long_p95", long_p95, f"ms CPU (answers of {LONG} words or more)", "≤ 5 ms",
                   long_p95 <= 5.0)
    figures.report("claims_review_wall_p95", percentile(wall, 0.95) * 1000, "ms wall (shared machine)")
    figures.report("claims_review_vs_markdown_p50", percentile(cpu, 0.5) / percentile(rendering, 0.5),
                   "× a Markdown render of the same answer")
    start = time.process_time()
    review(ADVERSARIAL)
    adversarial = (time.process_time() - start) * 1000
    figures.report("claims_adversarial_100k", adversarial, f"ms CPU ({len(ADVERSARIAL)} characters)", "≤ 1000 ms",
                   adversarial <= 1000)
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
