"""The OpenAI-compatible API under /v1/: the agents a token opens, as models, and chat completions, streamed or not.

On personal tokens with the `openai` scope only (app/api/__init__.py `init_token_area`); every error
in OpenAI's shape. The turn is the chat's own (app/api/exchanges.py): stateless unless the request
asks for a conversation with `X-Skilldesk-Conversation: new` or the id of one of the user's.
"""

from __future__ import annotations

import concurrent.futures
import time

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from flask_limiter import RateLimitExceeded
from flask_login import current_user

from app.api import exchanges, rate_limits
from app.api import openai_compat as oai
from app.api.openai_models import COMPLETION_ERRORS, ERRORS, ChatCompletion, ChatCompletionRequest, Model, ModelList
from app.api.openapi import CHUNK_EVENT, ConversationHeaders, documented
from app.api.run_follow import LEFT, SIGNED_OUT, Viewer, follow_run
from app.api.tokens import request_token
from app.extensions import db
from app.models import Message, Run
from app.policy.schema_subset import InvalidJSON, loads_json
from app.runtime import capacity, execution
from app.web.bodies import body_limit
from app.web.stream_client import StreamClient

bp = Blueprint("openai_api", __name__)
CONVERSATION_HEADER = "X-Skilldesk-Conversation"
WAIT_SLICE_SECONDS = 1.0


def refusal(status: int, message: str, code: str | None = None, param: str | None = None,
            retry_after: int | None = None) -> Response:
    """Answer an error in OpenAI's shape."""
    response = jsonify(oai.error_body(status, message, code, param))
    response.status_code = status
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="skilldesk"'
    return response


@bp.errorhandler(oai.OpenAIError)
def _openai_error(error: oai.OpenAIError):
    return refusal(error.status, error.message, error.code, error.param, error.retry_after)


@bp.errorhandler(exchanges.ExchangeRefused)
def _refused(error: exchanges.ExchangeRefused):
    return refusal(error.status, error.message, error.kind, error.param, error.retry_after)


def shape_of(status: int, message: str) -> Response:
    """The error handler's answer under /v1/ (app/web/errors.py): OpenAI's shape, with a code for the status."""
    codes = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large", 415: "unsupported_media_type",
             422: "invalid_value", 429: "rate_limit_exceeded", 503: "server_busy"}
    return refusal(status, message, codes.get(status, "server_error" if status >= 500 else "invalid_request"))


@bp.errorhandler(RateLimitExceeded)
def _rate_limited(_error: RateLimitExceeded):
    seconds = rate_limits.retry_after()
    return refusal(429, f"Too many requests for this token or its user; try again in {seconds} s.",
                   "rate_limit_exceeded", retry_after=seconds)


@bp.route("/models")
@documented(tags=("openai",), errors=ERRORS, HTTP_200=ModelList)
def models():
    """The agents this token may use, as models (`id` is the agent's slug)."""
    owner = current_app.config.get("SITE_NAME") or request.host
    data = [oai.model_entry(agent.slug, int(agent.created_at.timestamp()), owner)
            for agent in exchanges.usable_agents(current_user)]
    return jsonify(object="list", data=data)


@bp.route("/models/<path:model>")
@documented(tags=("openai",), errors=ERRORS, HTTP_200=Model)
def model(model: str):
    """One agent as a model."""
    agent = exchanges.agent_for(model, current_user)
    owner = current_app.config.get("SITE_NAME") or request.host
    return jsonify(oai.model_entry(agent.slug, int(agent.created_at.timestamp()), owner))


@bp.route("/chat/completions", methods=["POST"])
@body_limit("OPENAI_MAX_BODY_BYTES")
@documented(json=ChatCompletionRequest, tags=("openai",), errors=COMPLETION_ERRORS, headers=ConversationHeaders,
            stream=CHUNK_EVENT, HTTP_200=ChatCompletion)
