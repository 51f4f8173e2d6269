"""The actor's interactive tools for Rocq: ``goals``, ``try`` and ``query`` over one warm ``coqtop``.

The session (:class:`~pytest_forall.lang.rocq.coqtop.CoqSession`) keeps the template's imports loaded and reuses
the longest unchanged prefix of the candidate between calls; every goal it answers is what ``coqtop`` itself
printed (``Show.``, with ``Printing Unfocused`` on), never re-enacted here. Sentences are cut by the language
pack's own reader (:mod:`.lexer` and :func:`~.sentences.coq_units`, the units ``coqc`` executes), so a
comment or a string hides text from these tools exactly when it hides it from Coq.

What the tools may run: ``goals`` runs the candidate's own sentences (what ``compile`` runs anyway) and reports
their errors and warnings, not their other output; ``try`` runs tactics only (a capitalised sentence other than
``Unshelve`` is a command and is refused); ``query`` runs one ``Check``/``About``/``Locate``/``Search``/
``Print Assumptions`` in the template's context (its sentences before the theorem), and refuses any sentence that
names a withheld declaration.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pytest_forall.core.model import Task
from pytest_forall.core.prover import ProofTools, SessionAnswer, SessionRefused, call_restarting
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.rocq.coqtop import CoqSession, SessionForged, TacticProbe
from pytest_forall.lang.rocq.lexer import mask, sentences, tokens
from pytest_forall.lang.rocq.sentences import coq_units

#: Commands ``query`` runs (``Print`` only as ``Print Assumptions``): each answers with statements, types, locations
#: or the axioms a name rests on, never a body.
QUERY_COMMANDS = ("Check", "About", "Locate", "Search", "SearchPattern", "SearchRewrite")
#: Capitalised sentences ``try`` accepts besides tactics (everything else capitalised in a proof is a command).
PROOF_COMMANDS = ("Unshelve",)
#: Commands that move or end coqtop's own state: after them the session's record of states would not be Coq's.
SESSION_CONTROL = ("Back", "BackTo", "Undo", "Restart", "Reset", "Quit", "Drop")
#: Coq's prompt markup: text that contains it could forge a reply, so it is refused wherever it would be sent.
RESERVED = "prompt>"
MAX_GOALS_DETAILED = 5
MAX_MESSAGES = 20
MAX_ENTRIES = 60
MAX_ANSWER = 20000
_THEOREM_HEAD = re.compile(r"\s*(?:#\[[^\]]*\]\s*)?(?:Local\s+|Global\s+)?(?:Theorem|Lemma|Corollary|Proposition|"
                           r"Fact|Remark|Example|Property)\s+(?P<name>[^\W\d][\w']*)")
_GOAL_COUNT = re.compile(r"^(\d+) (?:focused )?goals?\b", re.MULTILINE)
_TAGS = re.compile(r"</?(?:infomsg|warning|error)>")
_WORD = re.compile(r"[^\W\d][\w']*")
#: a possibly qualified name (``Nat.add_comm``) in Coq's output
_QUALIFIED = re.compile(r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)*")
#: What may come before a command's own word: attributes (``#[...]``, ``#[]`` included) and the control commands
#: that run the command after them (``Time``, ``Fail``, ``Succeed``, ``Redirect "file"``, ``Timeout n``).
_PREFIX = re.compile(r"\s*(?:#\[[^\[\]]*\]|(?:Time|Fail|Succeed|Instructions|Profile)\b|Redirect\s*\"[^\"]*\"|"
                     r"Timeout\s+\d+)")
T = TypeVar("T")

#: What the actor is told about the tools (the brief: when to use goals/try rather than compile/submit).
TOOLS = ProofTools(
    brief=("While writing the proof, use goals(line) to see the proof state Coq has after a line of the file, and "
           "try(tactics, line) to test tactics there without editing the file (both reuse a warm prover session: a "
           "fraction of a second, where compile re-checks the whole file); query(command) runs Check/About/Locate/"
           "Search/Print Assumptions in the template's context. They judge nothing: compile the finished file, then "
           "submit()."),
    goals=("The proof state Coq prints after the last sentence of the candidate file ending at or before `line` (0 = "
           "the end): every focused goal with its hypotheses, unfocused and shelved goals, and the errors and "
           "warnings of that prefix. Nothing is written; not a submission. Answer: `sha256:` of the file read, then "
           "`status: ok|error|timeout|infra`."),
    try_=("Run `tactics` (tactics only, e.g. `intros x. induction x.`) after the last sentence ending at or before "
          "`line` of the candidate file (0 = the end) and show the resulting goals or the error. The file is not "
          "touched and nothing is submitted. Answer starts with `sha256:` of the file read."),
    query=("One Check, About, Locate, Search or Print Assumptions command, run in the template's context (its imports "
           "and definitions, before the theorem). Statements only: other commands and withheld names are refused. "
           "Answer starts with `sha256:` of the template."),
)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a file as the session sends it: its text, how many prompts Coq answers it with (a bullet or a
    brace before a tactic is a unit of its own), and its first and last line."""

    text: str
    units: int
    line: int
    last_line: int


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def split_sentences(text: str, name: str) -> list[Sentence]:
    """The sentences of ``text`` (whole sentences only), or :class:`SessionRefused` naming the file and line."""
    try:
        spans = sentences(text)
        units = [u.start for u in coq_units(text)]
    except NotUnderstood as exc:
        raise SessionRefused(f"{name}:{exc.line}: the file cannot be read as Rocq sentences: {exc}") from None
    out = []
    for start, end in spans:
        count = sum(1 for u in units if start <= u < end)
        out.append(Sentence(text[start:end], count, text.count("\n", 0, start) + 1, text.count("\n", 0, end - 1) + 1))
    return out


