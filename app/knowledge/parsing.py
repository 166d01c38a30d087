"""Documents to text: Markdown and plain text as they are, HTML through lxml, PDF through pypdf."""

from __future__ import annotations

import io
from pathlib import PurePath

MAX_BYTES = 5 * 1024 * 1024
KINDS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text",
         ".html": "html", ".htm": "html", ".pdf": "pdf"}


class UnreadableDocument(ValueError):
    """A file that cannot become text: too big, of an unknown kind, or broken."""


def kind_of(filename: str) -> str | None:
    return KINDS.get(PurePath(filename).suffix.lower())


def parse(filename: str, data: bytes, max_bytes: int = MAX_BYTES) -> tuple[str, str]:
    """Return (title, text) of a document; raise UnreadableDocument saying why not."""
    kind = kind_of(filename)
    if kind is None:
        raise UnreadableDocument(f"{filename}: not a Markdown, text, HTML or PDF file")
    if len(data) > max_bytes:
        raise UnreadableDocument(f"{filename}: {len(data):,} bytes, over the {max_bytes:,}-byte limit")
    try:
        if kind == "pdf":
            title, text = _pdf(data)
        elif kind == "html":
            title, text = _html(data)
        else:
            text = data.decode("utf-8")
            title = _first_heading(text) if kind == "markdown" else ""
    except UnreadableDocument:
        raise
    except Exception as error:  # parsers raise many kinds of errors on broken files
        raise UnreadableDocument(f"{filename}: could not be read ({type(error).__name__}: {error})") from error
    text = text.replace("\r\n", "\n").replace("\x00", "")
    if not text.strip():
        raise UnreadableDocument(f"{filename}: no text found")
    title = (title or PurePath(filename).stem.replace("_", " ").replace("-", " ")).replace("\x00", "")
    return title.strip()[:300], text  # no NUL in the title either: PostgreSQL refuses it


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _pdf(data: bytes) -> tuple[str, str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    pages = [(page.extract_text() or "").strip() for page in reader.pages]
    title = str((reader.metadata or {}).get("/Title") or "") if reader.metadata else ""
    return title, "\n\n".join(page for page in pages if page)


_BLOCKS = {"p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "div", "section", "article"}


def _html(data: bytes) -> tuple[str, str]:
    import lxml.html

    root = lxml.html.document_fromstring(data)
    for element in root.xpath("//script|//style|//noscript|//template"):
        element.drop_tree()
    title = (root.findtext(".//title") or "").strip()
    body = root.find("body") if root.find("body") is not None else root
    lines: list[str] = []
    for element in body.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            lines.append("#" * int(tag[1]) + " " + " ".join(element.text_content().split()))
        elif tag in _BLOCKS and not any(isinstance(child.tag, str) and child.tag in _BLOCKS | {"h1", "h2", "h3"}
                                        for child in element):
            text = " ".join(element.text_content().split())
            if text:
                lines.append(text)
    return title, "\n\n".join(lines)
