"""Chat: conversations and their transcript, sending a turn, the SSE stream, sharing, approvals, compaction
around a reply, and purging a conversation or a user's data.
"""

from __future__ import annotations

from flask import Flask

from app.chat import cards, compaction, receipts
from app.database import purge_steps
from app.runtime import deferred
from app.skills.model_picker import picker_for


def init_app(app: Flask) -> None:
    """Register what a conversation's purge deletes beside its messages, runs, events and shares, and the
    template globals the chat's templates use (the cards of waiting calls, receipts, the model picker)."""
    steps = purge_steps(app)
    steps.conversation += [deferred.purge_pending, compaction.purge_records]
    for helper in (cards.pending_calls, cards.answered_by_run, cards.card_template, cards.decision_label):
        app.add_template_global(helper)
    for helper in (receipts.receipt_for, receipts.receipt_headline, receipts.receipt_links):
        app.add_template_global(helper)
    app.add_template_global(picker_for, "model_picker")
