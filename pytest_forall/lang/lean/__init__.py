"""The Lean 4 language pack: problem parsing, screen, backend, statement audit and portfolio facts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_forall.core.language import Language
from pytest_forall.core.model import Task
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean.problem import NAME, parse_lean

if TYPE_CHECKING:
    from pytest_forall.core.audit import AuditPack

LADDER = ["decide", "omega", "simp", "norm_num", "linarith", "nlinarith", "positivity", "aesop", "exact?"]
PLACEHOLDER = "sorry"
#: The compiler executable (resolved on PATH or through the toolchain).
BINARY = "lean"


def portfolio_ladder() -> tuple[list[str], str]:
    return list(LADDER), ""


def close_hole(task: Task, tactic: str) -> str:
    """The template with its final ``sorry`` replaced by ``by <tactic>`` (or the tactic after a ``by``)."""
    opener = "" if task.frozen.rstrip().endswith("by") else "by "
    return task.frozen + opener + tactic + task.template[len(task.frozen) + len(PLACEHOLDER):]


def audit() -> AuditPack:
    from pytest_forall.lang.lean.audit import LeanAudit

    return LeanAudit()


LANGUAGE = Language(name=NAME, aliases=("lean4",), title="Lean 4", extension="lean", placeholder=PLACEHOLDER,
                    compile_command="lake env lean {file}", parse_problem=parse_lean,
                    portfolio_ladder=portfolio_ladder, close_hole=close_hole, audit=audit)


@hookimpl(trylast=True)
def pytest_forall_languages() -> list[Language]:
    return [LANGUAGE]
