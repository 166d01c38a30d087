"""Render untrusted model and tool output: markdown with raw HTML off, then an nh3 allow-list.

No external image loads: images become links, so model output cannot make the browser fetch.
"""

from __future__ import annotations

import json
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del", "span",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "th": {"align"}, "td": {"align"}}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    return md


def _image_as_link(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    alt = self.renderInline(token.children or [], options, env) or "image"
    src = token.attrGet("src") or ""
    return f'<a href="{escape(src)}">[image: {alt}]</a>'


def render_markdown(text: str) -> Markup:
    """Return safe HTML for markdown written by a model or a tool."""
    html = _parser().render(text or "")
    clean = nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES,
                      url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow")
    return Markup(clean)


def pretty_json(text: str) -> str:
    """Indent a JSON string for display; leave anything else as it is."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested thousands deep (model text)
        return text


HEADLINE_CHARS = 80


def step_headline(text: str) -> str:
    """Return a tool call's first text argument, on one line and shortened, to show beside the tool's name.

    A reader sees what was asked without opening the step: the search actually run (a follow-up rewritten
    with the conversation's context), the address fetched.
    """
    try:
        args = json.loads(text)
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested thousands deep (model text)
        return ""
    first = next((value for value in args.values() if isinstance(value, str) and value.strip()), "") \
        if isinstance(args, dict) else ""
    line = " ".join(first.split())
    return line if len(line) <= HEADLINE_CHARS else line[: HEADLINE_CHARS - 1] + "…"


def init_app(app) -> None:
    app.add_template_filter(render_markdown, "markdown")
    app.add_template_filter(pretty_json, "pretty_json")
    app.add_template_filter(step_headline, "step_headline")
