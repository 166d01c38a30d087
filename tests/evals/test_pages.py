"""The admin pages: run a dataset from the agent's page, read the run, a failing case, the export; edit a dataset."""

from __future__ import annotations

from app.extensions import db
from app.models import EvalRun
from tests.conftest import make_agent
from tests.evals.test_runner import DATASET


def setup(app, auth, tmp_path) -> int:
    (tmp_path / "sample.yaml").write_text(DATASET)
    app.config["EVALS_PATH"] = str(tmp_path)
    auth.login_as("admin")
    with app.app_context():
        return make_agent("Evaluated", skills=[{"name": "workspace", "config": {}}]).id


def test_an_admin_runs_a_dataset_from_the_agent_page_and_reads_the_failing_case(app, client, auth, tmp_path):
    agent_id = setup(app, auth, tmp_path)
    page = client.get(f"/admin/agents/{agent_id}")
    assert "Run evaluation" in page.text and "No evaluation run yet." in page.text
    response = client.post(f"/admin/evals/agents/{agent_id}/runs", data={"dataset": "sample", "level": "1"})
    assert response.status_code == 302
    with app.app_context():
        run_id = db.session.scalar(db.select(EvalRun.id).order_by(EvalRun.id.desc()))
    report = client.get(f"/admin/evals/runs/{run_id}")
    assert "finished" in report.text and "1 passed (50%)" in report.text
    assert "answer.no_unsupported_success: the answer claims success" in report.text
    assert "skipped-one (waits for the knowledge skill)" in report.text
    progress = client.get(f"/admin/evals/runs/{run_id}", headers={"HX-Request": "true"})
    assert progress.text.startswith('<div id="eval-progress"') and "every 1s" not in progress.text
    assert f"#{run_id} sample" in client.get(f"/admin/agents/{agent_id}").text  # its last run
    with app.app_context():
        failing = next(r for r in db.session.get(EvalRun, run_id).results if not r.passed)
        passing = next(r for r in db.session.get(EvalRun, run_id).results if r.passed)
        failing_id, passing_id = failing.id, passing.id
    case = client.get(f"/admin/evals/runs/{run_id}/cases/{failing_id}")
    assert "I have deleted everything." in case.text and "failed: answer.contains: hello" in case.text
    assert 'id="case-observed"' in case.text and "<dd>direct</dd>" in case.text
    steps = client.get(f"/admin/evals/runs/{run_id}/cases/{passing_id}")
    assert "create_table" in steps.text and 'id="case-steps"' in steps.text
    exported = client.get(f"/admin/evals/runs/{run_id}/export.json").get_json()
    assert exported["passed"] == 1 and exported["population"]["total"] == 4
    assert client.get(f"/admin/evals/runs/{run_id}/cases/{failing_id + 100}").status_code == 404
    compared = client.get(f"/admin/evals/compare?before={run_id}&after={run_id}")
    assert compared.status_code == 200 and "None." in compared.text


def test_a_bad_dataset_is_refused_with_the_errors_beside_the_field_and_nothing_written(app, client, auth, tmp_path):
    setup(app, auth, tmp_path)
    bad = "name: sample\ncases:\n  - id: x\n    prompt: hi\n    checks: {tools: {caled: [a]}}\n"
    response = client.post("/admin/evals/datasets/sample", data={"text": bad})
    assert response.status_code == 422
    assert 'aria-describedby="dataset-text-error"' in response.text
    assert "case x — checks.tools.caled: Extra inputs are not permitted" in response.text
    assert (tmp_path / "sample.yaml").read_text() == DATASET
    good = DATASET.replace("name: sample", "name: sample\ndescription: edited")
    assert client.post("/admin/evals/datasets/sample", data={"text": good}).status_code == 302
    assert "description: edited" in (tmp_path / "sample.yaml").read_text()


def test_an_unknown_dataset_is_a_422_beside_the_field(app, client, auth, tmp_path):
    agent_id = setup(app, auth, tmp_path)
    response = client.post(f"/admin/evals/agents/{agent_id}/runs", data={"dataset": "nope"})
    assert response.status_code == 422 and "There is no dataset named &#39;nope&#39;" in response.text


def test_the_agent_page_runs_a_dataset_by_name_never_a_file_path(app, client, auth, tmp_path):
    """`library.load` also takes a path, for `flask eval run FILE`; the form took one too, so an admin
    could have any .yaml or .json file on the server parsed, its keys echoed back in the errors."""
    agent_id = setup(app, auth, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.json").write_text('{"password": "hunter2"}')
    (elsewhere / "other.yaml").write_text(DATASET)
    for path in (elsewhere / "secret.json", elsewhere / "other.yaml", tmp_path / "sample.yaml"):
        response = client.post(f"/admin/evals/agents/{agent_id}/runs", data={"dataset": str(path)})
        assert response.status_code == 422, path
        assert "password" not in response.text and "There is no dataset named" in response.text
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(EvalRun.id))) == 0


def test_a_dataset_in_a_folder_is_listed_edited_and_run_by_its_folder_and_name(app, client, auth, tmp_path):
    agent_id = setup(app, auth, tmp_path)
    (tmp_path / "honesty").mkdir()
    (tmp_path / "honesty" / "claims.yaml").write_text(DATASET)
    (tmp_path / "honesty" / "notes.txt").write_text("not a dataset")
    assert "honesty/claims" in client.get("/admin/evals/").text
    page = client.get("/admin/evals/datasets/honesty/claims")
    assert page.status_code == 200 and "makes-a-table" in page.text
    edited = DATASET.replace("name: sample", "name: sample\ndescription: in a folder")
    assert client.post("/admin/evals/datasets/honesty/claims", data={"text": edited}).status_code == 302
    assert "in a folder" in (tmp_path / "honesty" / "claims.yaml").read_text()
    assert client.post(f"/admin/evals/agents/{agent_id}/runs", data={"dataset": "honesty/claims"}).status_code == 302
    for name in ("honesty/notes", "../sample", "honesty/../sample", "a/b/c"):
        assert client.get(f"/admin/evals/datasets/{name}").status_code == 404, name
