"""The Rocq backend for tests that verify the same candidate more than once: each coqc compile and judge run once.

A clause test verifies a cheat with its check and again with that check replaced by a no-op; the prover-side tests
re-verify candidates another test of the process verified. The candidate's compile is a function of its bytes, its
module name, the coqc and its flags; the judge's verdict on the same ``.vo`` against the same template cache is the
same too (the backend already keeps it per instance: ``RocqProver._judged``). :class:`SharedBuilds` keeps both for
the whole test process, across instances, so the second verification runs only the layers that differ — the test
still goes through :func:`~pytest_forall.core.verify.verify_candidate`, every layer in it. A subclass that changes
what coqc prints (its runner) must not derive from it; one that changes only coqchk may.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from pytest_forall.core.model import sha256_bytes
from pytest_forall.core.proc import run_command
from pytest_forall.core.prover import CompileResult
from pytest_forall.lang.rocq.backend import RocqProver

#: (coqc, toolchain root, sandboxed, flags, load path, module, SHA-256 of the source) -> the compile and its .vo
_COMPILED: dict[tuple[str, ...], tuple[CompileResult, bytes | None]] = {}
#: (plugin, template cache, coqc, toolchain root) -> the judge's verdicts, as ``RocqProver._judged`` keeps them
_JUDGED: dict[tuple[str, ...], dict[tuple[str, str], Any]] = {}
#: candidate compiles run (``"compiled"``) and served again (``"reused"``) in this process
COUNTS: Counter[str] = Counter()


class SharedBuilds(RocqProver):
    """:class:`RocqProver` whose candidate compiles and judge verdicts are shared by every instance of the process
    with the same toolchain and template cache (templates are kept by the backend's own cache already)."""

    def __init__(self, options: dict[str, Any] | None = None, runner: Any = run_command) -> None:
        super().__init__(options, runner)
        self._judged = _JUDGED.setdefault((str(self.plugin), str(self.cache_dir), self.coqc, self.toolchain.root), {})

    def _compile_source(self, data: bytes, module: str, parent: Any, timeout: float,
                        report_sentences: bool) -> tuple[CompileResult, bytes | None]:
        if not report_sentences:  # the template's compile: kept by the template cache
            return super()._compile_source(data, module, parent, timeout, report_sentences)
        key = (self.coqc, self.toolchain.root, str(self.sandboxed), " ".join(self.info.compile_flags),
               " ".join(self.load), module, sha256_bytes(data))
        if key in _COMPILED:
            COUNTS["reused"] += 1
            result, vo = _COMPILED[key]
            return copy.deepcopy(result), vo
        result, vo = super()._compile_source(data, module, parent, timeout, report_sentences)
        COUNTS["compiled"] += 1
        if not (result.timed_out or result.infra or result.accident):  # an accident of the load is never kept
            _COMPILED[key] = (copy.deepcopy(result), vo)
        return result, vo
