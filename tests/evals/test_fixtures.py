"""A case's knowledge bases: the agent under test gets the knowledge skill searching them, when the case asks."""

from __future__ import annotations

from app.evals.dataset import Case
from app.evals.fixtures import skills_for


def case(**knowledge) -> Case:
    return Case.model_validate({"id": "c", "prompt": "p", "knowledge": [
        {"name": "Handbook", "documents": [{"title": "T", "text": "x"}], **knowledge}]})


def test_the_knowledge_skill_is_added_or_pointed_at_the_cases_bases_keeping_its_settings():
    workspace = {"name": "workspace", "config": {}}
    assert skills_for(case(), [workspace]) == [workspace, {"name": "knowledge",
                                                           "config": {"knowledge_bases": ["Handbook"]}}]
    existing = {"name": "knowledge", "config": {"knowledge_bases": ["Docs"], "results": 2}}
    assert skills_for(case(), [existing, workspace]) == [
        workspace, {"name": "knowledge", "config": {"knowledge_bases": ["Handbook"], "results": 2}}]
    assert existing["config"]["knowledge_bases"] == ["Docs"]  # the agent's own settings are not changed


def test_a_base_that_does_not_ask_for_the_skill_leaves_the_skills_as_they_are():
    skills = [{"name": "workspace", "config": {}}]
    assert skills_for(case(skill=False), skills) == skills
    assert skills_for(Case(id="c", prompt="p"), skills) == skills
