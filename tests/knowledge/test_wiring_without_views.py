"""The areas wire themselves in the factory: a purge is complete in an app that imported no blueprint.

A fresh interpreter builds the app with `views=False`, with every `app.blueprints` module made
unimportable, stores a conversation's derived rows and a user's memories (rows and vectors), purges
them, and reports what is left.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from app.extensions import db
from app.models import User

SCRIPT = r"""
import json, sys
sys.modules["app.blueprints"] = None  # importing any blueprint module now fails
from app import create_app
from app.chat.purge import purge_conversation, purge_user_data
from app.extensions import db
from app.knowledge.memories import remember, vector_store
from app.models import (CompactionRecord, Conversation, Memory, Message, PendingCall, Run, RunEvent, Share,
                        User)

app = create_app(json.loads(sys.argv[1]), views=False)
loaded = sorted(name for name, module in sys.modules.items() if name.startswith("app.blueprints") and module)
with app.app_context():
    user = db.session.get(User, int(sys.argv[2]))
    conversation = Conversation(user_id=user.id, agent_id=None, title="Secret plans")
    db.session.add(conversation)
    db.session.flush()
    run = Run(conversation_id=conversation.id, user_id=user.id, status="succeeded", prompt="secret")
    db.session.add(run)
    db.session.flush()
    message = Message(conversation_id=conversation.id, role="user", content="secret", run_id=run.id)
    db.session.add_all([message, RunEvent(run_id=run.id, seq=1, type="text", data={"delta": "secret"}),
                        Share(conversation_id=conversation.id, owner_id=user.id, snapshot=[]),
                        CompactionRecord(conversation_id=conversation.id, trigger="run", summary="secret")])
    db.session.flush()
    db.session.add(PendingCall(conversation_id=conversation.id, message_id=message.id, tool_call_id="c1",
                               tool_name="clock", kind="approval", args={"secret": True}))
    db.session.commit()
    memory, _new = remember("The launch code is secret", user_id=user.id, agent_id=None, personal=True)
    collection = memory.collection
    before = {"vectors": vector_store().count(collection)}

    purge_conversation(conversation)
    db.session.commit()
    left = {
        "messages": db.session.scalar(db.select(db.func.count(Message.id))),
        "events": db.session.scalar(db.select(db.func.count(RunEvent.id))),
        "shares": db.session.scalar(db.select(db.func.count(Share.id))),
        "pending calls": db.session.scalar(db.select(db.func.count(PendingCall.id))),
        "compaction records": db.session.scalar(db.select(db.func.count(CompactionRecord.id))),
        "run prompts": db.session.scalar(db.select(db.func.count(Run.id)).where(Run.prompt.is_not(None))),
    }
    purge_user_data(user)
    db.session.commit()
    left["memories"] = db.session.scalar(db.select(db.func.count(Memory.id)))
    left["vectors"] = vector_store().count(collection)
print(json.dumps({"loaded": loaded, "before": before, "left": left}))
"""


def test_a_purge_is_complete_in_an_app_without_blueprints(app, settings, server, tmp_path):
    with app.app_context():
        user = User(email="purge@example.org", name="Purge", role="user", active=True, preferences={})
        user.set_password("correct horse battery")
        db.session.add(user)
        db.session.commit()
        user_id = user.id
    config = {**settings, "CHROMA_PATH": str(tmp_path / "chroma"), "EMBEDDINGS": "openai-compatible",
              "EMBEDDINGS_URL": f"{server.url}/v1", "EMBEDDINGS_MODEL": "letters",
              "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(config), str(user_id)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert report["before"] == {"vectors": 1}
    assert report["left"] == {"messages": 0, "events": 0, "shares": 0, "pending calls": 0,
                              "compaction records": 0, "run prompts": 0, "memories": 0, "vectors": 0}
