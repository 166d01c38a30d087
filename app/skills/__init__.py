"""Skills: the registry, and one module per skill.

A skill is a pydantic `Config` (its admin form and its stored settings) and a `build` that returns
pydantic-ai capabilities or toolsets. Built-ins and the `skilldesk.skills` entry-point group take
the same path into the registry.
"""

from __future__ import annotations

from app.runtime.contract import Skill, SkillContext
from app.skills.registry import init_app, registry

__all__ = ["Skill", "SkillContext", "init_app", "registry"]
