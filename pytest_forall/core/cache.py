"""Content-addressed verdict cache: an unchanged proof in an unchanged environment is not re-checked.

The key is every input the verdict depends on: the prover and its version, the installed libraries'
digest (both from the backend's ``fingerprint``), the task (template, frozen part, theorem, context files,
metadata), the candidate's bytes, the verifier's own source and the policy it ran under (time limit,
sandboxing). Any of them changing is a miss. A backend without ``fingerprint`` is never cached: a verdict
whose environment cannot be named cannot be reused.

Entries are written by the harness only, into the cache directory, which is never bound into a sandbox
and is checked at configure time to lie outside every workspace. Each entry carries an HMAC under a key
kept beside the entries (mode 0600), its full key and a well-formed verdict; anything else (a truncated
file, an entry copied from elsewhere, a planted file, a key collision) is a miss that is then rebuilt, never
an accept. Only judgements are stored: an *infra* verdict says nothing about the proof and is re-run, and
neither does a verdict that a timeout or a killed process decided (a layer's ``accident``, issue 19): a proof
that timed out once on a loaded machine is checked again next time, never served ``failed`` from the cache.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import sys
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pytest_forall.core.model import (
    ACCEPT,
    INFRA,
    REJECT,
    Layer,
    Task,
    Verdict,
    json_with_encoded,
    sha256_bytes,
    task_record,
    verdict_json,
)
from pytest_forall.core.progress import replace_text_atomic
from pytest_forall.core.prover import Fingerprinted, Prover
from pytest_forall.core.state import load_secret
from pytest_forall.core.verify import DEFAULT_TIMEOUT, verify_candidate

CACHE_MODES = ("off", "read", "readwrite")
#: Bumped when the entry layout changes; older entries are then misses.
FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent.parent


def cache_root(options: dict[str, Any] | None) -> Path:
    """The run's cache directory (``--forall-cache-dir``), by default one per machine under the temporary directory:
    where every kept build, verdict and sandbox log goes, so that cleaning it is cleaning everything kept."""
    return Path(str((options or {}).get("cache_dir") or os.path.join(tempfile.gettempdir(), "pytest-forall-cache")))


@functools.cache
def _source_digest(extra: str) -> str:
    digest = hashlib.sha256()
    paths = sorted(str(p) for p in _PACKAGE.rglob("*.py"))
    for path in [*paths, *([extra] if extra else [])]:
        digest.update(path.encode() + b"\0")
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
    return digest.hexdigest()


def harness_version() -> str:
    """Digest of pytest-forall's own sources: a value derived by the harness is keyed by it, as a verdict is."""
    return _source_digest("")


def verifier_version(prover: Prover) -> str:
    """Digest of pytest-forall's own sources and of the module defining the backend's class.

    Any change to the verifier, a screen or a backend (the strict axiom list included) invalidates every
    entry; nobody has to remember to bump a version number.
    """
    module = sys.modules.get(type(prover).__module__)
    return _source_digest(_outside_package(str(getattr(module, "__file__", None) or "")))


@functools.cache
def _outside_package(path: str) -> str:
    """``path`` when it lies outside pytest-forall's own package, else "" (resolved once per process and path)."""
    return "" if path and Path(path).resolve().is_relative_to(_PACKAGE) else path


def describe_environment(task: Task, prover: Prover) -> tuple[dict[str, str] | None, str]:
    """The backend's fingerprint for ``task`` (``version``, ``libraries`` and any further component), or
    (None, why it cannot be named): then nothing is cached and the item's row says why (``uncacheable``)."""
    if not isinstance(prover, Fingerprinted):
        return None, f"the {prover.name} backend has no environment fingerprint"
    try:
        found = prover.fingerprint(task)
    except Exception as exc:  # noqa: BLE001 - an environment that cannot be named is not cached
        return None, f"the {prover.name} environment could not be named: {type(exc).__name__}: {exc}"
    if not isinstance(found, dict) or not found.get("version") or "libraries" not in found:
        return None, f"the {prover.name} backend's fingerprint has no version and libraries"
    return {str(k): str(v) for k, v in found.items()}, ""


def environment(task: Task, prover: Prover) -> dict[str, str] | None:
    """The backend's fingerprint for ``task``, or None when it cannot say (then no caching)."""
    return describe_environment(task, prover)[0]


