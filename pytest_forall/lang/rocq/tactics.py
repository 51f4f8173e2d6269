"""Rocq's closing tactics and the imports they need, shared by the portfolio's ladder and the statement audit."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from pytest_forall.lang.rocq.toolchain import coqc_where

#: ``nra``, not ``psatz``: psatz needs its domain as an argument and the external ``csdp`` prover (not installed)
LADDER = ["lia", "nia", "nra", "ring", "field", "auto", "intuition", "firstorder", "easy", "trivial",
          "reflexivity", "tauto", "intuition lia", "eauto", "vm_compute; reflexivity", "intros; lra"]
HAMMER = ["sauto", "hauto", "qauto"]
PRELUDE = "From Coq Require Import Lia Psatz Lra.\n"
HAMMER_PRELUDE = "From Hammer Require Import Tactics.\n"


@functools.cache
def contrib_installed(*path: str) -> bool:
    """``path`` exists under the ``user-contrib`` of ``coqc -where`` (an installed library). No ``coqc``: False; a
    ``coqc -where`` that gives no answer raises :class:`ToolchainProbeFailed` (not cached: asked again next time)."""
    coqc = shutil.which("coqc")
    if coqc is None:
        return False
    return Path(coqc_where(coqc), "user-contrib", *path).exists()


def hammer_installed() -> bool:
    """CoqHammer's tactics (Debian's libcoq-hammer) are installed next to the standard library."""
    return contrib_installed("Hammer", "Tactics")


def portfolio_ladder() -> tuple[list[str], str]:
    """The closing tactics, cheapest first, and the imports they need (CoqHammer's where installed)."""
    if hammer_installed():
        return [*LADDER, *HAMMER], PRELUDE + HAMMER_PRELUDE
    return list(LADDER), PRELUDE
