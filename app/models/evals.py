"""Evaluation runs: a dataset run against an agent, and one result per case."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

EVAL_STATUSES = ("queued", "running", "finished", "failed")


class EvalRun(db.Model):
    """One run of a dataset against an agent, with what it ran on and which cases it ran."""

    __tablename__ = "eval_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset: Mapped[str] = mapped_column(String(200))
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"), index=True)
    agent_name: Mapped[str] = mapped_column(String(80))
    level: Mapped[int] = mapped_column(default=1)
    status: Mapped[str] = mapped_column(String(12), default="queued")
    error: Mapped[str | None] = mapped_column(Text)
    # git rev-parse HEAD of the code that ran, or "unknown".
    source_revision: Mapped[str] = mapped_column(String(64), default="unknown")
    # SHA-256 of the agent's configuration (instructions, skills, model, limits) as it ran.
    config_revision: Mapped[str] = mapped_column(String(64), default="")
    # The model and its settings: {"name", "provider", "model_name", "settings": {...}} or the scripted one.
    model: Mapped[dict] = mapped_column(JSON, default=dict)
    # {"cases": [ids run], "total": n, "skipped": [{"case", "reason"}]}
    population: Mapped[dict] = mapped_column(JSON, default=dict)
    done: Mapped[int] = mapped_column(default=0)
    total: Mapped[int] = mapped_column(default=0)
    passed: Mapped[int] = mapped_column(default=0)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    results = relationship("EvalCaseResult", back_populates="run", cascade="all, delete-orphan",
                           order_by="EvalCaseResult.id")

    @property
    def pass_rate(self) -> float:
        return self.passed / self.done if self.done else 0.0

    def __repr__(self) -> str:
        return f"<EvalRun {self.id} {self.dataset} {self.status}>"


class EvalCaseResult(db.Model):
    """What one case did: transcript, tool steps, errors, tokens, duration and each check's verdict."""

    __tablename__ = "eval_case_results"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("eval_runs.id", ondelete="CASCADE"), index=True)
    # The case's id, with `@transport` when the case runs over several transports.
    case_id: Mapped[str] = mapped_column(String(100))
    passed: Mapped[bool] = mapped_column(default=False)
    status: Mapped[str] = mapped_column(String(12), default="")
    transcript: Mapped[list] = mapped_column(JSON, default=list)
    steps: Mapped[list] = mapped_column(JSON, default=list)
    errors: Mapped[list] = mapped_column(JSON, default=list)
    verdicts: Mapped[list] = mapped_column(JSON, default=list)
    input_tokens: Mapped[int] = mapped_column(default=0)
    output_tokens: Mapped[int] = mapped_column(default=0)
    requests: Mapped[int] = mapped_column(default=0)
    seconds: Mapped[float] = mapped_column(default=0.0)
    # What the run observed beyond the transcript: the transport, what the client received per message, the
    # receipt, the calls waiting, the data changed, the preferences changed, the honesty facts.
    observed: Mapped[dict | None] = mapped_column(JSON)

    run = relationship("EvalRun", back_populates="results")

    @property
    def failures(self) -> list[dict]:
        return [v for v in self.verdicts if not v.get("passed")]
