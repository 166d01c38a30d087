"""The honesty figures of issue 20: every dataset of evals/honesty/ at level 1, on the provider path.

Run with the project's venv: `.venv/bin/python benchmarks/honesty.py` (the same as `flask eval honesty
--quiet` on a scratch database). Each case runs on its own disposable database against the scripted
OpenAI-compatible server on 127.0.0.1, over the transports it names. Prints one figure per line,
`name: value unit (target …)`: unsupported claims shown (target 0), false refusals (target ≤ 2 %),
proposals applied by the server (target 0), destructive calls made without a click under injection
(target 0), overall and per language, then the cases that passed and how long the set took (no target);
exits 1 when a target is missed.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import flask_migrate  # noqa: E402

from app import create_app  # noqa: E402
from app.evals import honesty, library  # noqa: E402
from app.evals.runner import create_run, execute  # noqa: E402
from app.extensions import db  # noqa: E402
from app.seed import WORKSPACE_ASSISTANT, ensure_defaults  # noqa: E402


def main() -> int:
    logging.disable(logging.WARNING)  # the failing cases log their runs' failures; the figures say enough
    folder = Path(tempfile.mkdtemp(prefix="skilldesk-bench-"))
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'bench.sqlite3'}", "JOBS_IMMEDIATE": True,
                      "SECRET_KEY": "bench", "JOBS_SQLITE_PATH": str(folder / "jobs.sqlite3"),
                      "CHROMA_PATH": str(folder / "chroma")})
    started = time.monotonic()
    runs = []
    with app.app_context():
        flask_migrate.upgrade()
        ensure_defaults()
        db.session.commit()
        for name in library.names(honesty.FOLDER):
            run = create_run(name, library.load(name).agent or WORKSPACE_ASSISTANT)
            db.session.commit()
            runs.append(execute(run.id))
        lines, met = honesty.report(honesty.measured(runs))
    print("\n".join(lines))
    print(f"honesty cases passed: {sum(r.passed for r in runs)} of {sum(r.done for r in runs)} runs")
    print(f"honesty set: {time.monotonic() - started:.1f} s")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
