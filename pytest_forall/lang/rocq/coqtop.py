"""Trying many closing tactics against one statement in a single ``coqtop`` session.

Loading mathcomp/analysis costs most of a compile (about 1.4 s of every ``coqc`` run), so the
portfolio frontend loads the statement once and asks ``coqtop`` for one tactic after another.
A winning tactic is only a *suggestion*: the candidate built from it goes through the full verifier.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import signal
import time
import tty
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pexpect

from pytest_forall.core.proc import CORES, POLL, child_pids, cpu_seconds, process_tree
from pytest_forall.core.prover import SessionDied, SessionTimeout

PROMPT = re.compile(r"<prompt>(?P<text>.*?)</prompt>")
SENTINEL = "forall_probe_loaded_sentinel"
#: A tactic's budget is CPU time of the coqtop process; Coq's own ``Timeout`` (wall clock: Coq 8.16's
#: ``Control.timeout``, ``lib/control.ml`` of coq-core, arms ``setitimer ITIMER_REAL``, so time coqtop spends
#: descheduled counts) is only a backstop this many times longer, so that on a loaded machine (load 24 on 2 cores
#: gives coqtop about 1/12 of a core) a script gets the computation an idle one gives it. A backstop that expires
#: anyway is reported (``TacticProbe.timed_out``), never read as the script failing.
WALL_FACTOR = 20


def interrupt(pid: int) -> None:
    """``SIGINT`` to the leaves of ``pid``'s tree (coqtop, not a sandbox wrapper around it): coqtop answers
    "User interrupt" and keeps its state, as after a ``Timeout``."""
    for current in process_tree(pid):
        if not child_pids(current):
            try:
                os.kill(current, signal.SIGINT)
            except OSError:
                continue


@dataclass(frozen=True)
class Goal:
    """Sentences that state ``theorem`` (and open its proof), and the (tactic, seconds) pairs to try on it."""

    statement: str
    theorem: str
    tactics: list[tuple[str, float]]
    #: False for a query about the environment (not an attempt on the problem; not charged as a compile)
    counted: bool = True
    #: CPU seconds the statement's own computation may take to load (an audit tie's conversion): past them coqtop
    #: is interrupted and the goal does not load; None: only the load's wall-clock limit
    load_cpu: float | None = None


#: Coq's answer when its ``Timeout`` (wall clock) expired (coq-core ``vernac/himsg.ml``: ``CErrors.Timeout``)
_WALL_TIMEOUT = re.compile(r"Error:\s*Timeout!")
#: The log's mark of a goal whose statement did not load because its computation spent the goal's CPU budget
#: (``Goal.load_cpu``: coqtop interrupted, "User interrupt"): the budget's end, not a statement that does not load
LOAD_BUDGET_SPENT = "load failed (its CPU budget spent): "
#: How much of a closed goal's proof term ``TacticProbe.show_proof`` keeps.
PROOF_CHARS = 200_000


class TacticProbe:
    def __init__(self, coqtop: str, mem_mb: int, prefix: list[str] | None = None,
                 args: list[str] | None = None, show_goals: bool = False) -> None:
        self.coqtop = coqtop
        self.mem_mb = mem_mb
        #: a command prefix that runs coqtop in the sandbox (see sandbox.interactive_prefix), or none
        self.prefix = prefix or []
        #: coqtop arguments before ``-q``: the load path (``-Q``/``-R``) a project's items need
        self.args = args or []
        #: ask ``Show.`` after each tactic: Rocq 9's coqtop prints no goals (nor "No more goals") by itself
        self.show_goals = show_goals
        #: the goals (theorem names) whose proof term is asked (``Show Proof.``) once they are closed and kept (its first
        #: ``PROOF_CHARS``) in ``proofs``: the statement audit reads the values its refutation search instantiated
        #: from it (a description for humans, not a check; only there: printing a term costs the session's CPU)
        self.show_proof: set[str] = set()
        self.proofs: dict[str, str] = {}

    def spawn(self, cwd: Path) -> pexpect.spawn:
        """A coqtop in ``cwd`` (in the sandbox when ``prefix`` says so), its pty raw, ready for its first prompt."""
        return self._spawn(cwd)

    def _spawn(self, cwd: Path) -> pexpect.spawn:
        # ulimit keeps a runaway evaluation from taking the machine; -emacs marks every prompt.
        argv = ["-c", 'ulimit -v "$1"; shift; exec "$@"', "forall-coqtop", str(self.mem_mb * 1024),
                *self.prefix, self.coqtop, *self.args, "-q", "-emacs"]
        child = pexpect.spawn("/bin/sh", argv, cwd=str(cwd), encoding="utf-8", codec_errors="replace",
                              timeout=None, echo=False)
        # A pty in canonical mode keeps at most 4095 bytes of a line and drops the rest (a long script then got
        # no answer at all); raw mode passes every byte through, and the terminal's special characters
        # (^C, ^D in a script's text) stay plain bytes.
        tty.setraw(child.child_fd)
        child.delaybeforesend = None  # pexpect's default 50 ms pause before each send would dominate a warm call
        return child

    def _load(self, child: pexpect.spawn, statement: str, theorem: str, timeout: float,
              fresh: bool = True, cpu_budget: float | None = None) -> tuple[bool, str]:
        """Send the statement; True when it loaded without error and, if ``theorem`` is named, coqtop ends up
        in proof mode of it. ``fresh``: the first prompt of a newly started coqtop is still to be read.
        ``cpu_budget``: CPU seconds the loading may take, past them coqtop is interrupted (the sentence it runs fails
        with "User interrupt", so the statement does not load); ``timeout`` stays the wall-clock limit.

        The statement's sentence count is unknown, so a sentinel that always fails with its own name
        marks the end of loading; from there on every sentence sent yields exactly one prompt.
        """
        if fresh:
            child.expect(PROMPT, timeout=timeout)
        child.send(statement.rstrip() + f"\nCheck {SENTINEL}.\n")
        log = []
        deadline = time.monotonic() + timeout
        base = cpu_seconds(child.pid) if cpu_budget is not None else None
        while True:
            if base is None or cpu_budget is None:
                child.expect(PROMPT, timeout=max(1.0, deadline - time.monotonic()))
            else:
                _await_prompt(child, base, cpu_budget, deadline)
            log.append(child.before or "")
            if SENTINEL in (child.before or ""):
                errors = [chunk for chunk in log[:-1] if "Error:" in chunk]
                in_proof = not theorem or f"|{theorem}|" in child.match.group("text")
                return in_proof and not errors, "".join(log)

    def run(self, statement: str, tactics: list[str], cwd: Path, timeout: float,
            theorem: str = "", on_attempt: Callable[[], None] | None = None) -> tuple[str, int, str]:
        """The first of ``tactics`` that closes ``statement``'s last theorem (or ""), attempts made, and a log."""
        theorem = theorem or re.findall(r"(?:Theorem|Lemma|Corollary|Proposition)\s+([\w']+)", statement)[-1]
        winners, attempts, log = self.run_goals("", [Goal(statement, theorem, [(t, timeout) for t in tactics])], cwd,
                                                on_attempt=on_attempt)
        return winners.get(theorem, ""), attempts, log

    def run_goals(self, preamble: str, goals: Iterable[Goal], cwd: Path, deadline: float | None = None,
                  winners: dict[str, str] | None = None, max_attempts: int | None = None,
                  cpu_budget: float | None = None,
                  on_attempt: Callable[[], None] | None = None) -> tuple[dict[str, str], int, str]:
        """Try each goal's tactics in one ``coqtop`` that loaded ``preamble`` once; stop a goal at its first win.

        Returns {theorem: winning tactic} for the goals closed (also filled into ``winners`` as they close,
        so a generator of goals can choose later goals by earlier results), the attempts made and a log. A goal is
        abandoned with ``Abort.`` before the next is stated. A crash or a hung tactic (no prompt within its
        ``Timeout`` plus a margin) kills coqtop and restarts it with the preamble and the current goal; a goal
        that does not load is skipped. Past ``deadline`` (a ``time.monotonic()`` value) or after ``max_attempts``
        counted attempts nothing more is tried, nor once coqtop has used ``cpu_budget`` seconds of CPU (all its
        sessions together, loading included). Each tactic's seconds are CPU seconds (see ``WALL_FACTOR``);
        ``self.cpu_used`` and ``self.wall_used`` are what the call spent. ``on_attempt`` is called as each counted
        attempt starts (the item's live compile count: ``forall watch`` shows it while the search runs).
        ``self.timed_out`` names what a wall-clock limit ended (``deadline``, a load's or Coq's ``Timeout``
        backstop) rather than a CPU budget or Coq: on a loaded machine, what an idle one would have tried or found.
        """
        self.cpu_used, self.wall_used = 0.0, 0.0
        self.timed_out: list[str] = []
        #: the goals whose statement loaded (a generator of goals may depend on it)
        self.loaded: set[str] = set()
        began = time.monotonic()
        try:
            return self._run_goals(preamble, goals, cwd, deadline, winners, max_attempts, cpu_budget, on_attempt)
        finally:
            self.wall_used = time.monotonic() - began

    def _run_goals(self, preamble: str, goals: Iterable[Goal], cwd: Path, deadline: float | None,
                   winners: dict[str, str] | None, max_attempts: int | None,
                   cpu_budget: float | None,
                   on_attempt: Callable[[], None] | None) -> tuple[dict[str, str], int, str]:
        log: list[str] = []
        winners = {} if winners is None else winners
        attempts = 0
        child: pexpect.spawn | None = None
        fresh = True
        spent = 0.0  # CPU seconds of the sessions that ended
        last = 0.0  # the latest reading of the current session's CPU seconds

        def cpu() -> float:
            nonlocal last
            if child is not None:
                last = cpu_seconds(child.pid) or last
            self.cpu_used = spent + last
            return self.cpu_used

        def end() -> None:
            nonlocal child, spent, last
            if child is not None:
                cpu()
                child.terminate(force=True)
            spent, last, child = spent + last, 0.0, None

        try:
            for goal in goals:
                stated = False
                for tactic, timeout in goal.tactics:
                    if deadline is not None and time.monotonic() >= deadline:
                        log.append(f"{goal.theorem}: deadline reached")
                        self.timed_out.append(f"the search's wall-clock deadline, at CPU {cpu():.1f} s")
                        return winners, attempts, "\n".join(log)
                    if cpu_budget is not None and cpu() >= cpu_budget:
                        log.append(f"{goal.theorem}: CPU budget of {cpu_budget:.0f} s reached")
                        return winners, attempts, "\n".join(log)
                    if goal.counted and max_attempts is not None and attempts >= max_attempts:
                        log.append(f"{goal.theorem}: attempt budget of {max_attempts} reached")
                        return winners, attempts, "\n".join(log)
                    if child is None or not child.isalive():
                        end()
                        child, stated, fresh = self._spawn(cwd), False, True
                        try:
                            loaded, text = self._load(child, preamble, "", timeout=120) if preamble else (True, "")
                            fresh = fresh and not preamble
                        except (pexpect.EOF, pexpect.TIMEOUT) as exc:
                            log.append(f"load failed: {type(exc).__name__}")
                            if isinstance(exc, pexpect.TIMEOUT):
                                self.timed_out.append("loading the preamble (120 s wall)")
                            return winners, attempts, "\n".join(log)
                        if not loaded:
                            log.append("load failed: " + text[-1500:])
                            return winners, attempts, "\n".join(log)
                    if not stated:
                        try:
                            loaded, text = self._load(child, goal.statement, goal.theorem, timeout=120, fresh=fresh,
                                                      cpu_budget=goal.load_cpu)
                            fresh = False
                        except (pexpect.EOF, pexpect.TIMEOUT) as exc:
                            log.append(f"{goal.theorem}: load failed: {type(exc).__name__}")
                            if isinstance(exc, pexpect.TIMEOUT):
                                self.timed_out.append(f"loading {goal.theorem} (120 s wall)")
                            end()
                            break
                        if not loaded:
                            if _WALL_TIMEOUT.search(text):  # a ``Timeout`` in the statement: a wall-clock backstop
                                self.timed_out.append(f"loading {goal.theorem} (Coq's Timeout, wall clock)")
                            spent = goal.load_cpu is not None and "User interrupt" in text
                            log.append(f"{goal.theorem}: {LOAD_BUDGET_SPENT if spent else 'load failed: '}"
                                       + text[-1500:])
                            end()
                            break
                        stated = True
                        self.loaded.add(goal.theorem)
                    attempts += goal.counted
                    if goal.counted and on_attempt is not None:
                        on_attempt()
                    started, before = time.monotonic(), cpu()
                    try:
                        reply = self._attempt(child, tactic, timeout)
                    except pexpect.EOF:
                        log.append(f"{tactic}: coqtop died ({(child.before or '')[-200:].strip()})")
                        killed = killed_from_outside(child)
                        if killed:  # not the script's failure: the search did not try it (never "nothing found")
                            self.timed_out.append(f"a script of {goal.theorem} (coqtop {killed})")
                        end()
                        continue
                    except pexpect.TIMEOUT:
                        log.append(f"{tactic}: no answer within {timeout * WALL_FACTOR + 10:.0f} s")
                        self.timed_out.append(f"a script of {goal.theorem} (no answer, wall clock)")
                        end()
                        continue
                    if _WALL_TIMEOUT.search(reply):  # Coq's backstop, not the CPU budget (that answers "User interrupt")
                        self.timed_out.append(f"a script of {goal.theorem} (Coq's Timeout, wall clock)")
                    if self.show_goals and "Error:" not in reply:
                        child.send("Show.\n")
                        try:
                            child.expect(PROMPT, timeout=60)
                        except (pexpect.EOF, pexpect.TIMEOUT):
                            end()
                            log.append(f"{tactic}: Show. got no answer")
                            continue
                        reply += child.before or ""
                    took = f" ({time.monotonic() - started:.2f} s, CPU {cpu() - before:.2f} s)"
                    if "No more goals" in reply:
                        log.append(f"{tactic}: closed the goal{took}")
                        winners[goal.theorem] = tactic
                        if goal.theorem in self.show_proof:
                            child.send("Show Proof.\n")
                            try:
                                child.expect(PROMPT, timeout=60)
                                self.proofs[goal.theorem] = (child.before or "")[:PROOF_CHARS]
                            except (pexpect.EOF, pexpect.TIMEOUT):
                                end()
                                break
                        break
                    log.append(f"{tactic}: " + (re.findall(r"Error:.*", reply) or ["no"])[0][:200].strip() + took)
                if child is not None and child.isalive() and stated:
                    child.send("Abort.\n")
                    try:
                        child.expect(PROMPT, timeout=60)
                    except (pexpect.EOF, pexpect.TIMEOUT):
                        end()
        finally:
            end()
        return winners, attempts, "\n".join(log)

    @staticmethod
    def _attempt(child: pexpect.spawn, tactic: str, seconds: float) -> str:
        """coqtop's reply to ``tactic`` given ``seconds`` of CPU time: past them coqtop is interrupted (SIGINT,
        answered like a ``Timeout``). Without ``/proc`` the budget is Coq's ``Timeout`` in wall-clock seconds.
        Raises ``pexpect.TIMEOUT`` when no prompt comes within the wall backstop plus a margin."""
        base = cpu_seconds(child.pid)
        wall = seconds if base is None else seconds * WALL_FACTOR
        child.send(f"Timeout {max(1, math.ceil(wall))} solve [ {tactic} ].\n")
        if base is None:
            child.expect(PROMPT, timeout=wall + 10)
        else:
            _await_prompt(child, base, seconds, time.monotonic() + wall + 10, grace=10)
        return child.before or ""


