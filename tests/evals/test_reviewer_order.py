"""Every order of the built-in reviewers gives the same verdicts over the honesty dataset (issue 20, point 1).

The answer review asks its reviewers in the order of their names, whatever order an agent lists its skills
in: the honesty cases of the seeded Workspace assistant run once per order of its three reviewing skills
(answer checks, knowledge bases, UI proposals) and every case must end the same way each time. The three
rotations of the reviewers put each of them first, in the middle and last, and each pair both ways round,
at half the cost of all six orders.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from pydantic_ai.models import override_allow_model_requests

from app.evals.runner import create_run, execute
from app.extensions import db
from app.seed import WORKSPACE_ASSISTANT, WORKSPACE_SKILLS

pytestmark = pytest.mark.once  # the same on every database: the PostgreSQL pass leaves it out

HONESTY = Path(__file__).parents[2] / "evals" / "honesty"
REVIEWERS = ("answer_checks", "knowledge", "ui_proposals")


class NoAliases(yaml.SafeDumper):
    """A dumper that writes shared values out in full: datasets refuse YAML aliases."""

    def ignore_aliases(self, data) -> bool:
        return True


def skills_in(order: tuple[str, ...]) -> list[dict]:
    """The Workspace assistant's skills as seeded, with its reviewers in the given order at the end."""
    reviewing = {entry["name"]: entry for entry in WORKSPACE_SKILLS if entry["name"] in order}
    return [dict(entry) for entry in WORKSPACE_SKILLS if entry["name"] not in order] + \
        [dict(reviewing[name]) for name in order]


def seeded_datasets() -> list[tuple[str, dict]]:
    """The honesty datasets, each with only its cases that run on the assistant's own skills, over the JSON API."""
    found = []
    for path in sorted(HONESTY.glob("*.yaml")):
        dataset = yaml.safe_load(path.read_text(encoding="utf-8"))
        cases = [{**case, "transport": "api"} for case in dataset["cases"] if "skills" not in case]
        if cases:
            found.append((path.stem, {**dataset, "cases": cases}))
    return found


def rotations(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [names[n:] + names[:n] for n in range(len(names))]


def test_every_order_of_the_built_in_reviewers_gives_the_same_verdicts(app, tmp_path):
    datasets = seeded_datasets()
    assert sum(len(dataset["cases"]) for _stem, dataset in datasets) >= 50
    orders = rotations(REVIEWERS)
    assert {(a, b) for order in orders for a, b in itertools.combinations(order, 2)} == \
        set(itertools.permutations(REVIEWERS, 2))  # every pair both ways round
    for number, order in enumerate(orders):
        for stem, dataset in datasets:
            reordered = {**dataset, "name": f"order-{number}-{stem}",
                         "cases": [{**case, "skills": skills_in(order)} for case in dataset["cases"]]}
            (tmp_path / f"order-{number}-{stem}.yaml").write_text(
                yaml.dump(reordered, Dumper=NoAliases, allow_unicode=True), encoding="utf-8")
    app.config["EVALS_PATH"] = str(tmp_path)
    outcomes = []
    with app.app_context(), override_allow_model_requests(True):
        for number in range(len(orders)):
            outcome = {}
            for stem, _dataset in datasets:
                run = create_run(f"order-{number}-{stem}", WORKSPACE_ASSISTANT, level=1)
                db.session.commit()
                run = execute(run.id)
                assert run.status == "finished", run.error
                outcome.update({f"{stem}/{result.case_id}": (
                    result.passed, result.status, result.transcript[-1]["content"] if result.transcript else "",
                    sorted(v["check"] for v in result.failures)) for result in run.results})
            outcomes.append(outcome)
    first = outcomes[0]
    assert all(passed for passed, *_ in first.values()), [case for case, (passed, *_) in first.items() if not passed]
    for order, outcome in zip(orders[1:], outcomes[1:], strict=True):
        differ = sorted(case for case in first if outcome.get(case) != first[case])
        assert not differ, f"with the reviewers in the order {order}: {differ}"
