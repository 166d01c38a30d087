"""SQLAlchemy models, one module per aggregate."""

from app.models.agents import Agent, ModelConfig
from app.models.approvals import ApprovalRecord, Notification, PendingCall
from app.models.chat import Conversation, Message, Run, RunEvent
from app.models.compaction import CompactionRecord
from app.models.evals import EvalCaseResult, EvalRun
from app.models.knowledge import KnowledgeBase, KnowledgeDocument, KnowledgePassage
from app.models.mcp import McpSession
from app.models.memories import Memory
from app.models.settings import InstanceSetting
from app.models.shares import Share
from app.models.tables import DataField, DataTable, Trigger, TriggerRun
from app.models.tokens import ApiToken
from app.models.users import ROLES, User, UserSession

__all__ = [
    "ROLES",
    "Agent",
    "ApiToken",
    "ApprovalRecord",
    "CompactionRecord",
    "Conversation",
    "DataField",
    "DataTable",
    "EvalCaseResult",
    "EvalRun",
    "InstanceSetting",
    "KnowledgeBase",
    "KnowledgeDocument",
    "KnowledgePassage",
    "McpSession",
    "Memory",
    "Message",
    "ModelConfig",
    "Notification",
    "PendingCall",
    "Run",
    "RunEvent",
    "Share",
    "Trigger",
    "TriggerRun",
    "User",
    "UserSession",
]
