"""Knowledge bases: admin pages (bases, documents, chunk preview, retrieval console) and the passage pages."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from wtforms import StringField
from wtforms.validators import ValidationError

from app.database import name_clash
from app.extensions import db
from app.knowledge.chunking import chunk
from app.knowledge.indexing import queue_indexing
from app.knowledge.library import (
    clear_deleted_text,
    delete_document,
    delete_knowledge_base,
    folder_error,
    put_document,
    sync_folder,
)
from app.knowledge.search import MAX_QUERY_CHARS, query_problem, retrieve
from app.models import ROLES, KnowledgeBase, KnowledgeDocument, KnowledgePassage
from app.web import navigation
from app.web.form_fields import NumberField, RolesField, first_errors, stripped, words
from app.web.security import admin_required

bp = Blueprint("knowledge", __name__)
MAX_FILE_NAME = 300
CONSOLE_LIMIT, MAX_CONSOLE_LIMIT = 10, 50  # passages each of the console's rankings shows
bp.record_once(lambda state: navigation.add(state.app, "Knowledge", "knowledge.index", ("admin",)))


def _kb(kb_id: int) -> KnowledgeBase:
    return db.session.get(KnowledgeBase, kb_id) or abort(404)


CHUNKS = {"chunk_size": (200, 4000, 1000), "chunk_overlap": (0, 1000, 150)}  # low, high, when left empty


def _chunk_field(label: str, name: str) -> NumberField:
    low, high, default = CHUNKS[name]
    return NumberField(label, kind=int, low=low, high=high, absent=str(default),
                       message=f"Enter a whole number from {low} to {high}.")


class KnowledgeBaseForm(FlaskForm):
    name = StringField("Name", filters=[words])
    description = StringField("Description", filters=[stripped])
    roles = RolesField("Roles that may search it")
    folder = StringField("Folder on the server to sync (optional)", filters=[stripped])
    chunk_size = _chunk_field("Passage size (characters)", "chunk_size")
    chunk_overlap = _chunk_field("Overlap (characters)", "chunk_overlap")

    def __init__(self, *args, kb_id: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.kb_id = kb_id

    def validate_name(self, field) -> None:
        if not field.data or len(field.data) > 80:
            raise ValidationError("Give the knowledge base a name of at most 80 characters.")
        if clash := name_clash(KnowledgeBase.name, field.data, self.kb_id, "knowledge base"):
            raise ValidationError(clash)

    def validate_description(self, field) -> None:
        if len(field.data) > 300:
            raise ValidationError("Keep the description under 300 characters.")

    def validate_folder(self, field) -> None:
        if field.data and (problem := folder_error(field.data)):
            raise ValidationError(problem)

    def validate_chunk_overlap(self, field) -> None:
        values = self.values()
        if not field.errors and not self.chunk_size.errors and values["chunk_overlap"] * 2 >= values["chunk_size"]:
            raise ValidationError("Keep the overlap under half the passage size.")

    def values(self) -> dict:
        """The base's settings as submitted: an empty size is its default, a wrong one is left out."""
        values = {name: self[name].data for name in ("name", "description", "roles", "folder")}
        for name, (_low, _high, default) in CHUNKS.items():
            if not self[name].problem:
                values[name] = default if self[name].data is None else self[name].data
        return values


@bp.route("/admin/knowledge/")
@admin_required
def index():
    bases = db.session.scalars(db.select(KnowledgeBase).order_by(KnowledgeBase.name)).all()
    return render_template("knowledge/index.html", bases=bases, values={}, errors={}, roles=ROLES)


@bp.route("/admin/knowledge/", methods=["POST"])
@bp.route("/admin/knowledge/<int:kb_id>/settings", methods=["POST"])
@admin_required
def save(kb_id: int | None = None):
    kb = _kb(kb_id) if kb_id else KnowledgeBase()
    form = KnowledgeBaseForm(kb_id=kb.id)
    valid = form.validate()
    values, errors = form.values(), first_errors(form)
    if not valid:
        bases = db.session.scalars(db.select(KnowledgeBase).order_by(KnowledgeBase.name)).all()
        template = "knowledge/base.html" if kb_id else "knowledge/index.html"
        return render_template(template, bases=bases, kb=kb, values=values, errors=errors, roles=ROLES,
                               result=None, query=""), 422
    changed_chunks = kb.id and (kb.chunk_size, kb.chunk_overlap) != (values["chunk_size"], values["chunk_overlap"])
    for key in ("name", "description", "roles", "chunk_size", "chunk_overlap"):
        setattr(kb, key, values[key])
    kb.folder = values["folder"] or None
    db.session.add(kb)
    if changed_chunks:
        db.session.execute(db.update(KnowledgeDocument).where(KnowledgeDocument.knowledge_base_id == kb.id,
                                                              KnowledgeDocument.status != "failed")
                           .values(status="pending"))
    db.session.commit()
    if changed_chunks:
        queue_indexing(kb)
    flash("Knowledge base saved.")
    return redirect(url_for("knowledge.base", kb_id=kb.id))


