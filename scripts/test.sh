#!/usr/bin/env bash
# The test command: the plugin's own suite, 2 workers. Exits non-zero when no test ran (pytest's 5).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 -m pytest -p no:hypothesispytest -n 2 "$@"