def _environment_key(env: dict[str, str]) -> dict[str, str]:
    """The key's environment part: version, libraries and every further component the backend named."""
    extra = {f"environment.{k}": v for k, v in sorted(env.items()) if k not in ("version", "libraries")}
    return {"prover_version": env["version"], "libraries": env["libraries"], **extra}


#: :func:`task_digest` per task object (kept alive here, so its id is not reused): an item's cache key and its row
#: ask for the same task's digest
_TASK_DIGESTS: dict[int, tuple[Task, str]] = {}


def task_digest(task: Task) -> str:
    """Digest of everything the adapter parsed for the task (template, frozen part, theorem, files, meta): the SHA-256
    of the JSON text of its record (:func:`task_record`: each long text by its own SHA-256), with the names of the
    texts so recorded (a meta entry ``x_sha256`` of the adapter's is not a text ``x`` digested)."""
    known = _TASK_DIGESTS.get(id(task))
    if known is not None and known[0] is task:
        return known[1]
    record = task_record(task)
    record.pop("source_path", None)
    wire = task.to_wire()
    digested = sorted(k for k in record if k not in wire) + sorted(
        f"meta.{k}" for k in record.get("meta") or {} if k not in (wire.get("meta") or {}))
    digest = sha256_bytes(json.dumps({"record": record, "digested": digested}, sort_keys=True, default=str).encode())
    if len(_TASK_DIGESTS) >= 100_000:
        _TASK_DIGESTS.clear()
    _TASK_DIGESTS[id(task)] = (task, digest)
    return digest


def environment_digest(env: dict[str, str] | None) -> str:
    return "" if env is None else sha256_bytes(json.dumps(env, sort_keys=True).encode())


def prover_settings(prover: Prover) -> dict[str, Any]:
    """The backend's plain settings (tool names, memory cap, a checker's time limit, sandboxing …): any of them
    may change a verdict, so all are part of the policy. Paths and callables (cache locations, the runner)
    are not settings of the judgement."""
    return {k: v for k, v in sorted(vars(prover).items())
            if not k.startswith("_") and isinstance(v, (str, int, float, bool)) and v is not None}


def cache_key(task: Task, prover: Prover, data: bytes, policy: dict[str, Any]) -> dict[str, str] | None:
    """Every component of the key by name (stored in the entry and compared on read), or None: not cacheable."""
    env = environment(task, prover)
    if env is None:
        return None
    return {"prover": prover.name, **_environment_key(env), "task": task_digest(task), "candidate": sha256_bytes(data),
            "verifier": verifier_version(prover),
            "policy": json.dumps({**policy, "prover": prover_settings(prover)}, sort_keys=True)}


def layer_from_wire(data: dict[str, Any]) -> Layer:
    """Inverse of :meth:`Layer.to_wire` (evidence is every key besides the four named ones)."""
    ok = data["ok"]
    if not isinstance(data["name"], str) or ok not in (True, False, None) or not isinstance(data["reason"], str) \
            or not isinstance(data["infra"], bool):
        raise ValueError("malformed layer")
    evidence = {k: v for k, v in data.items() if k not in ("name", "ok", "reason", "infra")}
    return Layer(data["name"], ok, data["reason"], evidence, data["infra"])


def verdict_from_wire(data: dict[str, Any]) -> Verdict:
    """Inverse of :meth:`Verdict.to_wire`; raises ValueError/KeyError/TypeError on anything malformed."""
    layers = tuple(layer_from_wire(layer) for layer in data["layers"])
    axioms = tuple(str(a) for a in data["axioms"])
    if not isinstance(data["strict"], bool) or not isinstance(data["compiles"], int):
        raise TypeError("malformed verdict")
    # any further field of the dataclass travels as itself (a list on the wire is a tuple in the dataclass)
    named = {"verdict", "strict", "digest", "layers", "axioms", "compiles"}
    extra: dict[str, Any] = {f.name: tuple(data[f.name]) if isinstance(data[f.name], list) else data[f.name]
             for f in fields(Verdict) if f.name not in named and f.name in data}
    return Verdict(str(data["verdict"]), data["strict"], str(data["digest"]), layers, axioms, data["compiles"],
                   **extra)


