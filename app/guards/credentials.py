"""People's own credentials: saved encrypted, never shown back in full, filled into tool settings.

Admins write settings such as an MCP header `Authorization: Bearer {credential:github}`; at run time
`{credential:NAME}` becomes the acting user's saved value and `{env:NAME}` the server's environment
variable, so no secret is stored in an agent's configuration.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from typing import Annotated

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app
from pydantic import AfterValidator

from app.extensions import db
from app.models.credentials import Credential

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MAX_VALUE_CHARS = 8_000
PLACEHOLDER = re.compile(r"\{(env|credential):([^{}]*)\}")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MissingSecret(Exception):
    """A setting names an environment variable or a saved credential that is not there."""


def _fernet() -> Fernet:
    # Derived, not stored: rotating SECRET_KEY makes old credentials unreadable (users save them again).
    secret = str(current_app.config["SECRET_KEY"]).encode()
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"skilldesk credentials").derive(secret)
    return Fernet(base64.urlsafe_b64encode(key))


def check_name(name: str) -> str | None:
    """Return what is wrong with a credential name, or None."""
    if not NAME.match(name):
        return "Use 1 to 64 letters, digits, dots, dashes or underscores."
    return None


def hint_of(value: str) -> str:
    """Return the little of a value that may be shown back: its last 4 characters, if it is long."""
    return value[-4:] if len(value) >= 16 else ""


def user_credentials(user_id: int) -> list[Credential]:
    """Return a user's credentials by name (the rows hold no readable value)."""
    return list(db.session.scalars(
        db.select(Credential).where(Credential.user_id == user_id).order_by(Credential.name)))


def save_credential(user_id: int, name: str, value: str) -> Credential:
    """Store (or replace) a user's credential, encrypted; the caller commits."""
    credential = db.session.scalar(
        db.select(Credential).where(Credential.user_id == user_id, Credential.name == name))
    if credential is None:
        credential = Credential(user_id=user_id, name=name)
        db.session.add(credential)
    credential.secret = _fernet().encrypt(value.encode()).decode()
    credential.hint = hint_of(value)
    return credential


def credential_value(user_id: int, name: str) -> str | None:
    """Return the decrypted value of a user's credential, or None when there is none."""
    token = db.session.scalar(
        db.select(Credential.secret).where(Credential.user_id == user_id, Credential.name == name))
    if token is None:
        return None
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as error:
        raise MissingSecret(f"Your saved credential {name!r} was saved under an older server key; "
                            "save it again on the Credentials page.") from error


def credential_values(user_id: int) -> list[str]:
    """Return the decrypted values of all of a user's credentials (those saved under an older key are skipped)."""
    fernet, values = _fernet(), []
    for token in db.session.scalars(db.select(Credential.secret).where(Credential.user_id == user_id)):
        try:
            values.append(fernet.decrypt(token.encode()).decode())
        except InvalidToken:
            continue  # unreadable to us, so no run can have been given it
    return values


def check_template(text: str) -> str | None:
    """Return what is wrong with the {env:NAME} / {credential:NAME} placeholders of a setting, or None."""
    for kind, name in PLACEHOLDER.findall(text):
        if kind == "env" and not ENV_NAME.match(name):
            return f"{{env:{name}}} does not name an environment variable (letters, digits, underscores)."
        if kind == "credential" and check_name(name):
            return f"{{credential:{name}}} is not a credential name (letters, digits, . - _)."
    return None


def fill_template(text: str, user_id: int | None, environ: Mapping[str, str] | None = None) -> str:
    """Replace {env:NAME} and {credential:NAME} in a setting; needs an app context for credentials."""
    environ = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        kind, name = match.groups()
        if kind == "env":
            if not environ.get(name):
                raise MissingSecret(f"The environment variable {name} is not set on the server; "
                                    "an admin must set it.")
            return environ[name]
        found = credential_value(user_id, name) if user_id is not None else None
        if not found:
            raise MissingSecret(f"This tool needs your credential {name!r}: save it on the Credentials page.")
        return found

    return PLACEHOLDER.sub(value, text)


HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")


def check_header(line: str) -> str | None:
    """Return what is wrong with a header setting written as `Name: value`, or None."""
    name, colon, template = line.partition(":")
    if not colon or not HEADER_NAME.match(name.strip()):
        return f"Write each header as Name: value ({line[:40]!r} is not)."
    return check_template(template)


def header_lines(value: list[str]) -> list[str]:
    """Validate header settings (one `Name: value` a line), dropping blank lines."""
    lines = [line.strip() for line in value if line.strip()]
    for line in lines:
        if problem := check_header(line):
            raise ValueError(problem)
    return lines


# A skill setting holding headers: `headers: HeaderLines = Field(default_factory=list, ...)`.
HeaderLines = Annotated[list[str], AfterValidator(header_lines)]


def fill_headers(lines: list[str], user_id: int | None,
                 environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Turn `Name: value` settings into headers, placeholders filled for the acting user."""
    headers = {}
    for line in lines:
        name, _, template = line.partition(":")
        headers[name.strip()] = fill_template(template.strip(), user_id, environ)
    return headers
