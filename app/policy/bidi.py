"""Bidirectional controls: refused in single-line names, kept in multi-line text.

U+202A–U+202E (embeddings and overrides) and U+2066–U+2069 (isolates) reorder what follows them on
screen: a chat title, a table label, an agent name or a file name holding one can show "invoice.pdf"
for "fdp.exe…", or run the sidebar's text backwards. No name needs them (the Unicode bidi algorithm
lays out Arabic and Hebrew words by itself), so a single-line name with one is refused: 422 beside
the field, or a JSON 422. Message text, instructions and other multi-line text keep them: text pasted
from word processors and RTL keyboards carries embeddings and isolates around mixed-direction runs,
and a message is shown in its own bubble, where they reorder only that message.
"""

from __future__ import annotations

import re

from wtforms.validators import ValidationError

BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")


def bidi_problem(text: str | None) -> str | None:
    """Say what is wrong with a single-line name holding a bidirectional control, or None."""
    found = BIDI_CONTROL.search(text or "")
    if not found:
        return None
    return (f"Remove the bidirectional control character (U+{ord(found.group()):04X}): "
            "it would show this name's text in another order.")


def one_line(form, field) -> None:
    """Refuse a single-line name holding a bidirectional control (a WTForms validator; `words` does it too)."""
    if isinstance(field.data, str) and (problem := bidi_problem(field.data)):
        raise ValidationError(problem)
