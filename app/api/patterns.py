"""The patterns the OpenAPI document gives strings, so that it states what the app refuses.

Every string of a request refuses control characters (app/web/text_input.py: 422 for any of them in
the query, a form or a JSON body; 404 in a path); single-line names refuse bidirectional controls too
(app/policy/bidi.py); a message is more than white space (`str.strip()` leaves something). Written as
ECMA-262 regular expressions, with `\\u` escapes rather than the characters themselves.
"""

from __future__ import annotations

from app.policy.bidi import BIDI_CONTROL
from app.web.text_input import CONTROL


def _escaped(characters: str) -> str:
    """A character class's inside, every character written as a `\\uXXXX` escape and runs as ranges."""
    codes = sorted({ord(char) for char in characters})
    runs: list[tuple[int, int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return "".join(f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}" for low, high in runs)


def _matching(pattern) -> str:
    return "".join(chr(code) for code in range(0x3001) if pattern.match(chr(code)))


_CONTROLS = _escaped(_matching(CONTROL))  # C0, DEL and C1, but tab, newline and carriage return
TEXT = f"^[^{_CONTROLS}]*$"
"""Any text without a control character."""
NAME = f"^[^{_CONTROLS}{_escaped(_matching(BIDI_CONTROL))}]*$"
"""A single-line name: no control character and no bidirectional control either."""
_SPACE = _escaped("".join(chr(code) for code in range(0x3001) if chr(code).isspace() and not CONTROL.match(chr(code))))
NON_BLANK = f"^[^{_CONTROLS}]*[^{_CONTROLS}{_SPACE}][^{_CONTROLS}]*$"
"""Text with something besides white space (what `str.strip()` leaves), and no control character."""
