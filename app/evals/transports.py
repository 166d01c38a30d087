"""The clients a case's messages go through: the runtime itself, the JSON API, the htmx chat and AG-UI.

Each client drives the case's disposable app exactly as a client would (`app.test_client()`, with a
personal token for the JSON API and AG-UI, a signed-in session for the htmx chat) and records what it
received for each message (`Seen`): the text streamed before the end and the answer at the end, the
receipt, the calls that wait for the user, the proposals. Nothing here reads the database to learn what
the client saw; each client reads its own responses (the direct one, which has no client, reads the
run's stored events: what any client would be sent).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

from flask import Flask

from app.assistance.context import parse_context
from app.assistance.preferences import update_preferences
from app.chat import turns
from app.evals.fragments import NO_TOOL, page_text, read_fragment
from app.extensions import db
from app.models import Agent, Conversation, Message, RunEvent, User
from app.runtime import execution
from app.runtime.events import END

RUN_URL = re.compile(r"/runs/([A-Za-z0-9_-]+)/events")
SPAN = re.compile(r"\A<span>(.*)</span>\Z", re.DOTALL)


@dataclass
class Seen:
    """What a client received for one message."""

    run_id: str | None = None
    status: str = ""
    streamed: str = ""
    """The text received before the end (the htmx chat's live text; nothing for the JSON API)."""
    final: str = ""
    """The answer as the client received it at the end (the htmx chat: the rendered answer's text)."""
    receipt: dict[str, Any] | None = None
    receipt_text: str = ""
    waiting: list[str] = field(default_factory=list)
    """The tools whose calls wait for the user's approval."""
    proposals: list[dict[str, Any]] = field(default_factory=list)


class DirectClient:
    """No client: the runtime's own call, as the existing evaluations run it; what streamed is the stored events."""

    name = "direct"

    def __init__(self, app: Flask, user_id: int, timeout: float) -> None:
        self.app, self.user_id, self.timeout = app, user_id, timeout
        self.conversation_id = 0

    def start(self, agent_id: int) -> int:
        """Start the conversation with the agent; return its id."""
        with self.app.app_context():
            conversation = turns.start_conversation(db.session.get(User, self.user_id),
                                                    db.session.get(Agent, agent_id), title="Evaluation")
            db.session.commit()
            self.conversation_id = conversation.id
        return self.conversation_id

    def send(self, text: str, page_context: dict[str, Any] | None) -> Seen:
        with self.app.app_context():
            user = db.session.get(User, self.user_id)
            conversation = db.session.get(Conversation, self.conversation_id)
            extras = parse_context(page_context, user.role).as_extras() if page_context else None
            _message, run = turns.send_message(conversation, user, text, extras=extras)
            run_id = run.id
        execution.wait(run_id, self.timeout)
        with self.app.app_context():
            events = db.session.scalars(db.select(RunEvent).where(RunEvent.run_id == run_id)
                                        .order_by(RunEvent.seq)).all()
            streamed = "".join((event.data or {}).get("delta", "") for event in events if event.type == "text")
            answer = _answer(run_id)
            meta = (answer.meta or {}) if answer is not None else {}
            return Seen(run_id, meta.get("status", ""), streamed, answer.content if answer else "",
                        meta.get("receipt"), "", _waiting(meta), list(meta.get("proposals") or []))

    def accept(self, proposals: list[dict[str, Any]]) -> None:
        with self.app.app_context():
            user = db.session.get(User, self.user_id)
            for proposal in _preferences(proposals):
                update_preferences(user, {proposal["target"]["namespace"]: {proposal["target"]["key"]:
                                                                            proposal["proposed"]}})
            db.session.commit()


class ApiClient:
    """The JSON API's base transport with a personal token: send, and read the checked answer."""

    name = "api"

    def __init__(self, app: Flask, token: str, timeout: float) -> None:
        self.app, self.timeout = app, timeout
        self.conversation_id = 0
        self.client = app.test_client()
        self.headers = {"Authorization": f"Bearer {token}"}

    def start(self, agent_id: int) -> int:
        """Start the conversation as a client does (POST /api/conversations); return its id."""
        response = self.post("/api/conversations", {"agentId": agent_id})
        if response.status_code != 201:
            raise RuntimeError(f"starting a conversation answered {response.status_code}: {response.get_data(True)}")
        self.conversation_id = response.get_json()["data"]["id"]
        return self.conversation_id

    def post(self, url: str, body: dict[str, Any], method: str = "POST") -> Any:
        return self.client.open(url, method=method, data=json.dumps(body), content_type="application/json",
                                headers=self.headers)

    def send(self, text: str, page_context: dict[str, Any] | None) -> Seen:
        body = {"message": text, **({"context": page_context} if page_context else {})}
        response = self.post(f"/api/conversations/{self.conversation_id}/messages", body)
        if response.status_code != 201:
            raise RuntimeError(f"the JSON API answered {response.status_code}: {response.get_data(as_text=True)}")
        data = response.get_json()["data"]
        run_id = _last_run(self.app, self.conversation_id)
        execution.wait(run_id, self.timeout)  # the follow-ups too (the title)
        meta = data.get("metadata") or {}
        return Seen(run_id, meta.get("status", ""), "", data.get("content", ""), meta.get("receipt"), "",
                    _waiting(meta), list(meta.get("proposals") or []))

    def accept(self, proposals: list[dict[str, Any]]) -> None:
        for proposal in _preferences(proposals):
            target = proposal["target"]
            response = self.post("/api/me/preferences", {target["namespace"]: {target["key"]: proposal["proposed"]}},
                                 method="PATCH")
            if response.status_code != 200:
                raise RuntimeError(f"accepting a proposal answered {response.status_code}")


class AguiClient(ApiClient):
    """AG-UI: POST /api/agent with the token, read to RUN_FINISHED or RUN_ERROR."""

    name = "agui"

    def send(self, text: str, page_context: dict[str, Any] | None) -> Seen:
        body = {"threadId": self.conversation_id, "message": text,
                **({"context": page_context} if page_context else {})}
        response = self.post("/api/agent", body)
        if response.status_code != 200:
            raise RuntimeError(f"the AG-UI endpoint answered {response.status_code}: {response.get_data(as_text=True)}")
        seen = Seen()
        for event in agui_events(response.get_data(as_text=True)):
            kind = event.get("type")
            if kind == "RUN_STARTED":
                seen.run_id = event.get("runId")
            elif kind == "TEXT_MESSAGE_CONTENT":
                seen.streamed += event.get("delta", "")
            elif kind == "CUSTOM" and event.get("name") == "skilldesk.receipt":
                seen.receipt = event.get("value")
            elif kind == "RUN_FINISHED":
                seen.status = "succeeded"
                interrupts = (event.get("outcome") or {}).get("interrupts") or []
                seen.waiting = [i.get("message", "") for i in interrupts if i.get("reason") == "approval"]
                seen.proposals = [{"id": i.get("id")} for i in interrupts if i.get("reason") == "proposal"]
            elif kind == "RUN_ERROR":
                seen.status = event.get("code", "RUN_ERROR")
        seen.final = seen.streamed  # AG-UI sends the checked answer whole, at the end
        if seen.run_id:
            execution.wait(seen.run_id, self.timeout)
        return seen

    def accept(self, proposals: list[dict[str, Any]]) -> None:
        """An interrupt names its proposal only: the client reads it whole from the JSON API, then applies it."""
        wanted = {proposal.get("id") for proposal in proposals}
        listed = self.client.get(f"/api/conversations/{self.conversation_id}/messages?perPage=100",
                                 headers=self.headers).get_json()["data"]
        found = [p for message in listed for p in (message.get("metadata") or {}).get("proposals") or []
                 if p.get("id") in wanted]
        super().accept(found)


class HtmxClient:
    """The chat page: the composer's htmx POST, then the run's event stream read to its end."""

    name = "htmx"

    def __init__(self, app: Flask, email: str, password: str, timeout: float) -> None:
        self.app, self.timeout = app, timeout
        self.conversation_id = 0
        self.client = app.test_client()
        response = self.client.post("/login", data={"email": email, "password": password})
        if response.status_code != 302:
            raise RuntimeError(f"signing in answered {response.status_code}")

    def start(self, agent_id: int) -> int:
        """Start the conversation from the chat page's form; return its id."""
        response = self.client.post("/chat/", data={"agent_id": agent_id})
        if response.status_code != 302:
            raise RuntimeError(f"starting a chat answered {response.status_code}")
        self.conversation_id = int(response.location.rstrip("/").rsplit("/", 1)[-1])
        return self.conversation_id

    def send(self, text: str, page_context: dict[str, Any] | None) -> Seen:
        form = {"text": text, **({"context": json.dumps(page_context)} if page_context else {})}
        sent = self.client.post(f"/chat/{self.conversation_id}/messages", data=form, headers={"HX-Request": "true"})
        if sent.status_code != 200:
            raise RuntimeError(f"the chat answered {sent.status_code}: {sent.get_data(as_text=True)[:300]}")
        found = RUN_URL.search(sent.get_data(as_text=True))
        if found is None:  # a chat command (/compact) answers at once, with no run
            return Seen(status="succeeded", final=page_text(sent.get_data(as_text=True)))
        run_id = found.group(1)
        stream = self.client.get(f"/runs/{run_id}/events")
        seen = Seen(run_id)
        for kind, data in sse_events(stream.get_data(as_text=True)):
            if kind == "text":
                piece = SPAN.match(data)
                seen.streamed += html.unescape(piece.group(1) if piece else data)
            elif kind == END:
                fragment = read_fragment(data)
                seen.final, seen.receipt_text = fragment.answer, fragment.receipt
                if fragment.headline:  # the receipt as the page shows it
                    seen.receipt = {"headline": " ".join(fragment.headline.split()),
                                    "changed": [{"summary": text} for text in fragment.changed],
                                    "unchanged": [{"summary": text} for text in fragment.unchanged
                                                  if text != NO_TOOL]}
                seen.waiting, seen.proposals, seen.status = fragment.waiting, fragment.proposals, fragment.status
        execution.wait(run_id, self.timeout)
        return seen

    def accept(self, proposals: list[dict[str, Any]]) -> None:
        for proposal in _preferences(proposals):
            form = {"proposal": proposal["id"], "namespace": proposal["target"]["namespace"],
                    "key": proposal["target"]["key"], "value": json.dumps(proposal["proposed"])}
            response = self.client.post(f"/chat/{self.conversation_id}/preferences", data=form)
            if response.status_code != 303:
                raise RuntimeError(f"accepting a proposal answered {response.status_code}")


def sse_events(body: str) -> list[tuple[str, str]]:
    """Split a server-sent event stream into (event, data) pairs; comments are left out."""
    found = []
    for block in body.split("\n\n"):
        kind, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event: "):
                kind = line[len("event: "):]
            elif line.startswith("data: ") or line == "data:":
                data.append(line[len("data: "):])
        if data:
            found.append((kind, "\n".join(data)))
    return found


def agui_events(body: str) -> list[dict[str, Any]]:
    """The AG-UI events of a stream, as their JSON."""
    return [json.loads(data) for _kind, data in sse_events(body)]


def _waiting(meta: dict[str, Any]) -> list[str]:
    return [str(item.get("tool")) for item in meta.get("pending") or []
            if isinstance(item, dict) and item.get("kind") == "approval"]


def _preferences(proposals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in proposals if p.get("kind") == "preference" and isinstance(p.get("target"), dict)]


def _answer(run_id: str) -> Message | None:
    return db.session.scalar(db.select(Message).where(Message.run_id == run_id, Message.role == "assistant"))


def _last_run(app: Flask, conversation_id: int) -> str:
    with app.app_context():
        return db.session.scalar(db.select(Message.run_id).where(
            Message.conversation_id == conversation_id, Message.role == "user").order_by(Message.id.desc()))
