"""The hold-back window: a streamed answer goes out live, but never as far as a refused match could begin.

An agent without output checks (no skill with `review_answer`) streams its answer in the htmx chat.
The output guardrails (app/runtime/guardrails.py) still see every delta before anyone does: a
`StreamScreen` lets text out only up to the point that cannot be the start of a match of a rule. It
holds back the end of the text that could still grow into one:
- the longest end that is the beginning of one of the user's credentials (so at most the longest
  one's length, less one), of a personal API token (`sdk_` and up to 43 characters) or of a
  `-----BEGIN ` line;
- the last complete words that begin a run of INSTRUCTION_WORDS words of the agent's instructions
  (at most INSTRUCTION_WORDS - 1 of them), and the word still being written (a word is complete once a
  character that is not part of a word follows it);
- everything from a `-----BEGIN ` that may still become a private-key block (its label, header lines
  and key material so far), however long.
The window is never longer than that, so `window` (the longest secret, token or key header) bounds
what the characters hold, and text that begins nothing goes out at once.

So when a match completes, none of it has gone out: the screen stops and lets nothing more out, and
the run's end replaces what was shown with the stored refusal. Each delta is checked against the new
text and the window only (the text let out is dropped), so a long answer costs O(n) overall. The
complete answer is still checked at the end (`guard_output` in app/runtime/outcome.py), which decides:
a screen that stopped on what the whole answer does not break (a token that went on, a word that
grew) only ends the streaming early, and the end shows the whole answer.
"""

from __future__ import annotations

import re
from collections import deque

from app.models.tokens import TOKEN_FORM
from app.runtime.guardrails import INSTRUCTION_WORDS, PRIVATE_KEY, WORD, OutputGuardrail, word_forms

TOKEN_CHARS = len("sdk_") + 43
# The end of a text that may still become a token (TOKEN_FORM), after a character that is not part of one.
TOKEN_OPEN = re.compile(r"(?<![A-Za-z0-9_-])(?:sdk_[A-Za-z0-9_-]{0,43}|sdk|sd|s)\Z")
KEY_START = "-----BEGIN "
# What any prefix of a private-key block (PRIVATE_KEY) looks like from its `-----BEGIN ` on: a label
# still being written, or a PRIVATE KEY label, header lines and key material (less than 32 characters
# of it, or the block would have matched). A wider pattern only holds more back.
KEY_OPEN = re.compile(r"-----BEGIN (?:[A-Z0-9 ]*-{0,4}|(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----\s*"
                      r"(?:[\w-]+:[^\n]*\n\s*)*(?:[\w-]+:[^\n]*|[\w+/=-]*))")
KEY_HEADER_CHARS = len("-----BEGIN ENCRYPTED PRIVATE KEY-----")
# Characters kept before the held text, for the token's look-behind.
CONTEXT = 1


def overlap(text: str, secret: str) -> int:
    """Return the length of the longest beginning of `secret`, shorter than it, that `text` ends with."""
    at = text.find(secret[0], max(0, len(text) - len(secret) + 1))
    while at >= 0:
        if secret.startswith(text[at:]):
            return len(text) - at
        at = text.find(secret[0], at + 1)
    return 0


