#!/usr/bin/env bash
# The test command: the plugin's own suite, 2 workers, in this clone's environment (scripts/setup.sh makes it).
# Exits non-zero when no test ran (pytest's 5).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/venv.sh"
need_venv
cd "$here"
export PATH="$forall_venv/bin:$PATH"  # the tests' `forall` and `python` are this clone's too
exec "$forall_python" -m pytest -p no:hypothesispytest -n 2 "$@"
