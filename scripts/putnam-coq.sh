#!/usr/bin/env bash
# The main job on a fresh machine: install, then run every PutnamBench Coq problem through the
# embedded portfolio actor and the full verifier, 2 workers. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/setup.sh"
. "$here/scripts/venv.sh"
export PUTNAMBENCH_ROOT="${PUTNAMBENCH_ROOT:-$here/../shared/benchmarks/PutnamBench}"
export PATH="$forall_venv/bin:$PATH"
cd "$here"
exec "$forall_python" -m pytest benchmarks/putnam -m coq --forall-frontend=portfolio -n "${FORALL_WORKERS:-2}" \
  --dist worksteal --junitxml "reports/putnam-coq.xml" "$@"
