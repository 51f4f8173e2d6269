"""What the project backend keeps of a judge dump: a file's dump written back in the plugin's format (the build's
cache of it), the digests of what comes before each declaration (the gate's ``kernel_context``), and the gate's
digest of a candidate's proof."""

from __future__ import annotations

import hashlib
from typing import Any

from pytest_forall.core.model import Task, sha256_bytes

#: The statement clause of project mode (what an accepted project item is guaranteed).
PROJECT_STATEMENT_CLAUSE = ("kernel statement: the target's type is its type in the project's own build, and every "
                            "declaration of its file before it is the build's (types, bodies of transparent "
                            "definitions), as kernel terms")


def proof_digest(task: Task, data: bytes) -> str:
    """What the gate calls the proof (core/gating.py): the candidate after the project's text and the target's
    statement, digested; the same whether the verdict was computed or served from the cache."""
    after = data.decode("utf-8", "replace")[int(task.meta.get("statement_offset", 0)):]
    return sha256_bytes(after.split(task.statement, 1)[-1].encode("utf-8"))[:24]


class _LinesDigest:
    """``sha256("\\n".join(lines))`` of a growing list of lines, readable at any point without re-joining."""

    def __init__(self, first: str | None = None) -> None:
        self.digest, self.empty = hashlib.sha256(), True
        if first is not None:
            self.add(first)

    def add(self, line: str) -> None:
        self.digest.update(("" if self.empty else "\n").encode() + line.encode())
        self.empty = False

    def hexdigest(self) -> str:
        return self.digest.copy().hexdigest()[:24]


#: per judge dump (kept alive with its table) and files-it-rests-on key: :func:`context_digests`
_CONTEXTS: dict[int, tuple[Any, str, dict[str, tuple[str, str, str]]]] = {}


def context_digests(dump: Any, deps_key: str) -> dict[str, tuple[str, str, str]]:
    """Per declaration of a file's dump (its first occurrence): its entry and the digests of what comes before it in
    the file — ``kernel_context`` (``deps_key``, then every declaration that is not an opaque proof), ``kernel_lemmas``
    (the opaque ones). One pass per dump, not one per item (a file's items each read all declarations before them)."""
    known = _CONTEXTS.get(id(dump))
    if known is not None and known[0] is dump and known[1] == deps_key:
        return known[2]
    definitions, lemmas = _LinesDigest(deps_key), _LinesDigest()
    table: dict[str, tuple[str, str, str]] = {}
    for path, found in dump.fields:
        if path not in table:
            table[path] = (found, definitions.hexdigest(), lemmas.hexdigest())
        (lemmas if found.split(" ")[2:3] == ["opaque"] else definitions).add(f"{path} {found}")
    _CONTEXTS[id(dump)] = (dump, deps_key, table)
    return table


def stored_dump(dump: Any) -> str:
    """A file dump written back in the plugin's format under the fixed nonce ``stored`` (the build's cache)."""
    lines = ["forall-judge stored", *(f"field {p} {e}" for p, e in dump.fields),
             *(f"functor {m}" for m in dump.opaque_modules)]
    for target in sorted(dump.targets):
        lines += [f"target {target}", *(f"assumption {target} {a}" for a in dump.assumptions.get(target, ())),
                  *(f"finding-of {target} finding {f}" for f in dump.findings.get(target, ())),
                  *(f"universes-of {target} {u}" for u in dump.universes.get(target, ())),
                  *(f"module-finding-of {target} finding {f}" for f in dump.module_findings.get(target, ())),
                  *(f"reaches {target} {library}" for library in dump.reaches.get(target, ()))]
    lines += [f"file-finding {library} finding {f}" for library, found in sorted(dump.file_findings.items())
              for f in found]
    return "\n".join([*lines, *(f"missing-target {m}" for m in sorted(dump.missing)), "end stored"]) + "\n"


