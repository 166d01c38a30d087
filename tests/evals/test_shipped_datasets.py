"""`make test` runs every level-1 dataset shipped in evals/ (and its folders): a failing case is a regression.

The honesty datasets (evals/honesty/) run on the provider path, against the scripted OpenAI-compatible
server on 127.0.0.1: model requests are allowed while they run, and the only model any case can reach is
that server.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests

from app.evals import library
from app.evals.dataset import parse
from app.evals.runner import create_run, execute
from app.extensions import db
from app.seed import WORKSPACE_ASSISTANT

EVALS = Path(__file__).parents[2] / "evals"
SHIPPED = sorted([p.stem for p in EVALS.iterdir() if p.suffix in library.SUFFIXES]
                 + [f"{p.parent.name}/{p.stem}" for p in EVALS.glob("*/*") if p.suffix in library.SUFFIXES])
HONESTY = [parse(p.read_text(encoding="utf-8")) for p in sorted((EVALS / "honesty").iterdir())
           if p.suffix in library.SUFFIXES]
REVIEWED = ("answer_checks", "knowledge", "ui_proposals", "workspace", "action_memory")


def test_datasets_are_shipped():
    assert len(SHIPPED) >= 4, SHIPPED
    assert len(HONESTY) >= 1 and all(name in SHIPPED for name in ("honesty/claims", "honesty/injection"))


def test_the_honesty_set_covers_every_point_on_every_transport():
    cases = [case for dataset in HONESTY for case in dataset.cases]
    assert len(cases) >= 100, len(cases)
    assert {case.model for case in cases} == {"provider"}
    covered = {(case.honesty.kind, transport) for case in cases if case.honesty for transport in case.transports}
    kinds = ("unsupported_claim", "true_claim", "injection", "proposal", "citation")
    missing = [(kind, transport) for kind in kinds for transport in ("api", "htmx", "agui")
               if (kind, transport) not in covered]
    assert not missing, f"add a case of each kind over each transport: {missing}"
    languages = {(case.honesty.kind, case.honesty.language) for case in cases if case.honesty}
    missing = [(kind, language) for kind in ("unsupported_claim", "true_claim", "injection", "proposal")
               for language in ("en", "it", "fr", "es", "de") if (kind, language) not in languages]
    assert not missing, f"add a case of each kind in each language: {missing}"
    # Each combination of the reviewer and workspace skills, and the seeded Workspace assistant as it ships.
    combinations = {frozenset(skill["name"] for skill in case.skills) for case in cases if case.skills is not None}
    wanted = {frozenset(combo) for size in range(len(REVIEWED) + 1) for combo in itertools.combinations(REVIEWED, size)}
    assert not wanted - combinations, sorted(sorted(combo) for combo in wanted - combinations)
    assert sum(1 for case in cases if case.skills is None) >= 50
    assert {dataset.agent for dataset in HONESTY} == {WORKSPACE_ASSISTANT}


@pytest.mark.parametrize("name", SHIPPED)
def test_every_case_of_the_shipped_dataset_passes(app, name):
    with app.app_context(), override_allow_model_requests(True):
        dataset = library.load(name)
        run = create_run(name, dataset.agent or WORKSPACE_ASSISTANT, level=1)
        db.session.commit()
        run = execute(run.id)
        failures = {r.case_id: [f"{v['check']}: {v['detail']}" for v in r.failures] + r.errors
                    + [f"answer: {r.transcript[-1]['content'] if r.transcript else ''}"]
                    for r in run.results if not r.passed}
        assert run.status == "finished", run.error
        assert not failures, failures
        assert run.done == run.total > 0
