#!/usr/bin/env bash
# Installs everything pytest-forall's Rocq track, sandbox and tests need on a Debian machine.
# Idempotent: already-installed pieces are skipped. Needs root for apt (as on CI and the dev machines).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

apt_packages=(coq libcoq-stdlib libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis libcoq-mathcomp-real-closed
  libcoq-mathcomp-zify libcoq-mathcomp-algebra-tactics libcoq-hammer libcoq-equations bubblewrap chromium
  libcoq-core-ocaml-dev ocaml-findlib)  # the last two build the kernel judge plugin (lang/rocq/forall_judge.mlg)
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
