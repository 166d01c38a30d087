"""Reuse by exact name: what differs between a requested definition and the existing one, and sample data.

Reuse never overwrites: differences are reported and applied only with `confirm`, and settings the
existing resource holds differently are listed as unapplied.
"""

from __future__ import annotations

import re
from typing import Any

# Words of the user's own prompt that authorize invented records (English and Italian).
SAMPLE_WORDS = re.compile(r"\b(example|examples|demo|demos|sample|samples|esempio|esempi|dimostrativ\w*)\b",
                          re.IGNORECASE)
ASK_BEFORE_CHANGING = ("Tell the user exactly how the existing {what} differs from the request and ask "
                       "(ask_user_question) before changing it; call again with confirm=true only once they "
                       "agreed, or if they already asked for these changes.")
NO_SAMPLE_DATA = ("Nothing was created. The user did not ask for an example, demo or sample: do not invent "
                  "records. Ask (ask_user_question) whether to create a table with sample data, agree on its "
                  "fields first, or use data they point to.")


def sample_data_authorized(prompt: str | None) -> bool:
    """Tell whether the user's prompt of this turn asks for an example, a demo or sample data."""
    return bool(prompt and SAMPLE_WORDS.search(prompt))


def differences(existing: dict[str, Any], requested: dict[str, Any]) -> list[str]:
    """List, in words, the requested settings the existing resource holds differently (None = not requested)."""
    out = []
    for key, value in requested.items():
        if value is None or value == existing.get(key):
            continue
        out.append(f"{key}: the existing value is {existing.get(key)!r}, the request says {value!r}")
    return out


def reused(kind: str, name: str, resource_id: int, diffs: list[str], extra: dict[str, Any]) -> dict[str, Any]:
    """Return the result of a creation that found an existing resource of the same name."""
    result: dict[str, Any] = {"changed": False, "reused": True, **extra, "id": resource_id}
    if diffs:
        result["differences"] = diffs
        result["summary"] = (f"A {kind} named {name!r} already exists (id {resource_id}) and differs from the "
                             "request; nothing was changed.")
        result["next_steps"] = ASK_BEFORE_CHANGING.format(what=kind)
    else:
        result["summary"] = (f"A {kind} named {name!r} already exists (id {resource_id}) as requested; "
                             "nothing was changed.")
    return result
