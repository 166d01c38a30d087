"""Every page fits a phone: at 390 px wide no page scrolls sideways, and none does at 1280 px either.

The pages are found, not listed: every GET route of the app's url_map, asked with the ids of the world of
tests/test_routes.py (whose table names each route's arguments, so a new route gets them there), by an
anonymous visitor, a user and an admin. A route is a page when it answers that person 200 with a whole HTML
document; the others are not pages (JSON, SSE, downloads, fragments, redirects, POST-only routes).
"""

from __future__ import annotations

from flask import Flask, url_for
from playwright.sync_api import Browser, Page

from app.extensions import db
from app.models import EvalCaseResult, KnowledgeDocument
from tests.browser.pages import sign_in
from tests.test_routes import ADMIN, ANONYMOUS, ROUTES, USER, build_world, client_of, resolve

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}

# The page's widest element that is not inside a container of its own that clips or scrolls it sideways:
# the one whose right edge reaches furthest (the innermost of those that reach as far), with its place.
WIDEST = """() => {
  const root = document.documentElement;
  if (root.scrollWidth <= root.clientWidth) return null;
  const contained = (el) => {
    for (let up = el.parentElement; up && up !== root; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + [...el.classList].map((c) => "." + c).join("");
  let widest = null, right = root.clientWidth;
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || contained(el)) continue;
    if (box.right > right || (box.right === right && widest && widest.contains(el))) {
      widest = el; right = box.right;
    }
  }
  const path = [];
  for (let el = widest; el && el !== document.body && path.length < 5; el = el.parentElement) path.unshift(name(el));
  return {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
          widest: widest ? `${path.join(" > ")} (right edge at ${Math.round(right)} px): `
                           + JSON.stringify((widest.innerText || widest.value || "").slice(0, 60)) : "none found"};
}"""


def is_page(response) -> bool:
    """A page: 200 with a whole HTML document, not a download; JSON, SSE, fragments and redirects are not."""
    return (response.status_code == 200 and response.mimetype == "text/html"
            and "attachment" not in response.headers.get("Content-Disposition", "")
            and response.get_data(as_text=True).lstrip()[:15].lower() == "<!doctype html>")


def pages_of(app: Flask, role: str, objects: dict) -> list[str]:
    """The URLs of every page the role opens, its own objects in them (asked with Flask's test client)."""
    client = client_of(app, role)
    urls: list[str] = []
    for rule in sorted(app.url_map.iter_rules(), key=lambda rule: rule.rule):
        if "GET" not in rule.methods:
            continue  # POST-only
        assert rule.endpoint in ROUTES, f"add {rule.endpoint} to ROUTES in tests/test_routes.py"
        with app.test_request_context():
            url = url_for(rule.endpoint, **resolve(ROUTES[rule.endpoint].args, objects))
        response = client.get(url)
        if is_page(response):
            urls.append(url)
        response.close()
    return urls


def overflow(page: Page, url: str) -> str | None:
    """What makes the page wider than the window, or None when it fits."""
    found = page.evaluate(WIDEST)
    if found is None:
        return None
    width = page.viewport_size["width"]
    return (f"{url} at {width} px: the page is {found['scrollWidth']} px wide in a {found['clientWidth']} px window; "
            f"widest: {found['widest']}")


def add_what_real_use_adds(objects: dict) -> None:
    """The world's objects are terse: add a document from a folder and a failed case, as real use makes them."""
    shared = objects[ADMIN]
    db.session.add(KnowledgeDocument(
        knowledge_base_id=shared["kb"], title="Operations handbook: backups, restores and disaster recovery",
        source="folder:/srv/skilldesk/knowledge/operations/backups-and-restores-2026.md",
        content="Restores are tested monthly.", status="failed", passage_count=0,
        error="Could not read the file: permission denied (/srv/skilldesk/knowledge/operations)."))
    db.session.add(EvalCaseResult(
        run_id=shared["eval_run"], case_id="creates-a-contacts-table-and-fills-it", passed=False,
        status="succeeded", input_tokens=1830, output_tokens=412, seconds=3.27,
        steps=[{"name": "create_table", "args": '{"label": "Contacts", "fields": [{"name": "email"}]}',
                "failed": False, "result": "Created the table Contacts."},
               {"name": "insert_rows", "args": '{"table": "contacts", "rows": [{"email": "ada@example.org"}]}',
                "failed": True, "result": "No field named e-mail; the fields are: email."}],
        verdicts=[{"check": "tools.results", "passed": False,
                   "detail": "insert_rows returned 'No field named e-mail; the fields are: email.'"}]))
    db.session.commit()


def test_no_page_scrolls_sideways_on_a_phone_or_a_desktop(app, live_server, browser: Browser):
    with app.app_context():
        objects = build_world()
        add_what_real_use_adds(objects)
        db.session.remove()
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    problems: list[str] = []
    visited = 0
    for role in (ANONYMOUS, USER, ADMIN):
        context.clear_cookies()
        if role != ANONYMOUS:
            sign_in(page, live_server.url, f"{role}@example.org")
        for url in pages_of(app, role, objects[role]):
            page.set_viewport_size(PHONE)
            page.goto(live_server.url + url)
            problems.append(overflow(page, url))
            page.set_viewport_size(DESKTOP)
            problems.append(overflow(page, url))
            visited += 1
    context.close()
    problems = [problem for problem in problems if problem]
    assert visited > 40, f"only {visited} pages found: is_page() or the world of tests/test_routes.py changed"
    assert not problems, "pages that scroll sideways:\n" + "\n".join(problems)
