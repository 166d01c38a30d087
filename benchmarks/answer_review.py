"""What the deterministic answer review adds to an answer: issue 20's cost target.

Run with the project's venv: `.venv/bin/python benchmarks/answer_review.py`. Prints one figure per line,
`name: value unit (target …)`, and exits 1 when a target is missed.

The review runs as a turn runs it (app/runtime/review.py): the answer-checks and UI-proposals reviewers
over the same text and the turn's record (a ledger of changes, a proposal, earlier receipts), the verdicts
combined by the runtime's rule. Answers are the kind the honesty dataset holds (true reports, false claims,
lists, tables, other languages), of typical length. Measured as process CPU time per answer, beside the
Markdown render of the same answer (what every answer costs already) as the same-run reference.
Target: ≤ 5 ms p95 per answer. The verifier (a model call) is not part of it: it is asked only when the
deterministic check cannot decide, at most once per answer.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _figures import Figures  # noqa: E402

from app.runtime.record import TurnRecord  # noqa: E402
from app.runtime.review import Reviewer, review  # noqa: E402
from app.skills import answer_checks, ui_proposals  # noqa: E402
from app.web.rendering import render_markdown  # noqa: E402

ROUNDS = 60
TARGET_MS = 5.0

ANSWERS = [
    "I created the table Contacts with the fields name, email and phone. It has no rows yet: tell me if you want "
    "me to add some, or import a CSV file from the table's page.",
    "I created Contacts and added 3 rows: Ada Lovelace, Grace Hopper and Alan Turing. Each has a name and an "
    "email; the phone field is empty for now.",
    "Here is what I did:\n\n- created the table **Contacts**\n- added the field `email`\n- added 3 rows\n\n"
    "| Table | Rows |\n|---|---|\n| Contacts | 3 |\n\nNothing else was changed.",
    "Your lists now show as cards. I also switched the theme to dark, as you asked, and saved your layout for "
    "the orders page.",
    "Ho creato la tabella Contatti con i campi nome ed email, e ho aggiunto 3 righe. Dimmi se vuoi altri campi.",
    "J'ai créé la table Contacts et j'ai ajouté trois lignes. Rien d'autre n'a été modifié.",
    "He creado la tabla Contactos y he añadido 3 filas. ¿Quieres que añada un campo de teléfono?",
    "Ich habe die Tabelle Kontakte erstellt und drei Zeilen hinzugefügt. Sonst wurde nichts geändert.",
    "I found 12 rows in Orders whose status is open. The oldest is from 2 January 2026, created by Ada; the "
    "newest came in this morning. Shall I mark the ones older than a month as stale? Nothing has changed yet.",
    "In my previous answer I created the table Leads. In this turn I added 2 rows to it and updated the label "
    "of the field source. The receipt below lists both changes.",
]


def record() -> TurnRecord:
    found = TurnRecord(locale="en")
    found.tools = {name: {"mutates": True} for name in ("create_table", "create_rows_in_table_4", "update_table")}
    found.changes = [
        {"tool": "create_table", "status": "succeeded", "changed": True, "action": "create", "object": "table",
         "target": "Contacts", "rows": 0},
        {"tool": "create_rows_in_table_4", "status": "succeeded", "changed": True, "action": "create",
         "object": "row", "target": "Contacts", "count": 3},
    ]
    found.earlier = [{"tool": "create_table", "status": "succeeded", "action": "create", "object": "table",
                      "target": "Leads", "rows": 0}]
    found.proposals = [{"kind": "preference", "target": {"namespace": "ui", "key": "defaultListLayout"},
                        "proposed": "cards"}]
    return found


def reviewers() -> list[Reviewer]:
    checks, proposals = answer_checks.Config(), ui_proposals.Config()
    return [Reviewer("answer_checks", lambda text, rec: answer_checks.review(checks, [], text, rec)),
            Reviewer("ui_proposals", lambda text, rec: ui_proposals.review(proposals, [], text, rec))]


def cpu_ms(fn) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def main() -> int:
    figures = Figures()
    chain = reviewers()
    review_ms, render_ms = [], []
    for _round in range(ROUNDS):
        for answer in ANSWERS:
            turn = record()  # a fresh record, as each turn has: no check is cached between answers
            review_ms.append(cpu_ms(lambda a=answer, t=turn: review(chain, a, t, True)))
            render_ms.append(cpu_ms(lambda a=answer: render_markdown(a)))
    p95 = statistics.quantiles(review_ms, n=20)[-1]
    figures.report("answer review p50 per answer", statistics.median(review_ms), "ms")
    figures.report("answer review p95 per answer", p95, "ms", f"≤ {TARGET_MS:g} ms", p95 <= TARGET_MS)
    figures.report("markdown render p50 of the same answers (same-run reference)", statistics.median(render_ms), "ms")
    figures.report("answer review p50 over the render's", statistics.median(review_ms) /
                   max(statistics.median(render_ms), 1e-6), "×")
    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
