"""The Rocq (Coq) language pack: problem parsing, screen, backend, statement audit and portfolio facts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_forall.core.language import Language
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.rocq.problem import ALIASES, NAME, parse_coq
from pytest_forall.lang.rocq.tactics import portfolio_ladder
from pytest_forall.lang.rocq.toolchain import check_toolchain

if TYPE_CHECKING:
    from pytest_forall.core.audit import AuditPack

def audit() -> AuditPack:
    from pytest_forall.lang.rocq.audit import RocqAudit

    return RocqAudit()


LANGUAGE = Language(name=NAME, aliases=ALIASES, title="Rocq (Coq)", extension="v", placeholder="Admitted.",
                    compile_command="coqc {file}", parse_problem=parse_coq, audit=audit,
                    portfolio_ladder=portfolio_ladder, check_toolchain=check_toolchain)


@hookimpl(trylast=True)
def pytest_forall_languages() -> list[Language]:
    return [LANGUAGE]
