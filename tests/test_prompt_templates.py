"""Every template a user writes renders in the one sandbox, with the same clock variables and missing values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from jinja2.exceptions import SecurityError

from app.runtime.builder import Person, check_instructions, render_instructions
from app.runtime.prompts import clock_variables, render_prompt
from app.skills.actions import Config

NOON = datetime(2026, 3, 4, 12, 30, tzinfo=UTC)
ADA = Person(1, "Ada", "ada@example.org", "user")


def test_instructions_and_prompts_share_the_clock_and_the_missing_value_rule():
    template = "{{ today }} {{ now }} [{{ body.ticket.id }}]"
    expected = "2026-03-04 2026-03-04 12:30 UTC []"
    assert render_instructions(template, ADA, "Helper", now=NOON) == expected
    assert render_prompt(template, clock_variables(NOON)) == expected


def test_the_sandbox_hides_unsafe_attributes_in_instructions_and_prompts():
    template = "[{{ ''.__class__.__mro__ }}]"
    assert render_instructions(template, ADA, "Helper", now=NOON) == "[]"
    assert render_prompt(template, {}) == "[]"
    with pytest.raises(SecurityError):
        render_instructions("{{ ''.__class__.__mro__[1].__subclasses__() }}", ADA, "Helper", now=NOON)


def test_a_broken_template_is_the_same_error_in_the_editor_and_the_action_skill():
    problem = check_instructions("{{ broken")
    with pytest.raises(ValueError, match="Template error") as raised:
        Config(tool_name="ask", description="Ask", kind="agent", agent="Writer", prompt="{{ broken")
    assert problem is not None and problem.startswith("Template error") and problem in str(raised.value)
