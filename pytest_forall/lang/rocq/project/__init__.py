"""The Rocq backend of a project's items (``--forall-project``): the project's layout (``layout``) and items
(``items``), its own build (``build``, started ahead of need: ``ahead``), the judge's sessions over the build
(``sessions``), its ``coqchk`` (``checker``), the records kept of them (``records``), and the prover (``prover``).

Project items are in the Rocq pack's language under the project prover's name (its placeholder, compile hint,
portfolio ladder), so nothing needs to know that ``rocq-project`` is Rocq."""

from __future__ import annotations

import dataclasses

from pytest_forall.core.language import Language, ProjectSplice
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.rocq import LANGUAGE as ROCQ

#: The prover name of a Rocq project's items.
ROCQ_PROVER = "rocq-project"


def _project_splice() -> ProjectSplice:
    from pytest_forall.lang.rocq.splice import declared_after, proof_splice

    return ProjectSplice(proof_splice, declared_after)


# without the pack's aliases: ``coq`` names the Rocq pack alone (``forall verify --prover coq``)
LANGUAGE = dataclasses.replace(ROCQ, name=ROCQ_PROVER, aliases=(), project_splice=_project_splice)


@hookimpl(trylast=True)
def pytest_forall_languages() -> list[Language]:
    return [LANGUAGE]