def _consistent(verdict: Verdict, digest: str) -> bool:
    """A stored verdict must be a judgement of these bytes and agree with its own layers."""
    if verdict.digest != digest or verdict.verdict not in (ACCEPT, REJECT):
        return False
    if any(layer.infra or layer.evidence.get("accident") for layer in verdict.layers):
        return False  # infra, or a timeout or kill: an accident of the machine, not a judgement of the proof
    failed = any(layer.ok is False for layer in verdict.layers)
    if verdict.verdict == ACCEPT:
        names = {layer.name for layer in verdict.layers if layer.ok is True}
        return not failed and {"elaboration", "axiom_audit"} <= names
    return failed and not verdict.strict


def _replace(path: Path, text: str) -> None:
    """:func:`~pytest_forall.core.progress.replace_text_atomic`, which needs no lock; the directory is made only when
    the write finds it missing (each entry's directory once)."""
    try:
        replace_text_atomic(path, text)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text_atomic(path, text)


#: each cache directory's HMAC key, read once per process
_SECRETS: dict[str, bytes] = {}


class VerdictCache:
    """Entries under ``root/<2 hex>/<64 hex>.json``; ``mode`` is one of :data:`CACHE_MODES`."""

    def __init__(self, root: Path, mode: str) -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode {mode!r} is not one of {list(CACHE_MODES)}")
        self.root = root
        self.mode = mode
        self._secret: bytes | None = None
        #: why the last :func:`verify_cached` lookup missed ("" after a hit or without a key)
        self.last_miss = ""

    @property
    def reads(self) -> bool:
        return self.mode in ("read", "readwrite")

    @property
    def writes(self) -> bool:
        return self.mode == "readwrite"

    def _key_secret(self) -> bytes:
        if self._secret is None:
            # once per process and cache (pytest makes a cache object per item); a key replaced on disk meanwhile
            # only makes this process's entries misses elsewhere (a bad HMAC), never a served verdict
            where = str((self.root / ".hmac-key").absolute())
            self._secret = _SECRETS.get(where)
            if self._secret is None:
                self._secret = _SECRETS[where] = load_secret(self.root / ".hmac-key")
        return self._secret

    @staticmethod
    def name(key: dict[str, str]) -> str:
        return sha256_bytes(json.dumps(key, sort_keys=True).encode())

    def _path(self, key: dict[str, str]) -> Path:
        name = self.name(key)
        return self.root / name[:2] / f"{name}.json"

    def _mac(self, body: str) -> str:
        return hmac.new(self._key_secret(), body.encode(), hashlib.sha256).hexdigest()

    def _read(self, key: dict[str, str]) -> tuple[Any, str]:
        """The stored value for ``key`` after the HMAC, format and key checks; (None, why) otherwise."""
        if not self.reads:
            return None, "cache off"
        try:
            raw = self._path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, "absent"
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"unreadable entry: {exc}"
        try:
            entry = json.loads(raw)
            body, mac = entry["body"], entry["mac"]
            if not isinstance(body, str) or not isinstance(mac, str) or not hmac.compare_digest(mac, self._mac(body)):
                return None, "entry not written by this cache (bad HMAC)"
            content = json.loads(body)
            if content["format"] != FORMAT or content["key"] != key:
                return None, "entry is for another key or format"
            return content["value"], ""
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return None, f"corrupt entry: {type(exc).__name__}: {exc}"

    def _write(self, key: dict[str, str], value: Any, encoded: str | None = None) -> None:
        """Atomically (:func:`_replace`): parallel workers never see half an entry. ``encoded``: the value as its JSON
        text already (``value`` is then not read), put last as ``sort_keys`` puts it: the same bytes."""
        body = (json.dumps({"format": FORMAT, "key": key, "value": value}, sort_keys=True) if encoded is None
                else json_with_encoded({"format": FORMAT, "key": key}, "value", encoded))
        _replace(self._path(key), json.dumps({"body": body, "mac": self._mac(body)}))

    def get(self, key: dict[str, str]) -> tuple[Verdict | None, str]:
        """(verdict, "") on a valid hit; (None, why) on a miss (absent, corrupt, foreign or inconsistent)."""
        value, why = self._read(key)
        if value is None:
            return None, why
        try:
            verdict = verdict_from_wire(value)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return None, f"corrupt verdict: {type(exc).__name__}: {exc}"
        if not _consistent(verdict, key["candidate"]):
            return None, "entry's verdict is inconsistent with its key"
        return verdict, ""

    def put(self, key: dict[str, str], verdict: Verdict) -> bool:
        """Store a judgement (never an infra verdict). True when written."""
        if not self.writes or verdict.verdict == INFRA or not _consistent(verdict, key["candidate"]):
            return False
        self._write(key, None, verdict_json(verdict))  # encoded once for the entry and the item's audit record
        return True

    def value(self, key: dict[str, str]) -> Any:
        """A plain value the harness stored under ``key`` (:meth:`remember`) after the HMAC and key checks, else None."""
        return self._read(key)[0]

    def remember(self, key: dict[str, str], value: Any) -> None:
        """Store a plain value the harness derived from ``key``'s inputs alone (e.g. where a text's proofs are)."""
        if self.writes:
            self._write(key, value)

    def template_compiles(self, key: dict[str, str]) -> bool:
        """Whether the template of ``key`` (see :func:`template_key`) is recorded as compiling here."""
        value, _ = self._read(key)
        return value is True

    def remember_template(self, key: dict[str, str]) -> None:
        """Record that the template compiled here (only success is recorded: a failure is re-checked)."""
        if self.writes:
            self._write(key, True)


