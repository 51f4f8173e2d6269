#!/usr/bin/env bash
# The main job on a fresh machine: install, then run every PutnamBench Coq problem through the
# embedded portfolio actor and the full verifier, 2 workers. Extra arguments go to pytest.
# Each call writes its own JUnit file, reports/putnam-coq-<UTC time>.xml (an interrupted second call never replaces
# the first one's), and points reports/putnam-coq.xml at the latest.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/setup.sh"
. "$here/scripts/venv.sh"
export PUTNAMBENCH_ROOT="${PUTNAMBENCH_ROOT:-$here/../shared/benchmarks/PutnamBench}"
export PATH="$forall_venv/bin:$PATH"
cd "$here"
mkdir -p reports
xml="putnam-coq-$(date -u +%Y%m%dT%H%M%SZ)-$$.xml"
ln -sfn "$xml" reports/putnam-coq.xml
exec "$forall_python" -m pytest benchmarks/putnam -m coq --forall-frontend=portfolio -n "${FORALL_WORKERS:-2}" \
  --dist worksteal --junitxml "reports/$xml" "$@"