def killed_from_outside(child: pexpect.spawn, wait: float = 2.0) -> str:
    """How a coqtop that closed its terminal ended, when it was killed from outside (SIGKILL or SIGTERM, directly or
    as a sandbox reports it, 128 + N: the memory cgroup, the machine), else "": a crash of its own (a stack overflow's
    SIGSEGV, an exit) is the script's failure. Waits at most ``wait`` seconds for it to be reaped."""
    limit = time.monotonic() + wait
    with contextlib.suppress(pexpect.ExceptionPexpect, OSError):
        while child.isalive() and time.monotonic() < limit:
            time.sleep(POLL)
    signal_number = child.signalstatus or ((child.exitstatus or 0) - 128 if (child.exitstatus or 0) > 128 else 0)
    return f"killed by signal {signal_number}" if signal_number in (signal.SIGKILL, signal.SIGTERM) else ""


def _await_prompt(child: pexpect.spawn, base: float, seconds: float, limit: float, grace: float | None = None) -> None:
    """Wait for coqtop's next prompt, reading its CPU time: once it has used ``seconds`` since ``base`` it is
    interrupted (once; then it has ``grace`` wall seconds more at most to answer). Raises ``pexpect.TIMEOUT`` past
    ``limit`` (a ``time.monotonic()`` value): the wall-clock backstop. Until the budget could have been spent
    (``CORES``), ``/proc`` is not read."""
    interrupted = False
    wait = max(POLL, min(seconds / CORES, limit - time.monotonic()))
    while True:
        try:
            child.expect(PROMPT, timeout=wait)  # returns as soon as the prompt comes, however long ``wait`` is
            return
        except pexpect.TIMEOUT:
            if time.monotonic() >= limit:
                raise
        used = cpu_seconds(child.pid)
        if used is not None and used - base >= seconds and not interrupted:
            interrupt(child.pid)
            interrupted = True
            if grace is not None:
                limit = min(limit, time.monotonic() + grace)
        if used is not None and not interrupted:
            # the budget left cannot be spent sooner than this (CORES): no reading of /proc before
            wait = max(POLL, min((seconds - (used - base)) / CORES, limit - time.monotonic()))
        else:
            wait = POLL


