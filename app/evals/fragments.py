"""What the chat's rendered fragments show a person: the answer's text, the receipt, the cards, the proposals.

The htmx client reads the end event's fragment (the rendered answer) with the standard library's HTML
parser, as a person reads the page: the text of the answer bubble, the receipt's headline and entries,
the tool of each approval card still pending, the proposals' data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

VOID = {"br", "hr", "img", "input", "meta", "link", "source", "wbr", "col", "area"}
BLOCKS = {"p", "li", "tr", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "div", "blockquote", "table", "ul", "ol"}
# What the page's receipt lists when no tool that changes data ran (an entry of nothing).
NO_TOOL = "No tool that changes data ran in this turn."


@dataclass
class Fragment:
    """What the chat's rendered answer shows: the answer's text, the receipt's, the cards."""

    answer: str = ""
    receipt: str = ""
    # The receipt as the page lists it: its headline, each changed entry, each entry that changed nothing.
    headline: str = ""
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    status: str = ""
    waiting: list[str] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)


class _FragmentReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fragment = Fragment()
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.answer: list[str] = []
        self.receipt: list[str] = []
        self.item: list[str] | None = None
        self.item_unchanged = False

    def _inside(self, tag: str, css: str, **attrs: str) -> bool:
        return any(name == tag and css in (found.get("class") or "").split()
                   and all(found.get(k) == v for k, v in attrs.items()) for name, found in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {key: value or "" for key, value in attrs}
        if tag == "article" and not self.fragment.status:
            classes = (found.get("class") or "").split()
            status = next((c.removeprefix("status-") for c in classes if c.startswith("status-")), "succeeded")
            self.fragment.status = status
        if tag == "section" and "proposal" in (found.get("class") or "").split() and found.get("data-proposal"):
            self.fragment.proposals.append(json.loads(found["data-proposal"]))
        if tag in VOID:
            return
        if self._inside("details", "receipt"):
            if tag == "li":
                self.item, self.item_unchanged = [], "unchanged" in (found.get("class") or "").split()
        self.stack.append((tag, found))

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self.item is not None:
            text = " ".join("".join(self.item).split()).split(" · ")[0].removeprefix("Not changed: ")
            (self.fragment.unchanged if self.item_unchanged else self.fragment.changed).append(text)
            self.item = None
        if tag in BLOCKS:
            for target in (self.answer, self.receipt):
                target.append("\n")
        while self.stack:
            name, _attrs = self.stack.pop()
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._inside("div", "answer"):
            self.answer.append(data)
        if self._inside("details", "receipt"):
            self.receipt.append(data)
            if self.item is not None:
                self.item.append(data)
            if self._inside_tag("summary"):
                self.fragment.headline += data
        if self._inside("section", "call-approval", **{"data-state": "pending"}) and self._inside_tag("code") \
                and self._inside_tag("header"):
            self.fragment.waiting.append(data.strip())

    def _inside_tag(self, tag: str) -> bool:
        return any(name == tag for name, _attrs in self.stack)


def read_fragment(markup: str) -> Fragment:
    """Read the chat's rendered answer (the end event's fragment)."""
    reader = _FragmentReader()
    reader.feed(markup)
    reader.close()
    fragment = reader.fragment
    fragment.answer = _tidy("".join(reader.answer))
    fragment.receipt = _tidy("".join(reader.receipt))
    return fragment


class _TextReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in BLOCKS:
            self.parts.append("\n")


def page_text(markup: str) -> str:
    """The text a fragment shows, markup left out."""
    reader = _TextReader()
    reader.feed(markup)
    reader.close()
    return _tidy("".join(reader.parts))


def _tidy(text: str) -> str:
    lines = [" ".join(line.split()) for line in text.split("\n")]
    return "\n".join(line for line in lines if line)
