"""Plain data passed between the protocol steps.

Everything here is a frozen dataclass whose ``to_wire()`` returns JSON primitives only, because
anything that reaches a pytest report crosses xdist's execnet channel, which rejects subclasses of
builtin types (enums, paths, dataclasses) and then fails the run *silently* with exit status 0.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Outcome names are plain strings on purpose (see module docstring).
STRICT = "strict"
RULES_ONLY = "rules_only"
FAILED = "failed"
INFRA = "infra"
STATEMENT_FALSE = "statement_false"
#: the statement's hypotheses contradict each other (a checked certificate; see core/audit.py)
VACUOUS = "vacuous"
#: a premise inside the statement's conclusion can never hold, so that part holds for that reason alone
INNER_VACUOUS = "inner_vacuous"
OUTCOMES = (STRICT, RULES_ONLY, FAILED, INFRA, STATEMENT_FALSE, VACUOUS, INNER_VACUOUS)

# Verdicts of the verifier pipeline.
#: The one size limit for a candidate file, everywhere one is read, copied or compiled (no benchmark proof comes
#: near it): a bigger file is refused before it is copied or compiled, and said so.
MAX_CANDIDATE_BYTES = 2_000_000

ACCEPT = "accept"
REJECT = "reject"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def by_shared_start(texts: list[str]) -> list[tuple[str, str | None]]:
    """The distinct ``texts``, shortest first, each with the longest earlier one it starts with (None: none): work on
    the longer one (its digest, its JSON escape) can go on from the shorter one's instead of starting over (a project
    item's template, frozen part and own proof are its file up to the target, #18)."""
    seen: list[str] = []
    chained: list[tuple[str, str | None]] = []
    for text in sorted(set(texts), key=len):
        chained.append((text, next((s for s in reversed(seen) if text.startswith(s)), None)))
        seen.append(text)
    return chained


@dataclass(frozen=True)
class Task:
    """One benchmark problem, as an adapter parsed it.

    ``template`` is the exact text handed to the actor; ``frozen`` is the part a candidate must
    reproduce token for token; ``problem`` is set when the source file is malformed, in which case
    the item fails with that message instead of breaking collection.
    """

    task_id: str
    suite: str
    track: str
    prover: str
    source_path: str
    template: str
    frozen: str = ""
    theorem_name: str = ""
    statement: str = ""
    answer: str = ""
    problem: str = ""
    #: Files (relative name -> text) that the workspace may contain besides the candidate.
    context_files: dict[str, str] = field(default_factory=dict)
    #: Names the candidate must not (re)define, because the frozen part uses them.
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def candidate_name(self) -> str:
        """``<task id>.<ext>``, unless the adapter named the file (``meta["candidate_name"]``)."""
        if self.meta.get("candidate_name"):
            return str(self.meta["candidate_name"])
        from pytest_forall.core.language import language_or_plain

        return f"{self.task_id}.{language_or_plain(self.prover).extension}"

    def to_wire(self) -> dict[str, Any]:
        """``dataclasses.asdict``: built here without its deep copy of every string when the fields hold only dicts,
        lists, tuples and JSON leaves (a project item's meta holds its file up to the target, #18)."""
        try:
            return {name: _plain_copy(getattr(self, name)) for name in _TASK_FIELDS}
        except _NotPlain:
            return asdict(self)


class _NotPlain(Exception):
    """A value :func:`_plain_copy` leaves to ``dataclasses.asdict``."""


_LEAVES = (str, int, float, bool, type(None))


def _plain_copy(value: Any) -> Any:
    """What ``dataclasses.asdict`` makes of ``value`` built of dicts, lists, tuples and JSON leaves: the containers
    copied, the leaves (immutable, which ``copy.deepcopy`` returns as they are) shared; :class:`_NotPlain` otherwise."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {_plain_copy(k): _plain_copy(v) for k, v in value.items()}
    if kind is list:
        return [_plain_copy(v) for v in value]
    if kind is tuple:
        return tuple(_plain_copy(v) for v in value)
    raise _NotPlain(kind.__name__)


_TASK_FIELDS = tuple(f.name for f in fields(Task))

#: A task's text longer than this is named by its SHA-256 in the task's record (see :func:`task_record`).
LONG_TEXT = 4096


def task_record(task: Task) -> dict[str, Any]:
    """The task as recorded (``task.json``) and digested (:func:`pytest_forall.core.cache.task_digest`): its template,
    and its frozen part and any text of its meta longer than :data:`LONG_TEXT` (a project item's file up to the
    target, its own proof file), by their SHA-256 (``<name>_sha256``). The texts themselves are the item's candidate
    files and the project's sources: written in full per item, they made a library's audit grow with the square of
    its files' length, and escaping them into JSON for the task's digest was a tenth of a warm item's cost (#18)."""

    def long(key: str, value: Any, always: tuple[str, ...] = ()) -> bool:
        return isinstance(value, str) and (key in always or len(value) > LONG_TEXT)

    wire = task.to_wire()
    meta = dict(wire.get("meta") or {})
    digests = text_digests([v for k, v in wire.items() if long(k, v, ("template",))]
                           + [v for k, v in meta.items() if long(k, v)])

    def digested(fields: dict[str, Any], always: tuple[str, ...] = ()) -> dict[str, Any]:
        return {(f"{key}_sha256" if long(key, value, always) else key): (digests[value] if long(key, value, always)
                                                                          else value) for key, value in fields.items()}

    return digested(wire, always=("template",)) | {"meta": digested(meta)}


