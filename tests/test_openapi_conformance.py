"""schemathesis against the served app: every operation of /api/openapi.json, with every check, 0 failures.

The app is served on 127.0.0.1 (tests/agent_tools/conftest.py `Served`) and schemathesis reads the
document it serves, then runs its engine as `schemathesis run` does: the examples, coverage, fuzzing
and stateful phases, each bounded to a few examples an operation, deterministic with a fixed seed. It
signs in with a personal token holding the read, chat and openai scopes, the document's `bearer`
scheme (a session needs a browser's sign-in and its CSRF token). The test fails listing every failure:
the check, the operation, what it found, the request that shows it (curl) and the answer.

Two of the app's rules no JSON Schema can state, each excused below where it is met, and only there:
- an integer in a JSON body is written as one: `1.0` is not the id 1 (app/api/chat_models.py `Body`,
  tests/assistance/test_api_chat.py), though JSON Schema's `integer` takes it; schemathesis sends whole
  numbers as JSON encoders write them;
- what exists: an `agentId` that names no agent of yours is 422 naming the field (as a form's unknown
  choice is), and the last of the OpenAI messages (after any system ones) is the user's.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.engine import Status, from_schema
from schemathesis.engine.events import FatalError, FuzzScenarioFinished, NonFatalError, ScenarioFinished
from schemathesis.openapi.checks import RejectedPositiveData

from tests.agent_tools.conftest import Served, token_for

EXAMPLES = 15  # an operation's examples per phase: long fuzzing stays `schemathesis run`'s job
SEED = 25
LAST_MESSAGE = "The last message (after any system messages) must be the user's."


def written_as_json_writes_it(value: Any) -> Any:
    """The value with every whole float written as an integer (`2.0` as `2`), as `json.dumps(2)` writes it."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, list):
        return [written_as_json_writes_it(item) for item in value]
    if isinstance(value, dict):
        return {key: written_as_json_writes_it(item) for key, item in value.items()}
    return value


def states_what_exists(failure, case, response) -> bool:
    """Whether a schema-valid request was refused only for naming what does not exist, or for the order of
    the OpenAI messages: what no schema can say (the module's docstring)."""
    if not isinstance(failure, RejectedPositiveData):
        return False
    try:
        answer = response.json()
    except ValueError:
        return False
    if case.operation.label == "POST /api/conversations" and response.status_code == 422:
        return answer.get("fields") == {"agentId": "unknown"}
    if case.operation.label == "POST /v1/chat/completions" and response.status_code == 400:
        return answer.get("error", {}).get("message") == LAST_MESSAGE
    return False


def failures_of(events) -> list[str]:
    """Every failed check of the run, and every error of the engine, as text."""
    found: list[str] = []
    for event in events:
        if isinstance(event, ScenarioFinished | FuzzScenarioFinished):
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.status is Status.FAILURE and check.failure_info is not None:
                        failure = check.failure_info.failure
                        response = event.recorder.find_response(case_id=case_id)
                        answer = "" if response is None else f"{response.status_code} {response.text[:300]}"
                        found.append(f"{check.name} on {failure.operation}: {failure.title}\n{failure.message}\n"
                                     f"{check.failure_info.code_sample}\n-> {answer}")
        elif isinstance(event, NonFatalError):
            found.append(f"error on {event.label}: {event.info.format()}")
        elif isinstance(event, FatalError):
            found.append(f"fatal: {event.exception!r}")
    return sorted(set(found))


def test_every_operation_conforms_to_the_document(app, settings, auth):
    user_id = auth.create("user")
    secret = token_for(app, user_id, scopes=("read", "chat", "openai"))
    # The per-token and per-user limits (tests/agent_tools/test_openai_api.py) would answer most of these 429.
    server = Served({**settings, "TOKEN_RATE_LIMIT": 1_000_000, "USER_RATE_LIMIT": 1_000_000})
    try:
        config = schemathesis.Config.from_dict({
            "seed": SEED,
            "base-url": server.url,
            "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
            "phases": {"stateful": {"max-steps": EXAMPLES}},
            "auth": {"openapi": {"bearer": {"bearer": secret}}},
            "request-timeout": 30,
            "cache": {"enabled": False},
        })
        schema = schemathesis.openapi.from_url(f"{server.url}/api/openapi.json", config=config)

        @schema.hook
        def map_case(_context, case):
            case.body = written_as_json_writes_it(case.body)
            return case

        @schema.hook
        def filter_failure(_context, failure, case, response):
            return not states_what_exists(failure, case, response)

        failures = failures_of(from_schema(schema).execute())
    finally:
        server.stop()
    assert not failures, f"{len(failures)} schemathesis failures:\n\n" + "\n\n".join(failures)