def chat_completions():
    """Answer as the agent named by `model`: a `chat.completion`, or `chat.completion.chunk`s with `stream`."""
    asked = _asked()
    agent = exchanges.agent_for(asked.model, current_user)
    limit = exchanges.max_answer_tokens(agent)
    if asked.max_tokens is not None and asked.max_tokens > limit:
        raise oai.OpenAIError(400, f"max_tokens is at most {limit} for this agent's model.", "invalid_value",
                              "max_tokens")
    settings = {key: value for key, value in (("max_tokens", asked.max_tokens), ("temperature", asked.temperature))
                if value is not None}
    exchange_request = asked.exchange
    exchange_request.model_settings = settings
    exchange_request.conversation = _conversation_asked()
    app = current_app._get_current_object()
    # The slot before the turn, so that a refusal (503) stores nothing; the turn's own check counts it.
    capacity.admit_turn(app)
    release = capacity.take_stream(app)
    try:
        exchange = exchanges.begin(agent, current_user, exchange_request, "openai")
    except BaseException:
        release()
        raise
    created = int(time.time())
    chat_url = None if exchange.ephemeral else url_for("chat.show", conversation_id=exchange.conversation_id,
                                                         _external=True)
    headers = {} if exchange.ephemeral else {CONVERSATION_HEADER: str(exchange.conversation_id)}
    if asked.stream:
        encoder = oai.StreamEncoder(exchange, created, asked.include_usage, chat_url)
        started: list[bool] = []
        follow = _streamed(app, exchange, encoder, _viewer(), StreamClient(), release, started)
        response = Response(follow, mimetype="text/event-stream",
                            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **headers})
        response.call_on_close(lambda: _closed(app, exchange, release, started))
        return response
    try:
        answer = _answer(app, exchange, created, chat_url, StreamClient())
    finally:
        release()
    answer.headers.update(headers)
    return answer


def _asked() -> oai.Asked:
    if request.mimetype != "application/json":
        raise oai.OpenAIError(415, "Send the body as application/json.", "unsupported_media_type")
    try:
        body = loads_json(request.get_data(cache=True))
    except InvalidJSON as error:
        raise oai.OpenAIError(400, f"The body is not strict JSON: {error}", "invalid_json") from None
    return oai.parse(body)


def _conversation_asked() -> str | None:
    given = (request.headers.get(CONVERSATION_HEADER) or "").strip()
    if not given:
        return None
    if given != "new" and not (given.isdigit() and len(given) <= 10):
        raise oai.OpenAIError(400, f"{CONVERSATION_HEADER} is `new` or the id of one of your conversations.",
                              "invalid_value", CONVERSATION_HEADER)
    return given


def _viewer() -> Viewer:
    token = request_token()
    return Viewer(token_id=token.id if token is not None else None)


def _answer(app, exchange: exchanges.Exchange, created: int, chat_url: str | None, client: StreamClient):
    """Wait for the run's end (noticing a client that left), then answer the whole completion."""
    deadline = time.monotonic() + float(app.config["OPENAI_TURN_SECONDS"])
    db.session.remove()  # no connection held while the run goes
    outcome = None
    try:
        while outcome is None:
            try:
                execution.wait(exchange.run_id, timeout=WAIT_SLICE_SECONDS)
                outcome = "ended"
            except concurrent.futures.TimeoutError:
                if client.gone():
                    outcome = "left"
                elif time.monotonic() > deadline:
                    outcome = "late"
        if outcome != "ended":
            return refusal(504, f"The agent did not answer within {app.config['OPENAI_TURN_SECONDS']} s; "
                                "it was stopped (stream the answer to wait longer).", "timeout")
        run = db.session.get(Run, exchange.run_id)
        message = db.session.scalar(db.select(Message).where(Message.run_id == exchange.run_id,
                                                             Message.role == "assistant"))
        pending = [p for p in ((message.meta or {}) if message else {}).get("pending", []) if isinstance(p, dict)]
        done = oai.ending(exchange, run, message, oai.waiting_note(exchange, pending, chat_url))
        if done.error is not None:
            status = 503 if done.error["code"] == "run_interrupted" else 502
            return refusal(status, done.error["message"], done.error["code"],
                           retry_after=capacity.RETRY_AFTER_SECONDS if status == 503 else None)
        return jsonify(oai.completion(exchange, created, done))
    finally:
        exchanges.finish(exchange)  # stops a run still going; purges a stateless exchange


def _streamed(app, exchange: exchanges.Exchange, encoder: oai.StreamEncoder, viewer: Viewer, client: StreamClient,
              release, started: list[bool]):
    """Stream the run's answer; a client that leaves (or whose token ends) stops the run, as `cancelled`."""
    started.append(True)
    try:
        yield encoder.start()
        why = yield from follow_run(app, exchange.run_id, 0, viewer, encoder.encode, client)
        if why in (LEFT, SIGNED_OUT):
            return
    finally:
        with app.app_context():
            exchanges.finish(exchange)  # a run still going was left by its client: stopped, kept or purged
        release()


def _closed(app, exchange: exchanges.Exchange, release, started: list[bool]) -> None:
    """The stream's response closed: a stream that never started (its client left at once) ends its exchange here."""
    release()
    if not started:
        with app.app_context():
            exchanges.finish(exchange)
