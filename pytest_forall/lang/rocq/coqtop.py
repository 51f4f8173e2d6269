"""Trying many closing tactics against one statement in a single ``coqtop`` session.

Loading mathcomp/analysis costs most of a compile (about 1.4 s of every ``coqc`` run), so the
portfolio frontend loads the statement once and asks ``coqtop`` for one tactic after another.
A winning tactic is only a *suggestion*: the candidate built from it goes through the full verifier.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pexpect

PROMPT = re.compile(r"<prompt>(?P<text>.*?)</prompt>")
SENTINEL = "forall_probe_loaded_sentinel"


class TacticProbe:
    def __init__(self, coqtop: str, mem_mb: int, prefix: list[str] | None = None,
                 args: list[str] | None = None) -> None:
        self.coqtop = coqtop
        self.mem_mb = mem_mb
        #: a command prefix that runs coqtop in the sandbox (see sandbox.interactive_prefix), or none
        self.prefix = prefix or []
        #: coqtop arguments before ``-q``: the load path (``-Q``/``-R``) a project's items need
        self.args = args or []

    def _spawn(self, cwd: Path) -> pexpect.spawn:
        # ulimit keeps a runaway evaluation from taking the machine; -emacs marks every prompt.
        argv = ["-c", 'ulimit -v "$1"; shift; exec "$@"', "forall-coqtop", str(self.mem_mb * 1024),
                *self.prefix, self.coqtop, *self.args, "-q", "-emacs"]
        return pexpect.spawn("/bin/sh", argv, cwd=str(cwd), encoding="utf-8", codec_errors="replace",
                             timeout=None, echo=False)

    def _load(self, child: pexpect.spawn, statement: str, theorem: str, timeout: float) -> tuple[bool, str]:
        """Send the statement; True when coqtop ends up in proof mode of ``theorem``.

        The statement's sentence count is unknown, so a sentinel that always fails with its own name
        marks the end of loading; from there on every sentence sent yields exactly one prompt.
        """
        child.expect(PROMPT, timeout=timeout)
        child.send(statement.rstrip() + f"\nCheck {SENTINEL}.\n")
        log = []
        deadline = time.monotonic() + timeout
        while True:
            child.expect(PROMPT, timeout=max(1.0, deadline - time.monotonic()))
            log.append(child.before or "")
            if SENTINEL in (child.before or ""):
                errors = [chunk for chunk in log[:-1] if "Error:" in chunk]
                in_proof = f"|{theorem}|" in child.match.group("text")
                return in_proof and not errors, "".join(log)

    def run(self, statement: str, tactics: list[str], cwd: Path, timeout: float,
            theorem: str = "") -> tuple[str, int, str]:
        theorem = theorem or re.findall(r"(?:Theorem|Lemma|Corollary|Proposition)\s+([\w']+)", statement)[-1]
        log: list[str] = []
        attempts = 0
        child: pexpect.spawn | None = None
        try:
            for tactic in tactics:
                if child is None or not child.isalive():
                    child = self._spawn(cwd)
                    try:
                        loaded, text = self._load(child, statement, theorem, timeout=120)
                    except (pexpect.EOF, pexpect.TIMEOUT) as exc:
                        log.append(f"load failed: {type(exc).__name__}")
                        return "", attempts, "\n".join(log)
                    if not loaded:
                        log.append("load failed: " + text[-1500:])
                        return "", attempts, "\n".join(log)
                attempts += 1
                child.send(f"Timeout {max(1, int(timeout))} solve [ {tactic} ].\n")
                try:
                    child.expect(PROMPT, timeout=timeout + 10)
                except pexpect.EOF:
                    log.append(f"{tactic}: coqtop died ({(child.before or '')[-200:].strip()})")
                    child = None
                    continue
                except pexpect.TIMEOUT:
                    log.append(f"{tactic}: no answer within {timeout + 10:.0f} s")
                    child.terminate(force=True)
                    child = None
                    continue
                reply = child.before or ""
                if "No more goals" in reply:
                    log.append(f"{tactic}: closed the goal")
                    return tactic, attempts, "\n".join(log)
                log.append(f"{tactic}: " + (re.findall(r"Error:.*", reply) or ["no"])[0][:200])
        finally:
            if child is not None:
                child.terminate(force=True)
        return "", attempts, "\n".join(log)
