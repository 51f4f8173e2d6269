"""The actor's interactive tools for Lean — ``goals``, ``try``, ``query`` — over one warm REPL process.

**Untested on real Lean.** The protocol is leanprover-community/repl's, read from its sources (docs/lean-facts.md
I1-I6); the tests drive the REPL stand-in (``tests/standin/repl``), which checks the plumbing (framing, numbers,
refusals, restarts, the file left alone), never what Lean would answer. The tools are offered only when option
``lean_repl`` names a REPL executable built for the project's toolchain.

How the calls map onto the protocol: the template's ``import`` header is sent once without ``env`` (the warm
imports, I1); ``goals(line)`` sends the candidate cut after ``line`` plus a ``sorry`` on the next line, on that env,
and answers the goal the REPL lists for that ``sorry`` (I2); ``try`` runs one ``{"tactic", "proofState"}`` step on
that state (I3: a new state is made, the old one is unchanged, so nothing is undone and the file is never written);
``query`` runs one ``#check``/``#print axioms`` on the env of the template's declarations before the theorem (I4).
The header lines are sent as blank lines, so every position the REPL answers is the file's own line. A process that
dies or outlives the call's budget is killed and rebuilt on the next call (I5): infra, never the proof's.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_forall.core.model import Task
from pytest_forall.core.prover import (
    ProofTools,
    SessionAnswer,
    SessionDied,
    SessionRefused,
    SessionTimeout,
    call_restarting,
)
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.lean.messages import is_sorry_warning

UNTESTED = "Lean's REPL, untested on real Lean"
#: What the actor is told about the tools (marked untested on real Lean, as docs/lean.md marks every Lean path).
TOOLS = ProofTools(
    brief=("While writing the proof, use goals(line) to see the proof state Lean's REPL reports after a line of the "
           "file, and try(tactic, line) to test one tactic there without editing the file (both reuse a warm REPL "
           "with the imports loaded, where compile re-elaborates the whole file); query(command) runs one `#check` "
           "or `#print axioms` in the template's context. They judge nothing: compile the finished file, then "
           "submit(). (These Lean tools follow the REPL's documented protocol; they are untested on real Lean.)"),
    goals=("The goals Lean's REPL reports at a `sorry` placed after line `line` of the candidate file (0 = the end), "
           "and the errors and warnings of that prefix. Nothing is written; not a submission. Answer: `sha256:` of "
           "the file read, then `status: ok|error|timeout|infra`. Untested on real Lean."),
    try_=("Run one Lean tactic (the REPL parses the `tactic` category; commands are refused) on the proof state "
          "after line `line` of the candidate file (0 = the end) and show the resulting goals or the error. The "
          "file is not touched and nothing is submitted. Answer starts with `sha256:` of the file read. Untested "
          "on real Lean."),
    query=("One `#check <term>` or `#print axioms <name>`, run in the template's context (its imports and the "
           "declarations before the theorem). Other commands and withheld names are refused. Answer starts with "
           "`sha256:` of the template. Untested on real Lean."),
)
#: Words that start a Lean command (a conservative list from Lean's command parsers, not its whole command table):
#: a ``cmd`` is a sequence of commands (I1), so a query holding one could be read as a second command; refused.
COMMAND_WORDS = frozenset({
    "import", "def", "theorem", "lemma", "example", "abbrev", "instance", "axiom", "opaque", "structure", "class",
    "inductive", "namespace", "section", "end", "open", "variable", "universe", "set_option", "attribute", "export",
    "initialize", "builtin_initialize", "mutual", "deriving", "macro", "macro_rules", "syntax", "elab", "elab_rules",
    "notation", "infix", "infixl", "infixr", "prefix", "postfix", "declare_syntax_cat", "run_cmd", "run_elab",
    "run_meta", "private", "protected", "noncomputable", "unsafe", "partial", "include", "omit"})
_OPENERS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩"}
MAX_MESSAGES = 20
MAX_ANSWER = 20000
_READ = 65536


class ReplUnavailable(Exception):
    """The REPL cannot be started here (no toolchain, no executable): infra, said once."""


class Repl:
    """One REPL process over pipes: a request is a JSON object and one blank line, a response is the lines up to the
    next blank line (I6). Its own process group, so a timeout kills everything it started."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.argv, self.cwd, self.env = argv, cwd, env
        self.stderr_path = cwd / "repl.stderr"
        with open(self.stderr_path, "wb") as stderr:
            try:
                self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=stderr, start_new_session=True)
            except OSError as exc:
                raise ReplUnavailable(f"cannot start the Lean REPL {argv[-1]}: {exc}") from None
        self.buffer = b""

    def ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SessionDied(self.death()) from None
        fd = self.proc.stdout.fileno()
        while b"\n\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise SessionTimeout()
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, _READ)
                if not chunk:
                    raise SessionDied(self.death())
                self.buffer += chunk
        reply, self.buffer = self.buffer.split(b"\n\n", 1)
        try:
            answer = json.loads(reply.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SessionDied(f"the REPL answered something that is not JSON: {reply[:200]!r}") from None
        if not isinstance(answer, dict):
            raise SessionDied(f"the REPL answered something that is not a JSON object: {reply[:200]!r}")
        return answer

    def death(self) -> str:
        """How the process ended, with the end of its stderr."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.stderr_path.read_text(encoding="utf-8", errors="replace").strip()[-300:] \
            if self.stderr_path.is_file() else ""
        return f"the Lean REPL ended (exit {code}){': ' + tail if tail else ''}"

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def header_end(text: str, name: str) -> int:
    """How many lines the leading ``import`` header takes (the lines the REPL gets only with the first command)."""
    try:
        words = lexer.tokens(text)
    except NotUnderstood as exc:
        raise SessionRefused(f"{name}:{exc.line}: the file cannot be read as Lean: {exc.message}") from None
    last = 0
    for index, word in enumerate(words):
        if word.text == "import" and index + 1 < len(words):
            last = words[index + 1].line
        elif index == 0 or words[index - 1].text != "import":
            break
    return last


def _indent(lines: list[str]) -> int:
    """Where the appended ``sorry`` goes: the last tactic line's column, deeper after a line ending in ``by``."""
    for line in reversed(lines):
        code = lexer.mask(line).rstrip()
        if code.strip():
            column = len(code) - len(code.lstrip())
            deeper = re.search(r"(?<![\w.'])by$|=>$|:=$|·$", code) is not None
            return max(2, column + (2 if deeper else 0))
    return 2


class LeanProofSession:
    """The warm REPL of one item (see the module's docstring); calls are serialised by a lock."""

    def __init__(self, task: Task, start: Callable[[Path], Repl], directory: Path, timeout: float,
                 excluded: tuple[str, ...]) -> None:
        self.task = task
        self.name = task.candidate_name
        self.start = start
        self.directory = directory
        self.timeout = timeout
        self.excluded = tuple(name for name in excluded if name)
        self._lock = threading.Lock()
        self._repl: Repl | None = None
        self._commands: dict[tuple[int | None, str], dict[str, Any]] = {}
        template = task.template
        self._header_lines = header_end(template, task.source_path or self.name)
        self._header = "".join(template.splitlines(keepends=True)[:self._header_lines])

    # -- plumbing ---------------------------------------------------------------------------------------------

    def _call(self, body: Callable[[float], SessionAnswer]) -> SessionAnswer:
        """``body`` under the call's timeout; a dead REPL is rebuilt and the call retried once (I5)."""

        def checked(deadline: float) -> SessionAnswer:
            if self._repl is not None and self._repl.proc.poll() is not None:
                raise SessionDied(self._repl.death())  # its numbers are gone: no answer is reused from it
            try:
                answer = body(deadline)
            except _TemplateBroken as exc:
                return SessionAnswer("infra", str(exc))
            except ReplUnavailable as exc:
                self._reset()
                return SessionAnswer("infra", f"{exc} (the file is unchanged)", str(exc))
            answer.text = answer.text[:MAX_ANSWER]
            return answer

        with self._lock:
            return call_restarting(checked, self.timeout, self._reset)

    def _reset(self) -> None:
        """Forget the process and every number it gave (they mean nothing to the next one)."""
        if self._repl is not None:
            self._repl.close()
        self._repl, self._commands = None, {}

    def _ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any]:
        if self._repl is None:
            self._repl = self.start(self.directory)
        return self._repl.ask(request, deadline)

    def _command(self, text: str, env: int | None, deadline: float) -> dict[str, Any]:
        """One ``{"cmd"}`` (I1), answered from this process's earlier answer to the same text on the same env."""
        key = (env, text)
        if key not in self._commands:
            answer = self._ask({"cmd": text} if env is None else {"cmd": text, "env": env}, deadline)
            if "env" not in answer:  # "Unknown environment." or an error object: the numbers are not this process's
                raise SessionDied(f"the REPL refused a command: {answer.get('message', answer)}")
            self._commands[key] = answer
        return self._commands[key]

    def _base(self, deadline: float) -> int:
        """The env of the template's imports (sent once per process, without ``env``: I1)."""
        answer = self._command(self._header, None, deadline)
        errors = [m for m in answer.get("messages", []) if m.get("severity") == "error"]
        if errors:
            raise _TemplateBroken(f"the template's imports do not load here: {errors[0].get('data', '')}")
        return int(answer["env"])

    def _messages(self, answer: dict[str, Any], upto: int) -> list[str]:
        """Errors and warnings ``file:line:`` (positions are the file's own: the header was sent as blank lines);
        the ``declaration uses sorry`` warning the appended ``sorry`` causes is left out."""
        lines = []
        for message in answer.get("messages", []):
            severity = message.get("severity")
            if severity not in ("error", "warning") or is_sorry_warning({"data": str(message.get("data", ""))}):
                continue
            line = (message.get("pos") or {}).get("line", 0)
            where = f"{self.name}:{line}" if 0 < line <= upto else f"{self.name}: after line {upto}"
            lines.append(f"{where}: {severity}: {message.get('data', '')}")
        if len(lines) > MAX_MESSAGES:
            lines = [*lines[:MAX_MESSAGES - 1], f"({len(lines) - MAX_MESSAGES + 1} more messages)", lines[-1]]
        return lines

    def _prefix(self, data: bytes, line: int) -> tuple[str, int]:
        """The command for ``goals``/``try`` at ``line``: the candidate up to it, header lines blank, then ``sorry``."""
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            raise SessionRefused(f"{self.name}: not UTF-8 at byte {exc.start}") from None
        lines = line_count(text)
        if line < 0 or line > lines:
            raise SessionRefused(f"{self.name}: line {line} is outside the file (it has {lines} lines; 0 means the "
                                 "end)")
        upto = line or lines
        kept = text.split("\n")[:upto]
        if "".join(f"{ln}\n" for ln in kept[:self._header_lines]) != self._header:
            raise SessionRefused(f"{self.name}: the imports differ from the template's; goals/try run on the "
                                 "template's imports (compile() checks the file as it is)")
        if upto <= self._header_lines:
            raise SessionRefused(f"{self.name}: line {upto} is in the imports; give a line of the proof")
        body = "\n".join(kept[self._header_lines:])
        return "\n" * self._header_lines + body + "\n" + " " * _indent(kept) + "sorry\n", upto

    def _state(self, data: bytes, line: int, deadline: float) -> tuple[dict[str, Any], dict[str, Any] | None, int]:
        """The REPL's answer for the prefix, the ``sorry`` it listed on the appended line (or None), and the line."""
        command, upto = self._prefix(data, line)
        answer = self._command(command, self._base(deadline), deadline)
        ours = next((s for s in answer.get("sorries", []) if (s.get("pos") or {}).get("line") == upto + 1), None)
        return answer, ours, upto

    # -- the tools ----------------------------------------------------------------------------------------------

    def goals(self, data: bytes, line: int) -> SessionAnswer:
        self._prefix(data, line)  # refusals before anything runs

        def body(deadline: float) -> SessionAnswer:
            answer, ours, upto = self._state(data, line, deadline)
            messages = self._messages(answer, upto)
            errors = any(": error: " in m for m in messages)
            if ours is None:
                return SessionAnswer("error", "\n".join([
                    (f"no proof state after line {upto}: the REPL listed no goal for a `sorry` placed there (the "
                     f"line is not inside a tactic proof, or nothing is left to prove) ({UNTESTED})"),
                    *(["messages:", *messages] if messages else [])]))
            shown = str(ours.get("goal", "")).strip() or "no goals"
            return SessionAnswer("error" if errors else "ok", "\n".join([
                f"goals after line {upto} ({UNTESTED}):", shown, *(["messages:", *messages] if messages else [])]))

        return self._call(body)

    def try_tactics(self, data: bytes, line: int, tactics: str) -> SessionAnswer:
        self._prefix(data, line)
        script = tactics.strip()
        if not script:
            raise SessionRefused("try: no tactic given")
        try:
            words = lexer.tokens(script)
        except NotUnderstood as exc:
            raise SessionRefused(f"try: the tactic cannot be read as Lean: {exc.message}") from None
        if words and (words[0].text == "#" or words[0].text in COMMAND_WORDS - {"open", "set_option"}):
            raise SessionRefused(f"try runs tactics only; `{_short(script)}` is a command (use query for #check/"
                                 "#print axioms, compile for the file)")

        def body(deadline: float) -> SessionAnswer:
            answer, ours, upto = self._state(data, line, deadline)
            if ours is None or not isinstance(ours.get("proofState"), int):
                return SessionAnswer("error", "\n".join([
                    f"nothing tried: no proof state after line {upto} of {self.name} ({UNTESTED})",
                    *self._messages(answer, upto)]))
            step = self._ask({"tactic": script, "proofState": ours["proofState"]}, deadline)
            if "message" in step and "goals" not in step:
                if step["message"] == "Unknown proof state.":
                    raise SessionDied("the REPL lost its proof states")
                return SessionAnswer("error", "\n".join([
                    f"`{_short(script)}` fails at line {upto}: {step['message']}", "goals (unchanged):",
                    str(ours.get("goal", "")).strip() or "no goals", "nothing was written"]))
            goals = [str(g).strip() for g in step.get("goals", [])]
            status = str(step.get("proofStatus", ""))
            messages = [f"{m.get('severity')}: {m.get('data', '')}" for m in step.get("messages", [])
                        if m.get("severity") in ("error", "warning")]
            failed = status.startswith("Error") or any(m.startswith("error:") for m in messages)
            return SessionAnswer("error" if failed else "ok", "\n".join([
                f"goals after `{_short(script)}` at line {upto} ({UNTESTED}; proof status: {status or 'not given'}):",
                "\n\n".join(goals) or "no goals", *(["messages:", *messages] if messages else []),
                "nothing was written"]))

        return self._call(body)

    def query(self, command: str) -> SessionAnswer:
        sent = self._query_command(command)

        def body(deadline: float) -> SessionAnswer:
            env = self._context(deadline)
            lines = self._header_lines + self._context_lines
            answer = self._command("\n" * lines + sent + "\n", env, deadline)
            errors = [m for m in answer.get("messages", []) if m.get("severity") == "error"]
            if errors:
                return SessionAnswer("error", f"error: {errors[0].get('data', '')} ({UNTESTED})")
            shown = "\n".join(str(m.get("data", "")) for m in answer.get("messages", []) if m.get("severity") == "info")
            return SessionAnswer("ok", self._withhold(shown or "(no output)") + f"\n({UNTESTED})")

        return self._call(body)

    def _query_command(self, command: str) -> str:
        """``#check <term>`` (a term of several tokens is sent in parentheses, one term) or ``#print axioms <name>``;
        anything else, a second command, or a withheld name is refused with one line (I4)."""
        text = command.strip()
        try:
            words = lexer.tokens(text)
        except NotUnderstood as exc:
            raise SessionRefused(f"query: cannot read the command: {exc.message}") from None
        head = "".join(w.text for w in words[:2]) if len(words) > 1 and not words[1].separated else ""
        if head == "#print" and len(words) > 2 and words[2].text == "axioms":
            if len(words) != 4 or words[3].kind != "ident":
                raise SessionRefused("query: `#print axioms` takes one name")
        elif head != "#check" or len(words) < 3:
            shown = head or (words[0].text if words else "")
            raise SessionRefused(f"query runs only `#check <term>` and `#print axioms <name>`; `{shown}` is refused")
        depth = 0
        for word in words[2:]:
            if word.text == "#" or (word.kind == "ident" and word.text in COMMAND_WORDS):
                raise SessionRefused(f"query takes exactly one command; `{word.text}` could start another")
            if word.kind == "ident" and self.withheld(word.text.replace("«", "").replace("»", "")):
                raise SessionRefused(f"query: `{word.text}` is withheld (its statement is in the template)")
            depth += 1 if word.text in _OPENERS else -1 if word.text in _OPENERS.values() else 0
            if depth < 0:
                raise SessionRefused("query: unbalanced brackets")
        if depth:
            raise SessionRefused("query: unbalanced brackets")
        if head == "#print" or len(words) == 3:
            return text
        rest = text[text.index(words[2].text, len(head)):]
        return f"#check ({rest})"

    def withheld(self, name: str) -> bool:
        """Whether ``name`` can denote a withheld declaration: its full name or a qualified suffix of it."""
        return any(full == name or full.endswith("." + name) for full in self.excluded)

    def _withhold(self, text: str) -> str:
        """Output lines naming a withheld declaration are dropped."""
        names = re.compile(r"[^\s():,\[\]{}⟨⟩]+")
        return "\n".join(line for line in text.splitlines() if not any(self.withheld(w) for w in names.findall(line)))

    @property
    def _context_lines(self) -> int:
        return len(self._context_text().split("\n")) - 1

    def _context_text(self) -> str:
        """The template's text between the imports and the theorem (a doc comment right before it left out)."""
        template = self.task.template
        lines = template.splitlines(keepends=True)
        words = lexer.tokens(template)
        start = next((w.line for i, w in enumerate(words) if w.text in ("theorem", "lemma") and i + 1 < len(words)
                      and words[i + 1].text == self.task.theorem_name), len(lines) + 1)
        text = "".join(lines[self._header_lines:start - 1])
        docs = list(lexer.spans(text))
        if docs and docs[-1].kind == lexer.DOC:
            text = text[:docs[-1].start] + re.sub(r"[^\n]", "", text[docs[-1].start:])
        return text

    def _context(self, deadline: float) -> int:
        base = self._base(deadline)
        answer = self._command("\n" * self._header_lines + self._context_text(), base, deadline)
        errors = [m for m in answer.get("messages", []) if m.get("severity") == "error"]
        if errors:
            raise _TemplateBroken(f"the template's context does not load here: {errors[0].get('data', '')}")
        return int(answer["env"])

    def warm(self) -> None:
        """Load the template's imports and context now, so the first goals/try/query is a warm one."""
        self._call(lambda deadline: SessionAnswer("ok", str(self._context(deadline))))

    def close(self) -> None:
        with self._lock:
            self._reset()
        shutil.rmtree(self.directory, ignore_errors=True)


class _TemplateBroken(Exception):
    """The template's own imports or declarations fail here: this machine's problem, an infra answer."""


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"
