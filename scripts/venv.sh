# Sourced by scripts/*.sh and .ci/run (with $here set to the clone): the clone's own Python environment (issue 33).
# scripts/setup.sh makes it and installs this clone editable there; every script runs pytest-forall from it, so two
# clones on one machine never run each other's code.
forall_venv="$here/.venv"
forall_python="$forall_venv/bin/python"

need_venv() {  # for the scripts that run pytest: one line saying what to do when setup has not made it yet
  if [ ! -x "$forall_python" ]; then
    echo "$(basename "$0"): no environment for this clone at $forall_venv: run bash $here/scripts/setup.sh first" >&2
    exit 2
  fi
}
