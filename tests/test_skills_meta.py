"""Meta-tests: every built-in skill has its tests, a docs page listing its settings, and described settings.

Like Datasette's plugin-hook meta-tests: adding a skill to BUILTINS without these fails here, by name.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from app.runtime.skill import Skill
from app.skills.registry import BUILTINS

ROOT = Path(__file__).resolve().parent.parent
SKILLS: list[Skill] = [importlib.import_module(module).skill for module in BUILTINS]


def settings_of(skill: Skill) -> list[tuple[str, str, dict[str, Any]]]:
    """Return (model, field, JSON schema) for every field of the Config and of the models it nests."""
    schema = skill.config.model_json_schema()
    models = [("Config", schema)] + list(schema.get("$defs", {}).items())
    return [(model, name, prop) for model, definition in models
            for name, prop in definition.get("properties", {}).items()]


def test_every_builtin_is_registered_under_a_unique_name(app):
    assert sorted(skill.name for skill in SKILLS) == sorted(set(skill.name for skill in SKILLS))
    assert {skill.name for skill in SKILLS} <= set(app.extensions["skills"])


@pytest.mark.parametrize("skill", SKILLS, ids=lambda skill: skill.name)
def test_every_skill_has_its_test_file(skill: Skill):
    path = ROOT / "tests" / "skills" / f"test_{skill.name}.py"
    assert path.is_file(), f"The skill {skill.name!r} has no tests: write {path.relative_to(ROOT)}."


@pytest.mark.parametrize("skill", SKILLS, ids=lambda skill: skill.name)
def test_every_skill_has_a_docs_page(skill: Skill):
    path = ROOT / "docs" / "skills" / f"{skill.name}.md"
    assert path.is_file(), f"The skill {skill.name!r} has no docs page: write {path.relative_to(ROOT)}."


@pytest.mark.parametrize("skill", SKILLS, ids=lambda skill: skill.name)
def test_every_setting_has_a_description(skill: Skill):
    # The admin form shows the description under each field; use_attribute_docstrings reads it
    # from the docstring under the field.
    missing = [f"{model}.{name}" for model, name, prop in settings_of(skill) if not prop.get("description")]
    assert not missing, f"Settings of {skill.name!r} without a description (a docstring under it): {missing}"


@pytest.mark.parametrize("skill", SKILLS, ids=lambda skill: skill.name)
def test_every_docs_page_names_every_setting(skill: Skill):
    path = ROOT / "docs" / "skills" / f"{skill.name}.md"
    assert path.is_file(), f"The skill {skill.name!r} has no docs page to name its settings in."
    page = path.read_text().lower()
    fields = skill.config.model_json_schema().get("properties", {})
    missing = [name for name, prop in fields.items()
               if name.lower() not in page and prop.get("title", "").lower() not in page]
    assert not missing, f"{path.relative_to(ROOT)} does not name these settings (label or key): {missing}"
