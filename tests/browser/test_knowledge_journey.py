"""Knowledge bases in real Chromium: an admin uploads Markdown and PDF, sees indexing finish, queries the
console; a user asks the agent, whose answer cites a passage that opens with the passage highlighted."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import DeltaToolCall

from app.knowledge.embeddings import embedder_from_config
from app.runtime import offline
from tests.browser.pages import send, sign_in
from tests.conftest import make_agent, make_user

pytestmark = pytest.mark.browser
RUN = 30_000


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing `text` in Helvetica (objects written out, offsets counted for the xref)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


async def librarian(messages, info):
    parts = messages[-1].parts
    if any(isinstance(p, UserPromptPart) for p in parts):
        yield {0: DeltaToolCall(name="search_knowledge", json_args='{"query": "backup window night"}',
                                tool_call_id="k1")}
    elif any(isinstance(p, ToolReturnPart) for p in parts):
        yield "Backups run in the night window at 02:00 [1]."


def test_upload_index_console_and_a_cited_answer(page: Page, app, live_server, scripted_model, tmp_path,
                                                 screenshot):
    app.config["CHROMA_PATH"] = str(tmp_path / "chroma")  # this test's vectors only
    embedder_from_config({"EMBEDDINGS": "minilm"}).embed(["warm up"])  # loaded once, before the upload
    with app.app_context():
        make_user("admin", email="ada@example.org")
        make_user("user", email="uma@example.org")
        make_agent("Librarian", roles=["user"], skills=[{"name": "knowledge",
                                                        "config": {"knowledge_bases": ["Operations"]}}],
                   model_config_id=scripted_model(function=offline.respond, stream_function=librarian))
    url = live_server.url
    sign_in(page, url, "ada@example.org")
    page.goto(f"{url}/admin/knowledge/")
    page.locator("#kb-name").fill("Operations")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("h1")).to_have_text("Operations")
    page.locator("#kb-files").set_input_files([
        {"name": "backups.md", "mimeType": "text/markdown",
         "buffer": b"# Backups\n\nBackups run in the night window at 02:00 and are kept for 30 days."},
        {"name": "rota.pdf", "mimeType": "application/pdf", "buffer": tiny_pdf("The on-call rota changes on Mondays.")},
    ])
    page.get_by_role("button", name="Upload and index").click(timeout=RUN)  # indexing runs inline in tests
    documents = page.locator("#documents")
    expect(documents.locator(".status-indexed")).to_have_count(2, timeout=RUN)
    expect(documents).to_contain_text("1 / 1")
    expect(documents).to_contain_text("rota")
    page.locator("#kb-q").fill("on-call rota")
    page.get_by_role("button", name="Search").click()
    results = page.locator("#console-results")
    expect(results.locator("tr.kept").first).to_contain_text("rota")
    expect(results).to_contain_text("(1)")  # ranks shown beside the scores
    screenshot(page, "retrieval-console")

    page.context.clear_cookies()
    sign_in(page, url, "uma@example.org")
    page.get_by_role("button", name="Chat with Librarian").click()
    send(page, "When do backups run?")
    step = page.locator("details.step").first
    expect(step).to_contain_text("search_knowledge", timeout=RUN)
    answer = page.locator("article.message.assistant .bubble.answer").last
    citation = answer.locator("a[href^='/knowledge/passages/']")
    expect(citation).to_have_text("[1]", timeout=RUN)
    citation.click()
    expect(page).to_have_url(re.compile(r"/knowledge/passages/\d+$"))
    expect(page.locator("h1")).to_have_text("Backups")
    expect(page.locator("mark#passage")).to_contain_text("02:00")
    page.get_by_role("link", name="Read the whole document").click()
    expect(page.locator("pre.document")).to_contain_text("kept for 30 days")