#: :func:`text_digests` per text object (kept alive here, so its id is not reused): a task's record is made for its
#: digest and again for its ``task.json``
_TEXT_DIGESTS: dict[int, tuple[str, str]] = {}


def text_digests(texts: list[str]) -> dict[str, str]:
    """{text: its UTF-8 bytes' SHA-256}, hashing a text that starts with another only past it (:func:`by_shared_start`:
    one pass over a project item's file, not three), and a text object hashed before not again."""
    found: dict[str, str] = {}
    for text in texts:
        known = _TEXT_DIGESTS.get(id(text))
        if known is not None and known[0] is text:
            found[text] = known[1]
    states: dict[str, Any] = {}
    for text, base in by_shared_start([t for t in texts if t not in found]):
        state = states[base].copy() if base is not None else hashlib.sha256()
        state.update(text[len(base or ""):].encode())
        states[text] = state
    if len(_TEXT_DIGESTS) >= 100_000:
        _TEXT_DIGESTS.clear()
    for text, state in states.items():
        found[text] = state.hexdigest()
        _TEXT_DIGESTS[id(text)] = (text, found[text])
    return found


@dataclass(frozen=True)
class Layer:
    """Evidence from one verifier layer: what it judged and why it passed or not."""

    name: str
    ok: bool | None  # None = not judged (e.g. an independent checker that is not installed)
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    infra: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "reason": self.reason, "infra": self.infra,
                **{k: v for k, v in self.evidence.items() if k not in ("name", "ok", "reason", "infra")}}


@dataclass(frozen=True)
class Verdict:
    """The verifier pipeline's judgement of one candidate file."""

    verdict: str  # ACCEPT | REJECT | INFRA
    strict: bool
    digest: str
    layers: tuple[Layer, ...] = ()
    axioms: tuple[str, ...] = ()
    compiles: int = 0
    #: for an accepted candidate, the guarantee clauses its layers established (docs/verifier.md)
    guarantee: tuple[str, ...] = ()
    #: the kernel that judged it and the known soundness bugs in force for it (``ChecksAdvisories.kernel``)
    kernel: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        for layer in self.layers:
            if layer.ok is False or layer.infra:
                return f"{layer.name}: {layer.reason}"
        return ""

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPT

    def to_wire(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "strict": self.strict, "digest": self.digest,
                "axioms": list(self.axioms), "compiles": self.compiles, "reason": self.reason,
                "guarantee": list(self.guarantee), "kernel": dict(self.kernel),
                "layers": [layer.to_wire() for layer in self.layers]}


#: :func:`verdict_json` per verdict object (kept alive here, so its id is not reused): the last few
_VERDICT_JSON: dict[int, tuple[Verdict, str]] = {}


def verdict_json(verdict: Verdict) -> str:
    """``json.dumps(verdict.to_wire(), sort_keys=True)``, encoded once per verdict object (a verdict is not changed once
    made): a judged item's verdict goes into the cache's entry, the submission's evidence and the acceptance, three
    encodings of several kB each before (#18). Raises TypeError as ``json.dumps`` does for a value JSON does not know."""
    known = _VERDICT_JSON.get(id(verdict))
    if known is not None and known[0] is verdict:
        return known[1]
    text = json.dumps(verdict.to_wire(), sort_keys=True)
    if len(_VERDICT_JSON) >= 16:
        _VERDICT_JSON.clear()
    _VERDICT_JSON[id(verdict)] = (verdict, text)
    return text


def json_with_encoded(fields: dict[str, Any], key: str, encoded: str) -> str:
    """``json.dumps({**fields, key: value}, sort_keys=True, default=str)`` where ``encoded`` is ``value``'s JSON text
    already, put where ``sort_keys`` puts ``key``: the same bytes, ``value`` not encoded again (a verdict or a row
    written into several files, #18)."""
    before = json.dumps({k: v for k, v in fields.items() if k < key}, sort_keys=True, default=str)[1:-1]
    after = json.dumps({k: v for k, v in fields.items() if k > key}, sort_keys=True, default=str)[1:-1]
    return "{" + ", ".join(part for part in (before, f"{json.dumps(key)}: {encoded}", after) if part) + "}"


@dataclass
class Usage:
    """Tokens and spend of one agent turn; ``None`` means the frontend did not report it."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_cached: int | None = None
    cost_usd: float | None = None

    def add(self, other: Usage) -> None:
        for name in ("tokens_in", "tokens_out", "tokens_cached", "cost_usd"):
            theirs = getattr(other, name)
            if theirs is not None:
                mine = getattr(self, name)
                setattr(self, name, theirs if mine is None else mine + theirs)

    @property
    def spent_nothing(self) -> bool:
        return not (self.tokens_in or self.tokens_out)

    def to_wire(self) -> dict[str, Any]:
        return _scalar_fields(self)


def _scalar_fields(instance: Any) -> dict[str, Any]:
    """``asdict`` of a dataclass whose fields are all scalars, by name (asdict deep-copies each value: 10-20 µs per row
    for what a comprehension gives, #18)."""
    return {f.name: getattr(instance, f.name) for f in fields(instance)}


@dataclass(frozen=True)
class Budget:
    """Per-item limits; ``None`` means unlimited."""

    samples: int = 1
    rounds: int = 8
    compiles: int | None = None
    review_rounds: int = 3
    wall: float | None = None
    usd: float | None = None

    def to_wire(self) -> dict[str, Any]:
        return _scalar_fields(self)


BUDGET_FIELDS = {"samples": int, "rounds": int, "compiles": int, "review_rounds": int,
                 "wall": float, "usd": float}
