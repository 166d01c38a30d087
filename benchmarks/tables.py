"""Benchmark data tables: the list page at 1,000 and 100,000 rows, and CSV import speed.

Run with the project's venv: `.venv/bin/python benchmarks/tables.py`. Prints one figure per line,
`name: value unit (target …)`, and exits 1 when a target is missed. Pages are fetched through the
app (routing, sign-in check, permissions, query, count, template) with Flask's test client, the
two sizes interleaved round by round because the machine is shared and noisy.

(a) the first page of /data/<table> at 1k and at 100k rows: p50 and p95, and the p50 ratio
    (target ≤ 2: a page must not grow with the table);
(b) other pages at 100k rows — the last page, a sort on an unindexed field, a filter, a search
    (reported, no target: they scan the table);
(c) CSV import of 20,000 rows through the admin pages, preview and confirmation together
    (target ≥ 5,000 rows/s).
"""

from __future__ import annotations

import csv
import io
import random
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import flask_migrate  # noqa: E402
from _figures import Figures, timed  # noqa: E402

from app import create_app  # noqa: E402
from app.accounts.users import create_user  # noqa: E402
from app.extensions import db  # noqa: E402
from app.models.base import utcnow  # noqa: E402
from app.tables.schema import add_field, create_table, sql_table  # noqa: E402

PASSWORD = "benchmark password"
ROUNDS = 6
PER_ROUND = 10
IMPORT_ROWS = 20_000
FIELDS = [
    ("customer", "text", None),
    ("amount", "decimal", None),
    ("status", "choice", ["open", "closed", "held"]),
    ("qty", "integer", None),
    ("due", "date", None),
    ("notes", "long_text", None),
]


def fill(name: str, count: int) -> None:
    """Create a table with the benchmark's fields and `count` rows."""
    definition = create_table(name, name.title())
    for field, kind, choices in FIELDS:
        add_field(definition, field, field.title(), kind, choices=choices)
    definition.permissions = {"read": ["user"], "insert": [], "update": [], "delete": []}
    db.session.commit()
    table = sql_table(definition)
    rng = random.Random(7)
    now, start = utcnow(), date(2026, 1, 1)
    for first in range(0, count, 5_000):
        db.session.execute(
            table.insert(),
            [
                {
                    "customer": f"Customer {n}",
                    "amount": Decimal(rng.randint(100, 99_999)) / 100,
                    "status": rng.choice(["open", "closed", "held"]),
                    "qty": rng.randint(1, 50),
                    "due": start + timedelta(days=n % 365),
                    "notes": f"Order {n}: {rng.random():.6f}",
                    "created_at": now,
                    "updated_at": now,
                }
                for n in range(first, min(first + 5_000, count))
            ],
        )
    db.session.commit()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def get(client, url: str):
    def fetch() -> None:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)

    return fetch


def import_csv(client, rows: int) -> float:
    """Import a generated CSV into a new table through the admin pages; returns the seconds taken."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["customer", "amount", "status", "qty", "due", "notes"])
    for n in range(rows):
        writer.writerow(
            [
                f"Customer {n}",
                f"{n % 1000}.25",
                ["open", "closed"][n % 2],
                n % 50,
                (date(2026, 1, 1) + timedelta(days=n % 365)).isoformat(),
                f"note {n}",
            ]
        )
    data = buffer.getvalue().encode()
    client.post("/admin/tables/", data={"name": "imported", "label": "Imported"})
    start = time.perf_counter()
    preview = client.post(
        "/admin/tables/imported/import",
        data={"file": (io.BytesIO(data), "orders.csv")},
        content_type="multipart/form-data",
    )
    page = preview.text
    token = page.split('name="token" value="')[1].split('"')[0]
    form = {"token": token}
    for chunk in page.split('name="shown-')[1:]:
        index, kind = chunk.split('"')[0], chunk.split('value="')[1].split('"')[0]
        form[f"shown-{index}"] = form[f"kind-{index}"] = kind
    confirmed = client.post("/admin/tables/imported/import/confirm", data=form)
    elapsed = time.perf_counter() - start
    assert confirmed.status_code == 302, confirmed.text[:500]
    return elapsed


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="skilldesk-bench-tables-"))
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'bench.sqlite3'}",
            "JOBS_IMMEDIATE": True,
            "SECRET_KEY": "bench",
            "JOBS_SQLITE_PATH": str(folder / "j.db"),
            "WTF_CSRF_ENABLED": False,
            "IMPORTS_PATH": str(folder / "imports"),
        }
    )
    with app.app_context():
        flask_migrate.upgrade()
        create_user("user@example.org", "Bench", PASSWORD, "user")
        create_user("admin@example.org", "Admin", PASSWORD, "admin")
        db.session.commit()
        fill("small", 1_000)
        fill("large", 100_000)

    figures = Figures()
    report = figures.report

    client = app.test_client()
    client.post("/login", data={"email": "user@example.org", "password": PASSWORD})
    small_page, large_page = get(client, "/data/small"), get(client, "/data/large")
    for _ in range(5):  # warm up
        small_page()
        large_page()
    small, large = [], []
    for _ in range(ROUNDS):
        small += timed(small_page, PER_ROUND)
        large += timed(large_page, PER_ROUND)
    small_p50, large_p50 = statistics.median(small) * 1000, statistics.median(large) * 1000
    report("list_1k_p50", small_p50, "ms")
    report("list_1k_p95", p95(small) * 1000, "ms")
    report("list_100k_p50", large_p50, "ms")
    report("list_100k_p95", p95(large) * 1000, "ms", "≤ 250 ms", p95(large) * 1000 <= 250)
    report("list_100k_vs_1k_ratio", large_p50 / small_p50, "x", "≤ 2", large_p50 / small_p50 <= 2)

    for name, url in (
        ("last_page", "/data/large?page=4000"),
        ("sorted_by_amount", "/data/large?sort=-amount"),
        ("filtered_status", "/data/large?f=status:eq:held"),
        ("search", "/data/large?q=Customer+99"),
    ):
        report(f"list_100k_{name}_p50", statistics.median(timed(get(client, url), 10)) * 1000, "ms")

    admin = app.test_client()
    admin.post("/login", data={"email": "admin@example.org", "password": PASSWORD})
    seconds = import_csv(admin, IMPORT_ROWS)
    report(
        "csv_import_rows_per_second",
        IMPORT_ROWS / seconds,
        "rows/s",
        "≥ 5,000",
        IMPORT_ROWS / seconds >= 5_000,
    )

    return figures.print()


if __name__ == "__main__":
    sys.exit(main())
