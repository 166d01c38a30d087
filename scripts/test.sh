#!/usr/bin/env bash
# The whole suite on SQLite, then the database tests again on PostgreSQL when one is configured.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1

echo "== Lint (ruff)"
.venv/bin/ruff check app tests benchmarks || exit 1

echo "== Layers (import-linter contracts in pyproject.toml)"
PYTHONPATH=. .venv/bin/lint-imports --no-cache || exit 1

echo "== Test suite on SQLite"
env -u SKILLDESK_TEST_DATABASE_URL .venv/bin/pytest "$@"
sqlite_status=$?

pg_status=0
if [ -n "${SKILLDESK_TEST_DATABASE_URL:-}" ]; then
  echo "== Database tests on PostgreSQL (${SKILLDESK_TEST_DATABASE_URL%%@*}@…)"
  .venv/bin/pytest -m "not browser" --ignore=tests/browser --ignore=tests/knowledge "$@"
  pg_status=$?
else
  echo "== PostgreSQL run skipped: SKILLDESK_TEST_DATABASE_URL is not set"
fi

echo "== Summary: SQLite run exit ${sqlite_status}, PostgreSQL run exit ${pg_status}"
[ "$sqlite_status" -eq 0 ] && [ "$pg_status" -eq 0 ]
