#!/usr/bin/env bash
# Installs everything pytest-forall's Rocq track, sandbox and tests need on a Debian machine.
# Idempotent: already-installed pieces are skipped. Needs root for apt (as on CI and the dev machines).
# This clone gets its own virtual environment, <clone>/.venv (scripts/venv.sh), with the clone installed editable in
# it: the machine's Python is never changed, and another clone's setup never takes this one over.
# Fast when nothing changed: a stamp (.forall/setup.stamp) records what was installed (the package lists, this
# script, the toolchain roots' package list, pyproject.toml, the Python, the clone); when it matches and a check that needs no network passes (one
# dpkg-query, the agent CLIs on PATH, pytest_forall importable from this clone's environment), setup ends at once.
# FORALL_SETUP_FORCE=1 runs every step anyway. FORALL_SETUP_PYTHON: the interpreter the environment is made from.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${FORALL_SETUP_PYTHON:-python3}"
. "$here/scripts/venv.sh"
stamp="$here/.forall/setup.stamp"

apt_packages=(coq libcoq-stdlib libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis libcoq-mathcomp-real-closed
  libcoq-mathcomp-zify libcoq-mathcomp-algebra-tactics libcoq-hammer libcoq-equations libcoq-hott libcoq-quickchick libcoq-interval bubblewrap chromium
  libcoq-core-ocaml-dev ocaml-findlib  # these two build the kernel judge plugin (lang/rocq/forall_judge.mlg)
  mmdebstrap  # builds the other Rocq toolchains' root filesystems (docs/toolchains.md)
  ocaml-dune  # builds --forall-project projects that declare dune theories (docs/suites.md)
  ripgrep)  # OpenCode finds rg on PATH, never fetches one into the HOME its actor can write (docs/sandbox.md)
toolchains="${FORALL_TOOLCHAINS:-/var/cache/pytest-forall}"
agents=(claude codex opencode)

wanted_stamp() {
  { printf '%s\n' "${apt_packages[@]}" "agents=${FORALL_SETUP_AGENTS:-1}" "toolchains=${FORALL_SETUP_TOOLCHAINS:-1}:$toolchains" "$here"
    # toolchain.py holds the roots' package list (ROOT_PACKAGES): a change there must rebuild the roots
    cat "$here/pyproject.toml" "$here/scripts/setup.sh" "$here/pytest_forall/lang/rocq/toolchain.py"
    cat "$here/scripts/venv.sh"; "$python" --version 2>&1; } | sha256sum | cut -d' ' -f1
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
  imports_this_clone
}

imports_this_clone() {  # the clone's environment imports this clone's pytest_forall (from anywhere, PYTHONPATH unset)
  origin="$(cd / && env -u PYTHONPATH "$forall_python" -c \
    'import importlib.util as u; s = u.find_spec("pytest_forall"); print(s.origin if s else "")' 2>/dev/null)"
  [ "$origin" = "$here/pytest_forall/__init__.py" ]
}

want="$(wanted_stamp)"
if [ "${FORALL_SETUP_FORCE:-0}" != "1" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && installed_here; then
  echo "setup: nothing changed since the last setup ($stamp); FORALL_SETUP_FORCE=1 runs it again"
  echo "setup: this clone's environment is $forall_venv (. $forall_venv/bin/activate puts its forall, pytest and python first on PATH)"
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

# The clone's environment: its own site-packages first, then the machine's installed packages (the dependencies,
# reused: no download) as plain directories, so their .pth start-up hooks -- such as another clone's editable
# install into the machine's Python -- never run in it. pip comes from the machine's packages too (--without-pip).
if [ ! -x "$forall_python" ] || [ "$("$forall_python" --version 2>&1)" != "$("$python" --version 2>&1)" ]; then
  echo "setup: $python -m venv $forall_venv"
  "$python" -m venv --clear --without-pip "$forall_venv"
fi
site="$("$forall_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$python" -c 'import sys, sysconfig
p = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})  # the installation, even from a venv
print("\n".join(dict.fromkeys((p["purelib"], p["platlib"]))))' > "$site/zz_forall_machine_packages.pth"
echo "setup: pip install -e $here[test] into $forall_venv"
# editable_mode=compat: the clone's directory goes on sys.path before the machine's packages (.pth files run in
# name order), so this clone's pytest_forall wins over any installed elsewhere
"$forall_python" -m pip install -q --config-settings editable_mode=compat -e "$here[test]" 2>&1 \
  | grep -v -E "^(WARNING: Running pip as|\[notice\])" || true
if ! imports_this_clone; then
  echo "setup: $forall_python does not import $here/pytest_forall after pip install -e (see pip's output above)" >&2
  exit 1
fi
# pytest's own command in the environment: pip writes none here (pytest is one of the machine's packages), so after
# `. .venv/bin/activate` a bare `pytest` -- the README's commands -- was the machine's, loading another checkout's plugin
printf '#!%s\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n' "$forall_python" \
  > "$forall_venv/bin/pytest"
chmod +x "$forall_venv/bin/pytest"

# The other Rocq toolchains the tests run on (docs/toolchains.md): Debian trixie's Coq 8.20 and sid's Rocq 9.2 as
# root filesystems outside the repository, reused while their package list is unchanged (a second call returns at once).
if [ "${FORALL_SETUP_TOOLCHAINS:-1}" = "1" ]; then
  for suite in trixie sid; do
    echo "setup: forall toolchain build $suite $toolchains/$suite"
    "$forall_python" -m pytest_forall.cli toolchain build "$suite" "$toolchains/$suite" >/dev/null
  done
fi

mkdir -p "$(dirname "$stamp")"
printf '%s\n' "$want" > "$stamp"
echo "setup: this clone's environment is $forall_venv (. $forall_venv/bin/activate puts its forall, pytest and python first on PATH)"
