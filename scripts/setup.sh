#!/usr/bin/env bash
# Installs everything pytest-forall's Rocq track, sandbox and tests need on a Debian machine.
# Idempotent: already-installed pieces are skipped. Needs root for apt (as on CI and the dev machines).
# Fast when nothing changed: a stamp (.forall/setup.stamp) records what was installed (the package lists, this
# script, the toolchain roots' package list, pyproject.toml, the Python, the clone); when it matches and a check that needs no network passes (one
# dpkg-query, the agent CLIs on PATH, pytest_forall importable from this clone), setup ends at once.
# FORALL_SETUP_FORCE=1 runs every step anyway.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${FORALL_SETUP_PYTHON:-python3}"
stamp="$here/.forall/setup.stamp"

apt_packages=(coq libcoq-stdlib libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis libcoq-mathcomp-real-closed
  libcoq-mathcomp-zify libcoq-mathcomp-algebra-tactics libcoq-hammer libcoq-equations libcoq-hott libcoq-quickchick libcoq-interval bubblewrap chromium
  libcoq-core-ocaml-dev ocaml-findlib  # these two build the kernel judge plugin (lang/rocq/forall_judge.mlg)
  mmdebstrap  # builds the other Rocq toolchains' root filesystems (docs/toolchains.md)
  ocaml-dune)  # builds --forall-project projects that declare dune theories (docs/suites.md)
toolchains="${FORALL_TOOLCHAINS:-/var/cache/pytest-forall}"
agents=(claude codex opencode)

wanted_stamp() {
  { printf '%s\n' "${apt_packages[@]}" "agents=${FORALL_SETUP_AGENTS:-1}" "toolchains=${FORALL_SETUP_TOOLCHAINS:-1}:$toolchains" "$here"
    # toolchain.py holds the roots' package list (ROOT_PACKAGES): a change there must rebuild the roots
    cat "$here/pyproject.toml" "$here/scripts/setup.sh" "$here/pytest_forall/lang/rocq/toolchain.py"
    "$python" --version 2>&1; } | sha256sum | cut -d' ' -f1
}

installed_here() {  # no network: dpkg's database, PATH, and where Python finds the package
  [ "$(dpkg-query -W -f='${Status}\n' "${apt_packages[@]}" 2>/dev/null | grep -c "install ok installed")" \
    = "${#apt_packages[@]}" ] || return 1
  if [ "${FORALL_SETUP_AGENTS:-1}" = "1" ]; then
    for cli in "${agents[@]}"; do command -v "$cli" >/dev/null 2>&1 || return 1; done
  fi
  if [ "${FORALL_SETUP_TOOLCHAINS:-1}" = "1" ]; then
    for suite in trixie sid; do [ -f "$toolchains/$suite/.forall-toolchain.json" ] || return 1; done
  fi
  origin="$(cd / && env -u PYTHONPATH "$python" -c \
    'import importlib.util as u; s = u.find_spec("pytest_forall"); print(s.origin if s else "")' 2>/dev/null)"
  [ "$origin" = "$here/pytest_forall/__init__.py" ]
}

want="$(wanted_stamp)"
if [ "${FORALL_SETUP_FORCE:-0}" != "1" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && installed_here; then
  echo "setup: nothing changed since the last setup ($stamp); FORALL_SETUP_FORCE=1 runs it again"
  exit 0
fi

missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "${FORALL_SETUP_AGENTS:-1}" = "1" ]; then
  for cli in "${agents[@]}"; do
    if ! command -v "$cli" >/dev/null 2>&1; then
      echo "setup: npm install -g @anthropic-ai/claude-code @openai/codex opencode-ai"
      npm install -g --silent @anthropic-ai/claude-code @openai/codex opencode-ai \
        --allow-scripts=@anthropic-ai/claude-code,opencode-ai >/dev/null 2>&1 \
        || npm install -g --silent @anthropic-ai/claude-code @openai/codex opencode-ai >/dev/null
      break
    fi
  done
fi

echo "setup: pip install -e $here[test]"
"$python" -m pip install -q -e "$here[test]" 2>&1 | grep -v -E "^(WARNING: Running pip as|\[notice\])" || true

# The other Rocq toolchains the tests run on (docs/toolchains.md): Debian trixie's Coq 8.20 and sid's Rocq 9.2 as
# root filesystems outside the repository, reused while their package list is unchanged (a second call returns at once).
if [ "${FORALL_SETUP_TOOLCHAINS:-1}" = "1" ]; then
  for suite in trixie sid; do
    echo "setup: forall toolchain build $suite $toolchains/$suite"
    PYTHONPATH="$here" "$python" -m pytest_forall.cli toolchain build "$suite" "$toolchains/$suite" >/dev/null
  done
fi

mkdir -p "$(dirname "$stamp")"
printf '%s\n' "$want" > "$stamp"
