"""The AG-UI stream as a client on the network reads it: one real run, then a resume after every id it sent.

Each event is validated with ag-ui-protocol's models on the way (`framed`, `check_order`).
"""

from __future__ import annotations

import httpx

from tests.agent_tools.conftest import bearer, token_for
from tests.assistance.test_agui_stream import check_order, framed
from tests.conftest import make_agent
from tests.skill_chat import Script, scripted


def test_resuming_after_any_event_id_yields_exactly_the_events_after_it(app, auth, served, scripted_model):
    script = Script([("current_time", {"timezone": "UTC"})], "It is late.")
    with app.app_context():
        agent_id = make_agent(skills=[{"name": "clock", "config": {}}],
                              model_config_id=scripted(scripted_model, script)).id
    web = httpx.Client(base_url=served.url, headers=bearer(token_for(app, auth.create("user"), scopes=("chat",))),
                       timeout=30)
    with web:
        thread_id = web.post("/api/conversations", json={"agentId": agent_id}).json()["data"]["id"]
        sent = web.post("/api/agent", json={"threadId": thread_id, "message": "Time?"})
        assert sent.status_code == 200 and sent.headers["Content-Type"].startswith("text/event-stream")
        pairs = framed(sent.text)
        events = [event for _id, event in pairs]
        check_order(events)
        assert [e.type.value for e in events] == [
            "RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
        ids = [event_id for event_id, _event in pairs]
        assert all(before < after for before, after in zip(ids, ids[1:], strict=False)), ids
        wire = [(event_id, event.model_dump_json()) for event_id, event in pairs]
        run_id = events[0].run_id
        for after in [0, *ids]:
            again = framed(web.get(f"/api/agent/{run_id}", headers={"Last-Event-ID": str(after)}).text)
            assert [(event_id, event.model_dump_json()) for event_id, event in again] == \
                [pair for pair in wire if pair[0] > after], after
        by_query = framed(web.get(f"/api/agent/{run_id}", params={"after": ids[4]}).text)
        assert [event_id for event_id, _event in by_query] == ids[5:]
