"""What `make test` says about itself: a machine without chromium is told so in one line, with the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_a_run_without_chromium_ends_with_one_line_saying_how_many_browser_tests_skipped(tmp_path):
    notes = tmp_path / "notes.txt"
    env = {name: value for name, value in os.environ.items()  # its own SQLite database, no shared service
           if name not in ("SKILLDESK_TEST_DATABASE_URL", "SKILLDESK_TEST_REDIS_URL")}
    env |= {"SKILLDESK_TEST_CHROMIUM": str(tmp_path / "no-chromium"), "SKILLDESK_TEST_NOTES": str(notes)}
    # Collect two browser files and one other test: only the browser tests are left out.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/browser/test_sidebar.py",
         "tests/browser/test_accounts.py", "tests/test_pager.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    wanted = (f"browser tests skipped: {tmp_path / 'no-chromium'} is not installed; "
              "install it with: apt-get install -y chromium chromium-driver")
    [line] = [line for line in done.stdout.splitlines() if "browser test" in line and "skipped" in line]
    assert line.endswith(wanted) and int(line.split()[0]) >= 2
    assert "SKIPPED" not in done.stdout  # one line, not one per test
    assert notes.read_text() == line + "\n"  # what scripts/test.sh prints last
    assert " passed" in done.stdout.splitlines()[-1] and " deselected" in done.stdout.splitlines()[-1]