@bp.route("/admin/knowledge/<int:kb_id>")
@admin_required
def base(kb_id: int):
    kb = _kb(kb_id)
    given = request.args.get("q", "")
    query = " ".join(given.split())
    limit = min(max(request.args.get("limit", CONSOLE_LIMIT, type=int), 1), MAX_CONSOLE_LIMIT)
    problem = query_problem(query) if given else None
    # The console's query is answered and forgotten: it is never logged or stored.
    result = retrieve([kb], query, limit=limit) if query and not problem else None
    page = render_template("knowledge/base.html", kb=kb, values={}, errors={"q": problem} if problem else {},
                           roles=ROLES, result=result, query=given[:MAX_QUERY_CHARS], limit=limit)
    return page, 422 if problem else 200


@bp.route("/admin/knowledge/<int:kb_id>/progress")
@admin_required
def progress(kb_id: int):
    return render_template("knowledge/_documents.html", kb=_kb(kb_id))


@bp.route("/admin/knowledge/<int:kb_id>/upload", methods=["POST"])
@admin_required
def upload(kb_id: int):
    kb = _kb(kb_id)
    files = [f for f in request.files.getlist("files") if f and f.filename]
    problem = "Choose a file." if not files else next(
        (f"Give {f.filename[:40]}… a name of at most {MAX_FILE_NAME} characters." for f in files
         if len(f.filename) > MAX_FILE_NAME), None)  # the name is the document's source (600 characters)
    if problem:
        return render_template("knowledge/base.html", kb=kb, values={}, errors={"files": problem},
                               roles=ROLES, result=None, query=""), 422
    for file in files:
        put_document(kb, f"upload:{file.filename}", file.filename, file.read())
    db.session.commit()
    queue_indexing(kb)
    flash(f"{len(files)} document(s) added; indexing runs in the background.")
    return redirect(url_for("knowledge.base", kb_id=kb.id))


@bp.route("/admin/knowledge/<int:kb_id>/sync", methods=["POST"])
@admin_required
def sync(kb_id: int):
    kb = _kb(kb_id)
    try:
        problem = folder_error(kb.folder) if kb.folder else None
        if problem:  # a folder saved before the rule, or written by hand
            raise ValueError(problem)
        counts = sync_folder(kb)
    except ValueError as error:
        return render_template("knowledge/base.html", kb=kb, values={}, errors={"folder": str(error)},
                               roles=ROLES, result=None, query=""), 422
    queue_indexing(kb)
    flash(", ".join(f"{n} {what}" for what, n in counts.items()) + ".")
    return redirect(url_for("knowledge.base", kb_id=kb.id))


@bp.route("/admin/knowledge/<int:kb_id>/delete", methods=["POST"])
@admin_required
def delete(kb_id: int):
    delete_knowledge_base(_kb(kb_id))
    flash("Knowledge base deleted with its documents, passages and indexes.")
    return redirect(url_for("knowledge.index"))


@bp.route("/admin/knowledge/documents/<int:document_id>")
@admin_required
def preview(document_id: int):
    document = db.session.get(KnowledgeDocument, document_id) or abort(404)
    kb = document.knowledge_base
    planned = chunk(document.content, kb.chunk_size, kb.chunk_overlap) if document.content else []
    indexed = db.session.scalars(db.select(KnowledgePassage).where(KnowledgePassage.document_id == document.id)
                                 .order_by(KnowledgePassage.position)).all()
    return render_template("knowledge/preview.html", document=document, kb=kb, planned=planned, indexed=indexed)


@bp.route("/admin/knowledge/documents/<int:document_id>/delete", methods=["POST"])
@admin_required
def delete_doc(document_id: int):
    document = db.session.get(KnowledgeDocument, document_id) or abort(404)
    kb_id = document.knowledge_base_id
    delete_document(document)
    db.session.commit()
    clear_deleted_text()
    flash("Document deleted with its passages and indexes.")
    return redirect(url_for("knowledge.base", kb_id=kb_id))


def _readable(kb: KnowledgeBase) -> None:
    if not kb.usable_by(current_user.role):
        abort(404)  # the same answer as for a passage that does not exist


@bp.route("/knowledge/passages/<int:passage_id>")  # any signed-in role the base names (guests too)
def passage(passage_id: int):
    found = db.session.get(KnowledgePassage, passage_id) or abort(404)
    document = found.document
    _readable(document.knowledge_base)
    return render_template("knowledge/passage.html", passage=found, document=document)


@bp.route("/knowledge/documents/<int:document_id>")
def document(document_id: int):
    found = db.session.get(KnowledgeDocument, document_id) or abort(404)
    _readable(found.knowledge_base)
    # ?passage=ID marks the passage the reader came from; an id of another document marks nothing.
    wanted = request.args.get("passage", type=int)
    highlight = db.session.get(KnowledgePassage, wanted) if wanted else None
    if highlight is not None and highlight.document_id != found.id:
        highlight = None
    return render_template("knowledge/document.html", document=found, highlight=highlight)
