"""Instance settings an admin changes at run time (switching the assistant off, for instance)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.base import UTCDateTime, utcnow


class InstanceSetting(db.Model):
    """One named setting of the whole instance, as JSON; a missing row means the default."""

    __tablename__ = "instance_settings"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    value: Mapped[object] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    def __repr__(self) -> str:
        return f"<InstanceSetting {self.key}>"
