"""The one pager macro every paged list uses: links only where a page exists, the URL from the caller."""

from __future__ import annotations

from types import SimpleNamespace

from flask import render_template_string


def page(number, pages):
    return SimpleNamespace(page=number, pages=pages, has_prev=number > 1, has_next=number < pages,
                           prev_num=number - 1, next_num=number + 1)


TEMPLATE = ('{% from "_pager.html" import pager %}'
            '{% call(n) pager(p, prev="Newer", next="Older") %}/x?page={{ n }}{% endcall %}')


def test_the_pager_links_the_pages_around_this_one(app):
    with app.test_request_context():
        middle = render_template_string(TEMPLATE, p=page(2, 3))
        first = render_template_string(TEMPLATE, p=page(1, 3))
    assert '<a href="/x?page=1" rel="prev">Newer</a>' in middle and '<a href="/x?page=3" rel="next">Older</a>' in middle
    assert "Page 2 of 3" in middle
    assert 'rel="prev"' not in first and '<a href="/x?page=2" rel="next">Older</a>' in first


def test_the_users_list_pages_with_it(app, client, auth):
    auth.login_as("admin")
    for _ in range(60):
        auth.create("user")
    second = client.get("/admin/users?page=2")
    assert second.status_code == 200
    assert 'href="/admin/users?page=1" rel="prev">Previous</a>' in second.text and "Page 2 of" in second.text
