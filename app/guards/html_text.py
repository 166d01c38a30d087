"""Readable text from HTML, for tools that hand web pages and snippets to a model."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

_SKIP_TAGS = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe"})
# Newlines a block owes around it: 2 is a paragraph break, 1 a line break.
_BLOCK_TAGS = dict.fromkeys(
    "p blockquote pre table ul ol dl figure section article header footer main aside form hr title".split(), 2
) | dict.fromkeys("div li tr dt dd br figcaption address fieldset".split(), 1)
_HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}


class _TextExtractor(HTMLParser):
    """Collect readable text: blocks become line breaks, headings get '#', links keep their URL."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.parts: list[str] = []
        self.skipping = self.preformatted = 0
        self.breaks = 0  # newlines owed before the next text, so empty blocks add nothing
        self.links: list[tuple[str | None, int]] = []

    def _emit(self, text: str) -> None:
        if not self.preformatted and (self.breaks or not self.parts or self.parts[-1].endswith((" ", "\n"))):
            text = text.lstrip(" ")
        if not text:
            return  # whitespace between blocks must not spend the breaks the next block owes
        if self.breaks and self.parts:
            self.parts[-1] = self.parts[-1].rstrip(" ")
            self.parts.append("\n" * self.breaks)
        self.breaks = 0
        self.parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS or self.skipping:
            self.skipping += tag in _SKIP_TAGS
            return
        if tag in _HEADINGS:
            self.breaks = 2
            self._emit(_HEADINGS[tag] + " ")
        elif tag == "li":
            self.breaks = max(self.breaks, 1)
            self._emit("- ")
        elif tag in ("td", "th") and self.parts and not self.breaks:
            self._emit(" | ")
        elif tag in _BLOCK_TAGS:
            self.breaks = max(self.breaks, _BLOCK_TAGS[tag])
        if tag == "pre":
            self.preformatted += 1
        elif tag == "a":
            self.links.append((self._link_target(dict(attrs).get("href")), len(self.parts)))

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            self.skipping -= tag in _SKIP_TAGS
            return
        if tag == "pre":
            self.preformatted = max(self.preformatted - 1, 0)
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            label = "".join(self.parts[start:]).strip()
            if href and label and label != href:
                self.parts.append(f" ({href})")
        if tag in _HEADINGS or tag in _BLOCK_TAGS:
            self.breaks = max(self.breaks, 2 if tag in _HEADINGS else _BLOCK_TAGS[tag])

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self._emit(data if self.preformatted else re.sub(r"\s+", " ", data))

    def _link_target(self, href: str | None) -> str | None:
        if not href or href.strip().startswith("#"):
            return None
        target = urljoin(self.base_url, href.strip()) if self.base_url else href.strip()
        # Script and data URLs are noise to a reader, and an injection vector to a model.
        return None if urlsplit(target).scheme in ("javascript", "data", "vbscript") else target


def html_to_text(html: str, limit: int, *, base_url: str = "") -> str:
    """Reduce HTML to readable text of at most limit characters, ending in '…' when cut."""
    parser = _TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    text = re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", "".join(parser.parts))).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…" if limit > 0 else ""
    return text
