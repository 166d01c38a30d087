"""Why a run failed, in Skilldesk's words: no exception text or library link reaches a user.

`describe(error)` returns what the user is told and the detail an admin sees on the run's page (None when
the message is already the whole story). Errors Skilldesk raises for people to read (a missing secret, a
refused address, a model that cannot be used) are shown as they are; a provider's own answer is shown
with its status, without links; anything else becomes a plain sentence and its text goes to the detail.
"""

from __future__ import annotations

import json
import re

from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior

from app.guards.credentials import MissingSecret
from app.guards.outbound import OutboundRefused
from app.knowledge.embeddings import EmbeddingsError
from app.knowledge.memories import MemoryUnavailable
from app.runtime.providers import ModelUnavailable
from app.runtime.skill import SkillNotInstalled

# Raised by Skilldesk with a message written for the person who reads it.
SAID_FOR_PEOPLE = (ModelUnavailable, OutboundRefused, MissingSecret, EmbeddingsError, MemoryUnavailable,
                   SkillNotInstalled)
DETAIL_CHARS = 4_000
SHOWN_CHARS = 300
LINK = re.compile(r"\(?\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)

MODEL_MISBEHAVED = ("The model kept giving answers that could not be used, so this turn stopped. What it had done "
                    "is kept; send your message again, or ask an admin to check the agent's model.")
UNREACHABLE = "The model's provider could not be reached. Try again in a moment; what this turn did is kept."
TOOL_RETRIES = ("The tool was not run: the model kept calling it with arguments it could not use. Say plainly what "
                "could not be done.")
UNEXPECTED = ("Something went wrong while this answer was being written. What this turn had done is kept; an "
              "admin can see the details on the run's page.")


def describe(error: BaseException) -> tuple[str, str | None]:
    """Return (what the user is told, the detail for admins or None)."""
    error = _leaf(error)
    if isinstance(error, SAID_FOR_PEOPLE):
        return str(error), None
    if isinstance(error, ModelHTTPError):
        return _without_links(provider_error(error)), provider_error(error)[:DETAIL_CHARS]
    if isinstance(error, UnexpectedModelBehavior):
        return MODEL_MISBEHAVED, _detail(error)
    if isinstance(error, ModelAPIError):
        return UNREACHABLE, _detail(error)
    return UNEXPECTED, _detail(error)


def tool_failure(error: BaseException) -> str:
    """What a tool step says when the call raised: the error's own text, without library links.

    A call the model kept getting wrong (pydantic-ai's "exceeded max retries") is said in Skilldesk's words.
    """
    if isinstance(error, UnexpectedModelBehavior):
        return TOOL_RETRIES
    return _without_links(f"{type(error).__name__}: {error}")


def in_words(error: BaseException) -> str:
    """A short reason for a sentence Skilldesk writes around it (a compaction notice): no type names or links."""
    error = _leaf(error)
    if isinstance(error, SAID_FOR_PEOPLE):
        return str(error)
    if isinstance(error, UnexpectedModelBehavior):
        return "the model kept giving answers that could not be used"
    if isinstance(error, ModelHTTPError):
        return _without_links(provider_error(error))
    return _without_links(str(error)) or "an unexpected error"


def said_for_people(error: BaseException) -> str | None:
    """Return the message of an error Skilldesk wrote for people anywhere in the chain, or None."""
    leaf = _leaf(error)
    return str(leaf) if isinstance(leaf, SAID_FOR_PEOPLE) else None


def provider_error(error: ModelHTTPError) -> str:
    """Say what the provider answered, as it said it."""
    body = error.body
    if isinstance(body, dict):  # {"error": {"message": …}}, {"error": "…"}, or from openai {"message": …}
        body = body["error"] if isinstance(body.get("error"), dict | str) else body
        body = body["message"] if isinstance(body, dict) and isinstance(body.get("message"), str) else body
    detail = body if isinstance(body, str) else json.dumps(body)[:500] if body else error.message
    # Notes say what was tried before giving up (compaction adds why the request could not be shortened).
    notes = "".join(f" {note}" for note in getattr(error, "__notes__", ()))
    return f"The provider answered {error.status_code}: {detail}{notes}"


def _leaf(error: BaseException) -> BaseException:
    """The error to describe: one Skilldesk wrote for people anywhere in the chain (a client library may wrap
    it: the MCP client raises "Client failed to connect" from a refused address), else the first error of an
    exception group (a task group's), else the error itself."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SAID_FOR_PEOPLE):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(cause for cause in (current.__cause__, current.__context__) if cause is not None)
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _without_links(text: str) -> str:
    text = " ".join(LINK.sub("", text).split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _detail(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:DETAIL_CHARS]
