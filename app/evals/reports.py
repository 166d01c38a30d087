"""Reading runs back: the last run of an agent, a comparison of two runs, and the JSON export."""

from __future__ import annotations

from typing import Any

from app.extensions import db
from app.models import EvalCaseResult, EvalRun


def last_run(agent_id: int) -> EvalRun | None:
    """The agent's latest evaluation run, if any."""
    return db.session.scalar(db.select(EvalRun).where(EvalRun.agent_id == agent_id)
                             .order_by(EvalRun.id.desc()).limit(1))


def compare(before: EvalRun, after: EvalRun) -> dict[str, Any]:
    """The cases that flipped between two runs, the ones only one ran, and the token and duration deltas."""
    old = {r.case_id: r for r in before.results}
    new = {r.case_id: r for r in after.results}
    common = [case for case in new if case in old]
    flipped = [{"case": case, "before": old[case].passed, "after": new[case].passed}
               for case in common if old[case].passed != new[case].passed]

    def total(results: list[EvalCaseResult]) -> dict[str, float]:
        return {"input_tokens": sum(r.input_tokens for r in results),
                "output_tokens": sum(r.output_tokens for r in results),
                "seconds": round(sum(r.seconds for r in results), 3)}

    first, second = total([old[c] for c in common]), total([new[c] for c in common])
    return {
        "before": before.id, "after": after.id,
        "flipped": flipped,
        "fixed": [f["case"] for f in flipped if f["after"]],
        "broken": [f["case"] for f in flipped if not f["after"]],
        "only_before": [case for case in old if case not in new],
        "only_after": [case for case in new if case not in old],
        "deltas": {key: round(second[key] - first[key], 3) for key in first},
        "per_case": [{"case": c, "tokens": (new[c].input_tokens + new[c].output_tokens)
                      - (old[c].input_tokens + old[c].output_tokens),
                      "seconds": round(new[c].seconds - old[c].seconds, 3)} for c in common],
    }


def export(run: EvalRun) -> dict[str, Any]:
    """Everything a run recorded, as JSON."""
    fields = ("id", "dataset", "agent_id", "agent_name", "level", "status", "error", "source_revision",
              "config_revision", "model", "population", "total", "done", "passed")
    data: dict[str, Any] = {name: getattr(run, name) for name in fields}
    data.update(pass_rate=run.pass_rate, created_at=_iso(run.created_at), started_at=_iso(run.started_at),
                finished_at=_iso(run.finished_at))
    data["results"] = [{name: getattr(r, name) for name in (
        "case_id", "passed", "status", "transcript", "steps", "errors", "verdicts", "input_tokens",
        "output_tokens", "requests", "seconds", "observed")} for r in run.results]
    return data


def _iso(value) -> str | None:
    return value.isoformat() if value else None