def prefix_upto(text: str, line: int, name: str) -> tuple[str, int]:
    """``text`` up to the end of the last sentence ending at or before ``line`` (0: the end), and that line."""
    lines = line_count(text)
    if line < 0 or line > lines:
        raise SessionRefused(f"{name}: line {line} is outside the file (it has {lines} lines; 0 means the end)")
    cut = 0
    for start, end in sentences(text, strict=False):
        if line and text.count("\n", 0, end - 1) + 1 > line:
            break
        cut = end
    return text[:cut], (line or lines)


def clean(reply: str) -> str:
    """Coq's reply without the prompt markup and the echo of the input (``Toplevel input`` and ``> `` lines)."""
    kept = [ln for ln in _TAGS.sub("", reply).splitlines()
            if not ln.startswith(("Toplevel input, characters", "> ", "Fetching opaque proofs from disk"))]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def error_of(reply: str) -> str:
    text = clean(reply)
    return text.split("Error:", 1)[1].strip() if "Error:" in text else text or "(Coq gave no message)"


def warnings_of(reply: str) -> list[str]:
    found = re.findall(r"<warning>(.*?)</warning>", reply, re.DOTALL)
    return [" ".join(w.replace("Warning:", "", 1).split()) for w in found]


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise SessionRefused(f"{name}: not UTF-8 at byte {exc.start}") from None


def command_head(text: str) -> str:
    """The word that says which command a sentence is: its first, after comments and :data:`_PREFIX`es (``#[] Back
    1.`` and ``Time Back 1.`` are ``Back``); "" when it starts with something else (a bullet, a brace, a selector)."""
    masked, at = mask(text), 0
    while found := _PREFIX.match(masked, at):
        at = found.end()
    word = _WORD.match(masked, len(masked) - len(masked[at:].lstrip()))
    return word.group() if word else ""


def _refuse_reserved(text: str, name: str) -> None:
    if RESERVED in text:
        line = text[:text.index(RESERVED)].count("\n") + 1
        raise SessionRefused(f"{name}:{line}: the text contains `{RESERVED}`, which the session's protocol reserves")


