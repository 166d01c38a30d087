#!/usr/bin/env bash
# The whole suite on SQLite and, when one is configured, the database tests on PostgreSQL, side by side.
#
# The PostgreSQL pass leaves out what the SQLite pass already checks the same on every database: the browser
# journeys, the knowledge store (embedded Chroma either way), the pure rules and the tests whose servers run on
# a SQLite instance of their own (marked `once`).
# The two passes share nothing but the machine: each has its own database, and on Redis its own
# database number (the PostgreSQL pass takes the one below SKILLDESK_TEST_REDIS_URL's), so one pass's
# queue, wake-ups and flushed rate limits never reach the other. The PostgreSQL pass's output is
# printed after the SQLite pass's, whole.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1

echo "== Lint (ruff)"
.venv/bin/ruff check app tests benchmarks || exit 1

echo "== Layers (import-linter contracts in pyproject.toml)"
PYTHONPATH=. .venv/bin/lint-imports --no-cache || exit 1

pg_status=0
pg_log=""
if [ -n "${SKILLDESK_TEST_DATABASE_URL:-}" ]; then
  pg_log="$(mktemp -t skilldesk-pg-XXXXXX.log)"
  pg_redis="${SKILLDESK_TEST_REDIS_URL:-}"
  if [[ "$pg_redis" =~ ^(.*)/([0-9]+)$ ]]; then
    number="${BASH_REMATCH[2]}"
    pg_redis="${BASH_REMATCH[1]}/$(( number > 0 ? number - 1 : 1 ))"
  fi
  echo "== Database tests on PostgreSQL (${SKILLDESK_TEST_DATABASE_URL%%@*}@…), beside the SQLite pass"
  SKILLDESK_TEST_REDIS_URL="$pg_redis" \
    .venv/bin/pytest -m "not browser and not once" --ignore=tests/browser --ignore=tests/knowledge "$@" >"$pg_log" 2>&1 &
  pg_pid=$!
  trap 'kill "$pg_pid" 2>/dev/null' INT TERM EXIT
else
  echo "== PostgreSQL run skipped: SKILLDESK_TEST_DATABASE_URL is not set"
fi

notes="$(mktemp -t skilldesk-notes-XXXXXX)"  # what the suite has to say last (browser tests left out)
# The browser journeys and the knowledge store (SQLite, no Redis) in a third process, so that both cores stay
# busy to the end.
browser_log="$(mktemp -t skilldesk-browser-XXXXXX.log)"
echo "== Browser journeys and knowledge tests on SQLite, beside the other passes"
env -u SKILLDESK_TEST_DATABASE_URL -u SKILLDESK_TEST_REDIS_URL SKILLDESK_TEST_NOTES="$notes" \
  .venv/bin/pytest tests/browser tests/knowledge "$@" >"$browser_log" 2>&1 &
browser_pid=$!
trap 'kill "$browser_pid" ${pg_pid:-} 2>/dev/null' INT TERM EXIT

echo "== Test suite on SQLite"
env -u SKILLDESK_TEST_DATABASE_URL .venv/bin/pytest --ignore=tests/browser --ignore=tests/knowledge "$@"
sqlite_status=$?

wait "$browser_pid"
browser_status=$?
echo "== Browser journeys and knowledge tests on SQLite: output"
cat "$browser_log"
rm -f "$browser_log"
[ "$browser_status" -eq 0 ] || sqlite_status=$browser_status

if [ -n "$pg_log" ]; then
  wait "$pg_pid"
  pg_status=$?
  echo "== Database tests on PostgreSQL: output"
  cat "$pg_log"
  rm -f "$pg_log"
fi

trap - INT TERM EXIT
echo "== Summary: SQLite run exit ${sqlite_status} (browser journeys ${browser_status}), PostgreSQL run exit ${pg_status}"
cat "$notes"
rm -f "$notes"
[ "$sqlite_status" -eq 0 ] && [ "$pg_status" -eq 0 ]
