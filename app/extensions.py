"""Flask extensions, created here and bound to an app with init_app."""

from __future__ import annotations

from flask import has_request_context, request
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

from app.jobs import Jobs

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Database(SQLAlchemy):
    def paginate(self, select, *, page: int | None = None, per_page: int | None = None, **kwargs):
        """Flask-SQLAlchemy's paginate, reading `?page=` and `?per_page=` like every integer we read.

        Its own parser uses a bare int(), so a huge page overflowed the OFFSET (a 500); read through
        the request's bounded `type=int`, a number out of range falls back to the default.
        """
        if has_request_context():
            if page is None:
                page = request.args.get("page", 1, type=int)
            if per_page is None:
                per_page = request.args.get("per_page", 20, type=int)
        return super().paginate(select, page=page, per_page=per_page, **kwargs)


db = Database(model_class=Base)
migrate = Migrate()
login_manager = LoginManager()
csrf = CSRFProtect()
jobs = Jobs()
