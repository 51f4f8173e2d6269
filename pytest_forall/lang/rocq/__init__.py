"""The Rocq (Coq) language pack: problem parsing, screen, backend, refutation and portfolio facts."""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from pytest_forall.core.language import Language
from pytest_forall.core.model import Task
from pytest_forall.core.proc import run_command
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.rocq.problem import NAME, parse_coq

LADDER = ["lia", "nia", "psatz", "ring", "field", "auto", "intuition", "firstorder", "easy", "trivial",
          "reflexivity", "tauto", "intuition lia", "eauto", "vm_compute; reflexivity", "intros; lra"]
HAMMER = ["sauto", "hauto", "qauto"]
PRELUDE = "From Coq Require Import Lia Psatz Lra.\n"
HAMMER_PRELUDE = "From Hammer Require Import Tactics.\n"


@functools.cache
def hammer_installed() -> bool:
    """CoqHammer's tactics (Debian's libcoq-hammer) are installed next to the standard library."""
    where = shutil.which("coqc")
    if where is None:
        return False
    result = run_command([where, "-where"], cwd=tempfile.gettempdir(), timeout=30)
    return result.returncode == 0 and (Path(result.stdout.strip()) / "user-contrib" / "Hammer" / "Tactics").is_dir()


def portfolio_ladder() -> tuple[list[str], str]:
    """The closing tactics, cheapest first, and the imports they need (CoqHammer's where installed)."""
    if hammer_installed():
        return [*LADDER, *HAMMER], PRELUDE + HAMMER_PRELUDE
    return list(LADDER), PRELUDE


def refutation(task: Task) -> Task | None:
    from pytest_forall.lang.rocq.refute import rocq_refutation

    return rocq_refutation(task)


LANGUAGE = Language(name=NAME, title="Rocq (Coq)", extension="v", placeholder="Admitted.",
                    compile_command="coqc {file}", parse_problem=parse_coq, refutation=refutation,
                    portfolio_ladder=portfolio_ladder)


@hookimpl(trylast=True)
def pytest_forall_languages() -> list[Language]:
    return [LANGUAGE]
