"""Normalise an answer and cut it into tokens, keeping where each came from in the text as given.

Normalisation: typographic apostrophes and quotes become plain ones, dashes a hyphen, invisible format
characters (bidi marks, zero-width spaces, variation selectors) and control characters go, then NFKC
(full-width forms, ligatures, no-break spaces) and case-folding. It runs per character cluster, so every
normalised character maps back to the source: a claim's span is in the answer as the user sees it.
Links and addresses are blanked (a URL's words are no claim).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

APOSTROPHES = "\u2019\u2018\u201b\u02bc\u02bb\u2032\u00b4\uff07"
QUOTES = "\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u2033\uff02"
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_SPECIAL = {**{ord(c): "'" for c in APOSTROPHES}, **{ord(c): '"' for c in QUOTES},
            **{ord(c): "-" for c in DASHES}, 0x2028: "\n", 0x2029: "\n", 0x0085: "\n", 0xFE0E: None, 0xFE0F: None}
# ASCII control characters become spaces (same length), so the ASCII path needs no offset map.
_ASCII = {code: " " for code in (*range(0, 9), 11, 12, *range(14, 32), 127)} | {13: " "}
_CLUSTER = re.compile(r"[\x00-\x7f]+(?![\u0300-\u036f])|.[\u0300-\u036f]*", re.S)
_LINKS = re.compile(r"\]\([^)\s]{0,400}\)|\b(?:https?|ftp|file|mailto):[^\s<>\"'`)\]]{1,400}"
                    r"|\bwww\.[^\s<>\"'`)\]]{1,400}")
_ADDRESSES = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}")
TOKEN = re.compile(r"""
 (?P<q>"[^"\n]{1,80}"|`[^`\n]{1,80}`|(?<![\w'])'[^'\n]{1,60}'(?!\w))
|(?P<w>[^\W\d_]\w*(?:['\-]\w+)*)
|(?P<n>\d+(?:[.,:/\-]\d+)*)
|(?P<p>[^\w\s])
""", re.X)
INTEGER = re.compile(r"\d{1,3}(?:([,.])\d{3})?(?:\1\d{3})*|\d+")
MOMENT = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}")  # a date; a time of day is a schedule


@dataclass
class Text:
    """An answer and its normalised form, with the map from normalised offsets to the answer's."""

    source: str
    norm: str
    origin: list[int] | None = None
    origin_end: list[int] | None = None

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """Return the answer's span of the normalised span [start, end)."""
        if self.origin is None or self.origin_end is None:
            return start, end
        if not self.origin:
            return 0, 0
        last = len(self.origin) - 1
        return self.origin[min(start, last)], self.origin_end[min(max(end - 1, start), last)]

    def capitalised(self, start: int) -> bool:
        """Tell whether the answer has an upper-case letter where the normalised offset `start` came from."""
        at = start if self.origin is None else self.origin[start] if start < len(self.origin) else len(self.source)
        return at < len(self.source) and self.source[at].isupper()


def normalise(source: str) -> Text:
    """Normalise an answer for matching (see the module docstring); linear in its length."""
    if source.isascii():
        return Text(source, _blanked(source.translate(_ASCII).lower()))
    parts: list[str] = []
    origin: list[int] = []
    origin_end: list[int] = []
    for match in _CLUSTER.finditer(source):
        chunk, start, end = match.group(), match.start(), match.end()
        if chunk.isascii():
            parts.append(chunk.translate(_ASCII).lower())
            origin.extend(range(start, end))
            origin_end.extend(range(start + 1, end + 1))
            continue
        text = unicodedata.normalize("NFKC", chunk.translate(_SPECIAL)).casefold()
        text = "".join(" " if unicodedata.category(c) == "Cc" and c != "\n" else c for c in text
                       if unicodedata.category(c) != "Cf")
        parts.append(text)
        origin.extend([start] * len(text))
        origin_end.extend([end] * len(text))
    return Text(source, _blanked("".join(parts)), origin, origin_end)


def _blanked(norm: str) -> str:
    """Blank links and e-mail addresses, keeping every offset (their words are no claim)."""
    if "](" in norm or ":" in norm or "www." in norm:
        norm = _LINKS.sub(_blank, norm)
    return _ADDRESSES.sub(_blank, norm) if "@" in norm else norm


def _blank(match: re.Match[str]) -> str:
    text = match.group()
    return "]" + " " * (len(text) - 1) if text.startswith("]") else " " * len(text)


@dataclass(frozen=True)
class Splitter:
    """How words with an apostrophe split: elided prefixes ("l'", "j'"), clitic suffixes ("'ve", "n't")."""

    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    words: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def split(self, word: str, start: int) -> list[tuple[str, int, int]]:
        """Return the pieces of one word, each with its normalised span."""
        end = start + len(word)
        if word in self.words:
            return [(piece, start, end) for piece in self.words[word]]
        if word in self.suffixes or word in self.prefixes:
            return [(word, start, end)]  # a clitic on its own: "n't" in a table
        pieces = []
        for prefix in self.prefixes:
            if word.startswith(prefix) and len(word) > len(prefix):
                pieces.append((prefix, start, start + len(prefix)))
                word, start = word[len(prefix):], start + len(prefix)
                break
        for suffix in self.suffixes:
            if word.endswith(suffix) and len(word) > len(suffix):
                cut = end - len(suffix)
                return [*pieces, (word[: -len(suffix)], start, cut), (suffix, cut, end)]
        return [*pieces, (word, start, end)]


@dataclass(slots=True)
class Token:
    """One token of the normalised text: a word, a number, a quoted name or a punctuation mark."""

    norm: str
    start: int
    end: int
    kind: str
    """w (word), n (number), q (quoted name, quotes removed), p (punctuation or symbol)."""
    cap: bool = False
    value: int | None = None
    moment: bool = False


def tokens(text: Text, start: int, end: int, splitter: Splitter) -> list[Token]:
    """Return the tokens of the normalised text between `start` and `end`."""
    out: list[Token] = []
    norm, source, origin = text.norm, text.source, text.origin
    for match in TOKEN.finditer(norm, start, end):
        kind = match.lastgroup or "p"
        piece, at = match.group(), match.start()
        if kind == "w":
            if "'" in piece:
                for word, a, b in splitter.split(piece, at):
                    out.append(Token(word, a, b, "w", text.capitalised(a)))
            else:
                first = source[at if origin is None else origin[at]]
                out.append(Token(piece, at, match.end(), "w", first.isupper()))
        elif kind == "n":
            whole = INTEGER.fullmatch(piece)
            value = int(re.sub(r"[,.]", "", piece)) if whole and len(piece) <= 9 else None
            out.append(Token(piece, at, match.end(), "n", value=value, moment=bool(MOMENT.fullmatch(piece))))
        elif kind == "q":
            inner = piece[1:-1].strip()
            if inner:
                out.append(Token(inner, at, match.end(), "q", True))
        else:
            out.append(Token(piece, at, match.end(), "p"))
    return out
