#!/usr/bin/env bash
# Installs everything pytest-forall's Rocq track, sandbox and tests need on a Debian machine.
# Idempotent: already-installed pieces are skipped. Needs root for apt (as on CI and the dev machines).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

apt_packages=(coq libcoq-stdlib libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis libcoq-mathcomp-real-closed
  libcoq-mathcomp-zify libcoq-mathcomp-algebra-tactics libcoq-hammer bubblewrap chromium
  libcoq-core-ocaml-dev ocaml-findlib  # these two build the kernel judge plugin (lang/rocq/forall_judge.mlg)
  mmdebstrap)  # builds the other Rocq toolchains' root filesystems (docs/toolchains.md)
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
  for cli in claude codex opencode; do
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
python3 -m pip install -q -e "$here[test]" 2>&1 | grep -v -E "^(WARNING: Running pip as|\[notice\])" || true

# The other Rocq toolchains the tests run on (docs/toolchains.md): Debian trixie's Coq 8.20 and sid's Rocq 9.2 as
# root filesystems outside the repository, reused while their package list is unchanged (a second call returns at once).
if [ "${FORALL_SETUP_TOOLCHAINS:-1}" = "1" ]; then
  toolchains="${FORALL_TOOLCHAINS:-/var/cache/pytest-forall}"
  for suite in trixie sid; do
    echo "setup: forall toolchain build $suite $toolchains/$suite"
    PYTHONPATH="$here" python3 -m pytest_forall.cli toolchain build "$suite" "$toolchains/$suite" >/dev/null
  done
fi
