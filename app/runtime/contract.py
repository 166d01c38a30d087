"""What the runtime offers skills, built-in or installed: the one module of the runtime a skill imports.

`Skill` and `SkillContext` are the contract itself (app/runtime/skill.py); the rest are the runtime's
services a skill may build on. import-linter checks that skills import nothing else of the runtime.
"""

from __future__ import annotations

from app.runtime.skill import Built, Skill, SkillContext, TurnEnd

__all__ = ["Built", "Skill", "SkillContext", "TurnEnd"]
