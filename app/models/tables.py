"""Data tables that admins define (their rows live in real SQL tables `dt_<name>`), and triggers."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.base import UTCDateTime, utcnow

TABLE_PREFIX = "dt_"
TABLE_ACTIONS = ("read", "insert", "update", "delete")
TRIGGER_KINDS = ("event", "webhook", "schedule")
# The Run.trigger values of unattended runs started by triggers (listed at /runs).
TRIGGER_SOURCES = ("table", "webhook", "schedule")


def default_permissions() -> dict[str, list[str]]:
    """Return the permissions of a new table: users may read; admins may always do everything."""
    return {"read": ["user"], "insert": [], "update": [], "delete": []}


def new_hook_token() -> str:
    """Return an unguessable webhook token (256 random bits)."""
    return secrets.token_urlsafe(32)


class DataTable(db.Model):
    """A table of records: its fields, who may read and change it, and the agent of its assistant."""

    __tablename__ = "data_tables"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    label: Mapped[str] = mapped_column(String(80))
    description: Mapped[str] = mapped_column(String(300), default="")
    # {"read": ["user", "guest"], "insert": ["user"], "update": [], "delete": []}; admins always may.
    permissions: Mapped[dict] = mapped_column(JSON, default=default_permissions)
    assistant_agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    fields: Mapped[list[DataField]] = relationship(
        back_populates="table", order_by="DataField.position, DataField.id", cascade="all, delete-orphan",
        foreign_keys="DataField.table_id")
    assistant_agent = relationship("Agent")

    @property
    def sql_name(self) -> str:
        return TABLE_PREFIX + self.name

    def field(self, name: str) -> DataField | None:
        """Return the field with that name, if any."""
        return next((f for f in self.fields if f.name == name), None)

    def __repr__(self) -> str:
        return f"<DataTable {self.id} {self.name!r}>"


class DataField(db.Model):
    """A typed column of a data table."""

    __tablename__ = "data_fields"
    __table_args__ = (UniqueConstraint("table_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("data_tables.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    label: Mapped[str] = mapped_column(String(80))
    # text | long_text | integer | decimal | boolean | date | datetime | choice | link
    kind: Mapped[str] = mapped_column(String(12))
    required: Mapped[bool] = mapped_column(default=False)
    choices: Mapped[list] = mapped_column(JSON, default=list)
    link_table_id: Mapped[int | None] = mapped_column(ForeignKey("data_tables.id", ondelete="SET NULL"))
    position: Mapped[int] = mapped_column(default=0)

    table: Mapped[DataTable] = relationship(back_populates="fields", foreign_keys=[table_id])
    link_table: Mapped[DataTable | None] = relationship(foreign_keys=[link_table_id])

    def __repr__(self) -> str:
        return f"<DataField {self.table_id}.{self.name} {self.kind}>"


class Trigger(db.Model):
    """Runs an agent unattended, as a configured user: on a table event, a webhook or a schedule."""

    __tablename__ = "triggers"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    kind: Mapped[str] = mapped_column(String(10))  # event | webhook | schedule
    active: Mapped[bool] = mapped_column(default=True)
    table_id: Mapped[int | None] = mapped_column(ForeignKey("data_tables.id", ondelete="CASCADE"))
    events: Mapped[list] = mapped_column(JSON, default=list)  # insert, update, delete
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    run_as_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    prompt: Mapped[str] = mapped_column(Text, default="")
    token: Mapped[str | None] = mapped_column(String(64), unique=True)
    cron: Mapped[str | None] = mapped_column(String(100))
    write_back_field: Mapped[str | None] = mapped_column(String(40))
    # Who decides on the calls its runs leave waiting, besides the user it runs as (and the agent's approvers).
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # How long a call of its runs waits for a decision (None: the site's DECISION_TIMEOUT_MINUTES), and what
    # applies then: deny the call, fail the run, or continue without the tool (app.models.approvals).
    decision_timeout_minutes: Mapped[int | None]
    on_timeout: Mapped[str] = mapped_column(String(10), default="deny", server_default="deny")
    # A URL told (POST, JSON, through the outbound guard) when one of its runs starts waiting.
    notify_url: Mapped[str | None] = mapped_column(String(500))
    # Whether its notifications (webhook and e-mail) carry the waiting tool calls' arguments.
    notify_arguments: Mapped[bool] = mapped_column(default=False, server_default="0")
    last_fired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    table = relationship("DataTable")
    agent = relationship("Agent")
    run_as = relationship("User", foreign_keys=[run_as_id])
    owner = relationship("User", foreign_keys=[owner_id])

    def __repr__(self) -> str:
        return f"<Trigger {self.id} {self.kind} {self.name!r}>"


class TriggerRun(db.Model):
    """Which trigger started a run, and on which row; kept, with the trigger's name, after it goes."""

    __tablename__ = "trigger_runs"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    trigger_id: Mapped[int | None] = mapped_column(ForeignKey("triggers.id", ondelete="SET NULL"), index=True)
    trigger_name: Mapped[str] = mapped_column(String(80))
    table_name: Mapped[str | None] = mapped_column(String(40))
    row_id: Mapped[int | None]
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