#: The key fields naming the proof itself; the rest (environment, verifier, policy) can change under it.
_PROOF_FIELDS = ("prover", "task", "candidate")
#: How a changed key field is named in the terminal's cache line.
_FIELD_NAMES = {"prover_version": "environment changed: prover version", "libraries":
                "environment changed: libraries", "verifier": "verifier changed (pytest-forall sources)"}


def _last_key_path(cache: VerdictCache, key: dict[str, str], task: Task | None = None) -> Path:
    """Where the key an item (its prover and task id; without a task: the proof) was last judged under is kept."""
    fields = ({"prover": key.get("prover", ""), "item": f"{task.suite}::{task.track}::{task.task_id}"}
              if task is not None else {k: key.get(k, "") for k in _PROOF_FIELDS})
    name = VerdictCache.name(fields)
    return cache.root / "last" / name[:2] / f"{name}.json"


def _proof_tail(task: Task | None, data: bytes | None) -> str:
    """The digest of the candidate after the task's frozen text (for a project item: its proof, without the file
    before it), so an unchanged proof under an edited context is told from a changed one."""
    if task is None or data is None:
        return ""
    frozen = task.frozen.encode("utf-8")
    return sha256_bytes(data[len(frozen):] if frozen and data.startswith(frozen) else data)


def remember_key(cache: VerdictCache, key: dict[str, str], task: Task | None = None, data: bytes | None = None) -> None:
    """Record the key this item (this proof, without a task) was last judged under, so a later miss can say what
    changed: one file per item, with the digest of its proof after the task's frozen text."""
    try:
        _replace(_last_key_path(cache, key, task),
                 json.dumps({**key, "proof_tail": _proof_tail(task, data)}, sort_keys=True))
    except OSError:
        pass  # only an explanation is lost, never a verdict