class RocqProofSession:
    """The warm session of one item (see the module's docstring); calls are serialised by a lock."""

    def __init__(self, task: Task, probe: TacticProbe, directory: Path, timeout: float,
                 excluded: tuple[str, ...]) -> None:
        self.task = task
        self.name = task.candidate_name
        self.timeout = timeout
        #: withheld declarations by their full names (see :meth:`withheld`)
        self.excluded = tuple(name for name in excluded if name)
        self.directory = directory
        self.coq = CoqSession(probe, directory)
        self._lock = threading.Lock()
        self._context: list[Sentence] | None = None

    # -- plumbing ---------------------------------------------------------------------------------------------

    def _call(self, body: Callable[[float], SessionAnswer]) -> SessionAnswer:
        """Run ``body(deadline)`` under the call's timeout; a dead coqtop is restarted and the call retried once."""
        def checked(deadline: float) -> SessionAnswer:
            try:
                answer = body(deadline)
                self.coq.verify(deadline)
            except SessionForged:
                return SessionAnswer("error", f"the output of this call imitates the session's prompt markup "
                                     f"(`<{RESERVED}`), so its replies cannot be read: no answer (the prover "
                                     "session starts again on the next call; the file is unchanged)")
            return answer

        with self._lock:
            return call_restarting(checked, self.timeout, self.coq.close)

    def _send(self, items: list[Sentence], deadline: float) -> tuple[int, str]:
        return self.coq.sync([(s.text, s.units) for s in items], deadline)

    def _show(self, deadline: float) -> str:
        """Coq's own goal display: ``Show.`` (every focused goal's conclusion, the first one's hypotheses, unfocused
        goals and the shelved count), then ``Show n.`` for the hypotheses of the next focused goals."""
        if not self.coq.proofs:
            return "no proof is open here"
        ok, reply = self.coq.ask("Show.", deadline)
        text = clean(reply)
        if not ok:
            return f"no goals: {error_of(reply)}"
        found = _GOAL_COUNT.search(text)
        focused = int(found.group(1)) if found else 0
        for number in range(2, min(focused, MAX_GOALS_DETAILED) + 1):
            ok, more = self.coq.ask(f"Show {number}.", deadline)
            if ok:
                text += "\n\n" + clean(more)
        if focused > MAX_GOALS_DETAILED:
            text += f"\n\n(hypotheses shown for the first {MAX_GOALS_DETAILED} of {focused} focused goals)"
        return text

    def _prefix(self, data: bytes, line: int) -> tuple[str, list[Sentence], int]:
        text = _decode(data, self.name)
        prefix, upto = prefix_upto(text, line, self.name)
        _refuse_reserved(prefix, self.name)
        items = split_sentences(prefix, self.name)
        for sentence in items:
            head = command_head(sentence.text)
            if head in SESSION_CONTROL:
                raise SessionRefused(f"{self.name}:{sentence.line}: `{head}` controls the prover session; "
                                     "goals/try cannot follow it (compile() can)")
        return prefix, items, upto

    def _template_failed(self, items: list[Sentence], failed: int, reply: str) -> SessionAnswer | None:
        """A failure inside the template's own context (its imports or definitions, unchanged in the candidate) is
        this machine's, not the proof's: an ``infra`` answer, as ``compile`` answers for a template that fails."""
        context = self._template_context()
        if failed < len(context) and all(a.text == b.text for a, b in zip(items[:failed + 1], context)):
            return SessionAnswer("infra", f"the template does not load here ({self.name}:{items[failed].line}: "
                                 f"{error_of(reply)})")
        return None

    def _messages(self, items: list[Sentence], failed: int, reply: str) -> list[str]:
        """Warnings of the executed sentences and the error that stopped them, ``file:line:`` each, source order."""
        lines = []
        for step, sentence in zip(self.coq.steps, items):
            lines += [f"{self.name}:{sentence.line}: warning: {w}" for w in warnings_of(step.reply)]
        if failed < len(items):
            lines.append(f"{self.name}:{items[failed].line}: error: {error_of(reply)}")
        if len(lines) > MAX_MESSAGES:
            lines = [*lines[:MAX_MESSAGES - 1], f"({len(lines) - MAX_MESSAGES + 1} more messages)", lines[-1]]
        return lines

    # -- the tools ----------------------------------------------------------------------------------------------

    def goals(self, data: bytes, line: int) -> SessionAnswer:
        _, items, _ = self._prefix(data, line)

        def body(deadline: float) -> SessionAnswer:
            done, reply = self._send(items, deadline)
            if done < len(items) and (broken := self._template_failed(items, done, reply)):
                return broken
            where = (f"after line {items[done - 1].last_line} (`{_short(items[done - 1].text)}`)" if done
                     else "before the first sentence")
            head = (f"goals {where}" if done == len(items) else
                    f"stopped by an error at line {items[done].line}; goals {where}")
            messages = self._messages(items, done, reply)
            text = "\n".join([f"{head}:", self._show(deadline), *(["messages:", *messages] if messages else [])])
            return SessionAnswer("ok" if done == len(items) else "error", text)

        return self._call(body)

    def try_tactics(self, data: bytes, line: int, tactics: str) -> SessionAnswer:
        prefix, items, upto = self._prefix(data, line)
        script = tactics.strip()
        if not script:
            raise SessionRefused("try: no tactics given")
        if not script.endswith((".", "-", "+", "*", "{", "}")):
            script += "."
        _refuse_reserved(script, "tactics")
        combined = prefix + "\n"
        trial = self._tactic_sentences(combined, script)

        def body(deadline: float) -> SessionAnswer:
            done, reply = self._send(items, deadline)
            if done < len(items) and (broken := self._template_failed(items, done, reply)):
                return broken
            if done < len(items):
                messages = self._messages(items, done, reply)
                return SessionAnswer("error", "\n".join([
                    f"nothing tried: {self.name} stops with an error at line {items[done].line}, at or before line {upto}",
                    *messages]))
            if not self.coq.proofs:
                raise SessionRefused(f"try: no proof is open after line {upto} of {self.name}")
            here = self.coq.state
            ran, failure = 0, ""
            for sentence in trial:
                ok, answer = self.coq.run(sentence.text, sentence.units, deadline)
                if not ok:
                    failure = error_of(answer)
                    break
                ran += 1
            shown = self._show(deadline)
            self.coq.back_to(here, deadline)
            if failure:
                return SessionAnswer("error", "\n".join([
                    f"`{_short(trial[ran].text)}` fails at line {upto}: {failure}",
                    f"goals after the {ran} sentence(s) before it:" if ran else "goals (unchanged):", shown,
                    "nothing was written"]))
            return SessionAnswer("ok", "\n".join([f"goals after `{_short(script)}` at line {upto}:", shown,
                                                  "nothing was written"]))

        return self._call(body)

    def _tactic_sentences(self, combined: str, script: str) -> list[Sentence]:
        """The sentences of ``script`` as they would run after ``combined``; commands are refused (one line)."""
        whole = combined + script
        try:
            spans = [(s, e) for s, e in sentences(whole) if s >= len(combined)]
            units = [u for u in coq_units(whole) if u.start >= len(combined)]
        except NotUnderstood as exc:
            raise SessionRefused(f"try: the tactics cannot be read as Rocq sentences: {exc}") from None
        for unit in units:
            text = whole[unit.start:unit.end]
            head = command_head(text)
            # a tactic starts with its own (lower-case) name; an attribute or a control prefix starts a command
            if not unit.in_proof or (head[:1].isupper() and head not in PROOF_COMMANDS) or \
                    mask(text).lstrip().startswith("#") or _PREFIX.match(mask(text)):
                raise SessionRefused(f"try runs tactics only; `{_short(whole[unit.start:unit.end])}` is a command "
                                     "(use query for Check/About/Locate/Search, compile for the file)")
        return [Sentence(whole[s:e], sum(1 for u in units if s <= u.start < e), 0, 0) for s, e in spans]

    def query(self, command: str) -> SessionAnswer:
        sentence = self._query_sentence(command)

        def body(deadline: float) -> SessionAnswer:
            context = self._template_context()
            done, reply = self._send(context, deadline)
            if done < len(context):
                return SessionAnswer("infra", f"the template's context does not load here (line "
                                     f"{context[done].line}: {error_of(reply)})")
            ok, answer = self.coq.ask(sentence, deadline)
            text = self._withhold(clean(answer)) if ok else f"error: {error_of(answer)}"
            return SessionAnswer("ok" if ok else "error", text[:MAX_ANSWER])

        return self._call(body)

    def _query_sentence(self, command: str) -> str:
        text = command.strip()
        if text and not text.endswith("."):
            text += "."
        _refuse_reserved(text, "query")
        try:
            spans = sentences(text)
            words = tokens(text)
        except NotUnderstood as exc:
            raise SessionRefused(f"query: cannot read the command: {exc}") from None
        if len(spans) != 1:
            raise SessionRefused("query takes exactly one command")
        head = words[0].text if words else ""
        second = words[1].text if len(words) > 1 else ""
        if not (head in QUERY_COMMANDS or (head, second) == ("Print", "Assumptions")):
            shown = f"{head} {second}".strip() if head == "Print" else head
            raise SessionRefused(f"query runs only Check, About, Locate, Search and Print Assumptions; `{shown}` is "
                                 "refused")
        for word in words:
            if word.kind == "ident" and self.withheld(word.text):
                raise SessionRefused(f"query: `{word.text}` is withheld (its statement is in the template)")
        return text

    def withheld(self, name: str) -> bool:
        """Whether ``name`` can denote a withheld declaration: its full name or a qualified suffix of it.

        ``Arith2.target_lemma`` is withheld as ``target_lemma`` and ``Arith2.target_lemma``, never as
        ``Nat.target_lemma`` (another declaration, which an honest proof may use); a bare name is refused whenever
        it could mean the withheld one (without asking Coq which one it resolves to, the cautious reading)."""
        return any(full == name or full.endswith("." + name) for full in self.excluded)

    def _withhold(self, text: str) -> str:
        """Search results naming a withheld declaration are dropped; at most :data:`MAX_ENTRIES` entries kept."""
        entries: list[str] = []
        for line in text.splitlines():
            if entries and line[:1] in (" ", "\t"):
                entries[-1] += "\n" + line
            else:
                entries.append(line)
        kept = [e for e in entries if not any(self.withheld(w) for w in _QUALIFIED.findall(e))]
        more = len(kept) - MAX_ENTRIES
        return "\n".join(kept[:MAX_ENTRIES]) + (f"\n({more} more entries)" if more > 0 else "")

    def _template_context(self) -> list[Sentence]:
        """The template's sentences before the theorem's statement: the context queries run in."""
        if self._context is None:
            items = split_sentences(self.task.template, self.task.source_path or self.name)
            masked = [mask(s.text) for s in items]
            at = next((i for i, m in enumerate(masked) if (found := _THEOREM_HEAD.match(m))
                       and found.group("name") == self.task.theorem_name), len(items))
            self._context = items[:at]
        return self._context

    def warm(self) -> None:
        """Load the template's context (its imports dominate), so the first goals/try/query is a warm one."""
        try:
            self._call(lambda deadline: SessionAnswer("ok", str(self._send(self._template_context(), deadline))))
        except SessionRefused:
            pass

    def close(self) -> None:
        with self._lock:
            self.coq.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"
