"""`make test` runs every level-1 dataset shipped in evals/: a failing case is a regression."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evals import library
from app.evals.runner import create_run, execute
from app.extensions import db
from app.seed import WORKSPACE_ASSISTANT

SHIPPED = sorted(p.stem for p in (Path(__file__).parents[2] / "evals").iterdir() if p.suffix in library.SUFFIXES)


def test_datasets_are_shipped():
    assert len(SHIPPED) >= 4, SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_every_case_of_the_shipped_dataset_passes(app, name):
    with app.app_context():
        dataset = library.load(name)
        run = create_run(name, dataset.agent or WORKSPACE_ASSISTANT, level=1)
        db.session.commit()
        run = execute(run.id)
        failures = {r.case_id: [f"{v['check']}: {v['detail']}" for v in r.failures] + r.errors
                    + [f"answer: {r.transcript[-1]['content'] if r.transcript else ''}"]
                    for r in run.results if not r.passed}
        assert run.status == "finished", run.error
        assert not failures, failures
        assert run.done == len(run.population["cases"]) > 0
