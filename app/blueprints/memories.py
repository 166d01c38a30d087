"""Memories: what agents remember about the signed-in user, to read, correct and delete."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.extensions import db
from app.knowledge.memories import PAGE_SIZE, clean_text, forget, memories_of, text_error, update_memory
from app.models import Memory
from app.web.htmx import is_htmx
from app.web.security import member_required

bp = Blueprint("memories", __name__)


def get_own_memory(memory_id: int) -> Memory:
    """Return a memory that came from the signed-in user, or 404 (the same answer for anyone else's)."""
    memory = db.session.get(Memory, memory_id)
    if memory is None or memory.user_id != current_user.id:
        abort(404)
    return memory


def _page(editing: dict | None = None, status: int = 200):
    page = db.paginate(memories_of(current_user.id), page=request.args.get("page", 1, type=int),
                       per_page=PAGE_SIZE, error_out=False)
    return render_template("memories/index.html", page=page, editing=editing or {}), status


@bp.route("/")
@member_required
def index():
    return _page()


@bp.route("/<int:memory_id>", methods=["POST"])
@member_required
def update(memory_id: int):
    memory = get_own_memory(memory_id)
    text = clean_text(request.form.get("text", ""))
    if error := text_error(text):
        editing = {"id": memory.id, "text": text, "error": error}
        if is_htmx():
            return render_template("memories/_memory.html", memory=memory, editing=editing), 422
        return _page(editing, 422)
    update_memory(memory, text)
    if is_htmx():
        return render_template("memories/_memory.html", memory=memory, editing={}, saved=True)
    flash("Memory updated.")
    return redirect(url_for("memories.index"))


@bp.route("/<int:memory_id>/delete", methods=["POST"])
@member_required
def delete(memory_id: int):
    forget(get_own_memory(memory_id))
    if is_htmx():
        return ""  # an empty 200 swaps the row away
    flash("Memory deleted.")
    return redirect(url_for("memories.index"))