# --- a warm session for the actor's goals/try/query tools -------------------------------------------------------

#: ``-emacs`` prompt: ``<prompt>NAME < STATE |PROOFS| DEPTH < </prompt>``; STATE is the state id ``BackTo`` takes.
SESSION_PROMPT = re.compile(r"<prompt>(?P<name>\S*) < (?P<state>\d+) \|(?P<proofs>[^|]*)\| \d+ < </prompt>")
#: ``Locate`` of ``SESSION_SENTINEL`` + a nonce answers that nothing has it; the reply marks where a resynchronised
#: reply ends. The nonce is the session's own: no text sent to it, nor any output of Coq, can contain it.
SESSION_SENTINEL = "forall_session_sentinel_"


#: how Coq starts an error message (after the echo of the input), with or without ``-emacs`` markup around it
SESSION_ERROR = re.compile(r"(?m)^(?:<[a-z]+>)?Error:")


class SessionForged(Exception):
    """Coq's output spelled the prompt markup (a computed string can): the replies read since the last check are
    not the sentences' own. The session is closed; the caller's text, not the machine, is the cause."""


@dataclass
class Step:
    """One sentence the session executed: its text (the key for reuse), the state after it, and Coq's reply."""

    text: str
    state: int
    reply: str


class CoqSession:
    """One long-lived ``coqtop -emacs`` whose executed sentences are remembered with their state ids.

    :meth:`sync` brings it to the state after a list of sentences, reusing the longest prefix already executed
    (``BackTo`` that state) and executing only the rest: an edit near the end of a proof costs the edited
    sentences, not the imports. Success is read from Coq itself: a sentence that fails leaves the prompt's state id
    unchanged and says ``Error:``. Every wait ends at the caller's deadline (:class:`SessionTimeout`, the
    process is killed); a dead process raises :class:`SessionDied`. Not thread-safe: the caller serialises calls.
    """

    def __init__(self, probe: TacticProbe, cwd: Path, setup: tuple[str, ...] = ("Set Printing Unfocused.",)) -> None:
        self.probe = probe
        self.cwd = cwd
        #: sentences run right after start, part of the base state (Coq then prints unfocused goals too)
        self.setup = setup
        self.child: pexpect.spawn | None = None
        self.steps: list[Step] = []
        self.base = 0
        self.state = 0
        self.proofs = ""
        self.starts = 0
        self.sentinel = SESSION_SENTINEL + secrets.token_hex(8)

    @property
    def alive(self) -> bool:
        return self.child is not None and self.child.isalive()

    def close(self) -> None:
        if self.child is not None:
            try:
                self.child.terminate(force=True)
            except OSError:
                pass
        self.child, self.steps = None, []

    def _expect(self, deadline: float) -> str:
        assert self.child is not None
        try:
            self.child.expect(SESSION_PROMPT, timeout=max(0.01, deadline - time.monotonic()))
        except pexpect.TIMEOUT:
            self.close()
            raise SessionTimeout() from None
        except pexpect.EOF:
            tail = (self.child.before or "")[-300:].strip()
            self.close()
            raise SessionDied(f"coqtop exited ({tail})" if tail else "coqtop exited") from None
        match = self.child.match
        self.state, self.proofs = int(match.group("state")), match.group("proofs")
        return self.child.before or ""

    def start(self, deadline: float) -> None:
        """A fresh coqtop with the setup sentences run: the base every sync starts from."""
        self.close()
        self.child = self.probe.spawn(self.cwd)
        self.starts += 1
        self._expect(deadline)
        for sentence in self.setup:
            self.child.send(sentence + "\n")
            self._expect(deadline)
        self.base = self.state

    def _resync(self, deadline: float) -> str:
        """Send the sentinel and read its reply: output some commands print after their prompt (``BackTo`` reprints
        the goals late) is swallowed here. Exactly one prompt comes before the sentinel's answer; one more is a
        prompt Coq's output imitated (:class:`SessionForged`), none a dead session."""
        assert self.child is not None
        # a command that succeeds: the goals BackTo owes come out with the next successful command's reply
        self.child.send(f"Locate {self.sentinel}.\n")
        text = self._expect(deadline)
        if self.sentinel not in text:
            self.close()
            raise SessionForged()
        return text

    def verify(self, deadline: float) -> None:
        """Check that every reply read so far was a sentence's own (:meth:`_resync`); nothing to check without a
        running coqtop."""
        if self.alive:
            self._resync(deadline)

    def back_to(self, state: int, deadline: float) -> None:
        if self.child is None:
            self.start(deadline)
        if self.state != state:
            assert self.child is not None
            self.child.send(f"BackTo {state}.\n")
            self._expect(deadline)
            landed = self.state
            self._resync(deadline)
            if landed != state:  # the state is gone: nothing this session remembers can be trusted
                self.close()
                raise SessionDied(f"coqtop could not go back to state {state}")

    def run(self, text: str, units: int, deadline: float) -> tuple[bool, str]:
        """Execute one sentence (``units`` prompts: a bullet before a tactic is a sentence of its own); (ok, reply).
        On an error the state goes back to where it was before the sentence."""
        assert self.child is not None
        before = self.state
        self.child.send(text + "\n")
        replies, ok = [], True
        for _ in range(max(1, units)):
            previous = self.state
            replies.append(self._expect(deadline))
            # Coq 8.16 gives every sentence that succeeds a new state; Rocq 9 not a query (``Show.``), so a sentence
            # failed when its state did not move *and* Coq said ``Error:``
            ok = ok and (self.state != previous or not SESSION_ERROR.search(replies[-1]))
        if not ok:
            self.back_to(before, deadline)
        return ok, "".join(replies)

    def sync(self, sentences: list[tuple[str, int]], deadline: float) -> tuple[int, str]:
        """Bring the session to the state after ``sentences`` ((text, units) each), reusing the longest executed
        prefix; returns (how many executed, the failing sentence's reply or ""). Stops at the first failure."""
        if self.child is not None and not self.child.isalive():
            self.close()
            raise SessionDied("coqtop had exited between calls")
        if self.child is None:
            self.start(deadline)
        keep = 0
        while keep < min(len(self.steps), len(sentences)) and self.steps[keep].text == sentences[keep][0]:
            keep += 1
        self.steps = self.steps[:keep]
        self.back_to(self.steps[-1].state if self.steps else self.base, deadline)
        for text, units in sentences[keep:]:
            ok, reply = self.run(text, units, deadline)
            if not ok:
                return len(self.steps), reply
            self.steps.append(Step(text, self.state, reply))
        return len(self.steps), ""

    def ask(self, text: str, deadline: float) -> tuple[bool, str]:
        """Run one command that is not part of the prefix (``Show.``, a query); the next :meth:`sync` goes back."""
        if self.child is None:
            raise SessionDied("no coqtop is running")
        return self.run(text, 1, deadline)
