"""An evaluation case whose run waits for a person says so in its report: status, what for, and which calls."""

from __future__ import annotations

from app.evals.runner import create_run, execute
from app.extensions import db
from tests.conftest import make_agent

DATASET = """
name: waits
cases:
  - id: asks-first
    prompt: Paint my bike
    skills: [{name: ask_user, config: {}}]
    replies:
      - calls: [{tool: ask_user_question, args: {question: "Which colour?", options: [Red, Blue]}}]
"""


def test_a_case_whose_run_waits_reports_waiting_and_what_for(app, client, auth, tmp_path):
    (tmp_path / "waits.yaml").write_text(DATASET)
    app.config["EVALS_PATH"] = str(tmp_path)
    with app.app_context():
        agent = make_agent("Evaluated")
        run = create_run("waits", agent.name, level=1)
        db.session.commit()
        run = execute(run.id)
        [result] = run.results
        assert result.status == "waiting" and not result.passed
        assert {"check": "run.status", "passed": False,
                "detail": "the run ended waiting: it waits for question: ask_user_question"} in result.verdicts
        assert result.transcript[-1]["waiting"] == [{"kind": "question", "tool": "ask_user_question"}]
        run_id, result_id = run.id, result.id
    auth.login_as("admin")
    page = client.get(f"/admin/evals/runs/{run_id}/cases/{result_id}").text
    assert "Status waiting" in page and 'data-testid="case-waiting"' in page and "ask_user_question" in page
