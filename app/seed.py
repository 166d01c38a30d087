"""What a fresh install starts with: the built-in offline model as default, a demo agent, the Workspace assistant."""

from __future__ import annotations

from pathlib import Path

from app.extensions import db
from app.models import Agent, KnowledgeBase, ModelConfig

DOCS_KB = "Skilldesk documentation"
DOCS = Path(__file__).resolve().parent.parent / "docs"

DEMO_INSTRUCTIONS = """You are the demo assistant of Skilldesk, talking with {{ user.name }} on {{ today }}.
Answer briefly. Use your tools when they help, and report their results exactly as they came back."""

WORKSPACE_ASSISTANT = "Workspace assistant"
WORKSPACE_INSTRUCTIONS = """You are the Workspace assistant of Skilldesk, working with {{ user.name }}
(role {{ user.role }}) on {{ today }}. You create and change data tables, fields, rows, agents, skills and
triggers for the user, within their permissions, and explain Skilldesk. Ask (ask_user_question) when you
cannot go on without their choice. Report only what your tools' results say was done."""
DOCS_KB = "Skilldesk documentation"
# The assistant's skills: the workspace tools in modes (data, automation, explain; the docs search, questions
# and proposals in every mode), action memory with history, answer checks, the docs knowledge base, proposals,
# questions.
WORKSPACE_SKILLS = (
    {"name": "tool_routing", "config": {
        "modes": [{"name": "data", "groups": ["data"], "description": "Tables, fields and rows."},
                  {"name": "automation", "groups": ["automation"], "description": "Agents, skills and triggers."},
                  {"name": "explain", "groups": [], "description": "Explain Skilldesk from its documentation."}],
        "always_active": ["knowledge", "ask_user", "ui_proposals"]}},
    {"name": "action_memory", "config": {"history": True}},
    {"name": "answer_checks", "config": {}},
    {"name": "workspace", "config": {}},
    {"name": "knowledge", "config": {"knowledge_bases": [DOCS_KB]}},
    {"name": "ui_proposals", "config": {}},
    {"name": "ask_user", "config": {}},
)


def ensure_defaults() -> None:
    """Create the offline model configuration and the demo agent if the install has none; no commit."""
    if db.session.scalar(db.select(ModelConfig.id).limit(1)) is None:
        db.session.add(ModelConfig(name="Built-in offline model", provider="offline",
                                   model_name="skilldesk-offline", context_window=32_000, timeout=60,
                                   profiles={}, is_default=True))
    if db.session.scalar(db.select(Agent.id).limit(1)) is None:
        db.session.add(Agent(
            name="Demo assistant",
            description="A first agent to try Skilldesk with: it can tell the time and answer from Skilldesk's docs.",
            instructions=DEMO_INSTRUCTIONS,
            roles=["admin", "user"],
            skills=[{"name": "clock", "config": {"timezone": "UTC"}},
                    {"name": "knowledge", "config": {"knowledge_bases": [DOCS_KB]}}],
            max_requests=10,
        ))
    if db.session.scalar(db.select(KnowledgeBase.id).limit(1)) is None:
        # Synced and indexed by the background job (app.knowledge.indexing.resume_indexing) once workers run.
        db.session.add(KnowledgeBase(name=DOCS_KB, roles=["admin", "user"],
                                     description="Skilldesk's own docs/ folder, built in.",
                                     folder=str(DOCS) if DOCS.is_dir() else None))
    ensure_workspace_assistant()


def ensure_workspace_assistant() -> None:
    """Create the built-in Workspace assistant unless an agent of that name exists (edits stay); no commit."""
    if db.session.scalar(db.select(Agent.id).where(Agent.name == WORKSPACE_ASSISTANT)) is not None:
        return
    db.session.add(Agent(
        name=WORKSPACE_ASSISTANT,
        description="Builds and explains Skilldesk for you: tables, fields, rows, agents, skills and triggers.",
        instructions=WORKSPACE_INSTRUCTIONS,
        roles=["admin", "user"],
        skills=[dict(entry) for entry in WORKSPACE_SKILLS],
        max_requests=20,
    ))