class StreamScreen:
    """Screen one run's streamed answer: `feed` each delta, get back the text that may go out now."""

    def __init__(self, guardrail: OutputGuardrail) -> None:
        self._secrets = guardrail.secrets()  # needs an app context
        self._runs = guardrail.instruction_runs
        # Every beginning of a run (1 to INSTRUCTION_WORDS - 1 words): the words that must wait.
        self._openings = {run[:count] for run in self._runs for count in range(1, INSTRUCTION_WORDS)}
        # The most characters the secrets, the token and a key header make the screen hold.
        self.window = max(TOKEN_CHARS, KEY_HEADER_CHARS, *(len(secret) for secret in self._secrets))
        self.stopped = False
        self._tail = ""  # the answer from offset _base on; what lies before went out
        self._base = 0
        self._sent = 0  # the answer before this offset went out
        self._scan = 0  # the words before this offset are counted
        self._words: deque[tuple[int, str]] = deque(maxlen=INSTRUCTION_WORDS)  # (offset, word) of the last ones
        self._partial: int | None = None  # where the word still being written begins
        self._key: int | None = None  # where a possible private-key block begins

    def feed(self, delta: str) -> str:
        """Take the next delta of the answer; return what may be shown now ("" once stopped)."""
        if self.stopped or not delta:
            return ""
        old_end = self._base + len(self._tail)
        self._tail += delta
        if self._leaks(old_end) or self._copies() or self._opens_key(old_end):
            self.stopped, self._tail = True, ""
            return ""
        return self._release(self._hold())

    def rest(self) -> str:
        """Return the held window once the whole answer has passed the guardrails."""
        if self.stopped:
            return ""
        return self._release(self._base + len(self._tail))

    def _hold(self) -> int:
        """Return the offset from which the text could still begin a match."""
        tail, base = self._tail, self._base
        end = base + len(tail)
        hold = end - max([overlap(tail, KEY_START), *(overlap(tail, secret) for secret in self._secrets)])
        token = TOKEN_OPEN.search(tail, max(0, len(tail) - TOKEN_CHARS))
        if token is not None:
            hold = min(hold, base + token.start())
        if self._key is not None:
            hold = min(hold, self._key)
        if self._runs:
            hold = min(hold, self._word_hold(end))
        return hold

    def _word_hold(self, end: int) -> int:
        words = list(self._words)[-(INSTRUCTION_WORDS - 1):]
        for index in range(len(words)):
            if tuple(word for _, word in words[index:]) in self._openings:
                return words[index][0]
        return end if self._partial is None else self._partial

    def _release(self, upto: int) -> str:
        if upto <= self._sent:
            return ""
        out = self._tail[self._sent - self._base:upto - self._base]
        self._sent = upto
        base = max(self._base, upto - CONTEXT)
        self._tail, self._base = self._tail[base - self._base:], base
        # What lies between the last complete word and the held text has no word in it.
        self._scan = max(self._scan, base)
        return out

    def _leaks(self, old_end: int) -> bool:
        """Whether the new text completes a credential or a token (a match must end in it)."""
        tail, base = self._tail, self._base
        if any(tail.find(secret, max(0, old_end - len(secret) + 1 - base)) >= 0 for secret in self._secrets):
            return True
        return TOKEN_FORM.search(tail, max(0, old_end - TOKEN_CHARS - base)) is not None

    def _copies(self) -> bool:
        """Count the words completed since the last delta; whether the last INSTRUCTION_WORDS are a copy."""
        if not self._runs:
            return False
        tail, base = self._tail, self._base
        self._partial = None
        for match in WORD.finditer(tail, self._scan - base):
            if match.end() == len(tail):
                self._partial = base + match.start()  # still being written
                break
            for word in word_forms(match.group()):
                self._words.append((base + match.start(), word))
                if len(self._words) == INSTRUCTION_WORDS and tuple(w for _, w in self._words) in self._runs:
                    return True
            self._scan = base + match.end()
        return False

    def _opens_key(self, old_end: int) -> bool:
        """Hold from the first `-----BEGIN ` that may still open a private key; whether one is a whole block.

        A `-----BEGIN ` that is no prefix of a block never becomes one, so only the one held, those after
        it and those the new text brought are looked at.
        """
        tail, base = self._tail, self._base
        start = self._key if self._key is not None else max(self._sent, old_end - len(KEY_START) + 1)
        self._key = None
        at = tail.find(KEY_START, start - base)
        while at >= 0:
            if PRIVATE_KEY.match(tail, at):
                return True
            if self._key is None and KEY_OPEN.fullmatch(tail, at):
                self._key = base + at
            at = tail.find(KEY_START, at + 1)
        return False
