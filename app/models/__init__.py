"""SQLAlchemy models, one module per aggregate."""

from app.models.agents import Agent, ModelConfig
from app.models.chat import Conversation, Message, Run, RunEvent
from app.models.shares import Share
from app.models.users import ROLES, User

__all__ = ["ROLES", "Agent", "Conversation", "Message", "ModelConfig", "Run", "RunEvent", "Share", "User"]