def explain_miss(cache: VerdictCache, key: dict[str, str], why: str, task: Task | None = None,
                 data: bytes | None = None) -> str:
    """Why ``key`` missed, in words: what differs from the last time this item was judged — its proof (``proof
    changed``), the task around an unchanged proof (``unchanged proof, its context changed``: for a project item, its
    file before it or a file it requires was edited), the key's other fields (``environment changed: libraries``) —
    ``new proof`` when it never was, or the entry's own problem."""
    if why != "absent":
        return why
    try:
        last = json.loads(_last_key_path(cache, key, task).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "new proof (never judged in this environment by this cache)"
    if not isinstance(last, dict):
        return "new proof (never judged in this environment by this cache)"
    named = []
    if last.get("candidate") != key.get("candidate") or last.get("task") != key.get("task"):
        tail = _proof_tail(task, data)
        same = last.get("candidate") == key.get("candidate") or (tail and last.get("proof_tail") == tail)
        named.append("unchanged proof, its context changed (the task: its statement, or the text and files before "
                      "it)" if same else "proof changed")
    changed = sorted(k for k in {*key, *last} if k not in (*_PROOF_FIELDS, "proof_tail") and key.get(k) != last.get(k))
    if not changed and not named:
        return "entry removed"
    named += [_FIELD_NAMES.get(k, f"environment changed: {k.removeprefix('environment.')}" if k.startswith(
        "environment.") else _policy_change(key.get(k, ""), last.get(k, ""))) for k in changed]
    return "; ".join(dict.fromkeys(named))


def _policy_change(now: str, before: str) -> str:
    """``policy changed: timeout`` (the settings that differ), from the two keys' policy texts."""
    try:
        new, old = json.loads(now), json.loads(before)
        names = sorted(k for k in {*new, *old} if new.get(k) != old.get(k))
    except (ValueError, AttributeError, TypeError):
        names = []
    return "policy changed" + (f": {', '.join(names)}" if names else "")


def template_key(task: Task, prover: Prover) -> dict[str, str] | None:
    """The key of "this template compiles in this environment", or None when the environment has no name."""
    env = environment(task, prover)
    if env is None:
        return None
    return {"kind": "template", "prover": prover.name, **_environment_key(env), "task": task_digest(task),
            "verifier": verifier_version(prover)}


@dataclass(frozen=True)
class Lookup:
    """One lookup of the verdict cache for a candidate: the key it was made under (None: not cacheable), the verdict
    found, or why none was. :func:`verify_cached` given it does not compute the key nor read the entry again."""

    key: dict[str, str] | None
    verdict: Verdict | None
    why: str


def look_up(cache: VerdictCache | None, task: Task, prover: Prover, data: bytes, *, timeout: float = DEFAULT_TIMEOUT,
            static_only: bool = False, policy: dict[str, Any] | None = None) -> Lookup:
    """What :func:`verify_cached` would find in the cache for ``data``; never verifies."""
    key = _lookup_key(cache, task, prover, data, timeout, static_only, policy)
    if cache is None or key is None:
        return Lookup(key, None, "")
    verdict, why = cache.get(key)
    return Lookup(key, verdict, why)


def cached_verdict(cache: VerdictCache | None, task: Task, prover: Prover, data: bytes, *,
                   timeout: float = DEFAULT_TIMEOUT, static_only: bool = False,
                   policy: dict[str, Any] | None = None) -> Verdict | None:
    """The verdict :func:`verify_cached` would serve from the cache for ``data``, or None; never verifies."""
    return look_up(cache, task, prover, data, timeout=timeout, static_only=static_only, policy=policy).verdict


def _lookup_key(cache: VerdictCache | None, task: Task, prover: Prover, data: bytes, timeout: float,
                static_only: bool, policy: dict[str, Any] | None) -> dict[str, str] | None:
    full_policy = {"timeout": timeout, "static_only": static_only, **(policy or {})}
    return cache_key(task, prover, data, full_policy) if cache is not None and cache.mode != "off" else None


def verify_cached(cache: VerdictCache | None, task: Task, prover: Prover, data: bytes, *,
                  timeout: float = DEFAULT_TIMEOUT, static_only: bool = False,
                  policy: dict[str, Any] | None = None, looked_up: Lookup | None = None) -> tuple[Verdict, bool]:
    """:func:`verify_candidate` behind the cache: (verdict, True) when it came from a valid entry. ``looked_up``: the
    :func:`look_up` of the same task, bytes and policy just before (an item's lookup before its session, #18), taken as
    this call's own: the key is not made nor the entry read twice."""
    if looked_up is None:
        looked_up = look_up(cache, task, prover, data, timeout=timeout, static_only=static_only, policy=policy)
    key = looked_up.key
    if cache is not None:
        cache.last_miss = ""
    if cache is not None and key is not None:
        hit, why = looked_up.verdict, looked_up.why
        if hit is not None:
            return hit, True
        cache.last_miss = explain_miss(cache, key, why, task, data)
    verdict = verify_candidate(task, prover, data, timeout=timeout, static_only=static_only)
    if cache is not None and key is not None and cache.put(key, verdict):
        remember_key(cache, key, task, data)
    return verdict, False
