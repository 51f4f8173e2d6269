"""Commands that installed libraries' plugins add to Rocq and the screen allows (Equations' ``Derive``, Hierarchy
Builder's ``HB.*``): what each generates is ordinary kernel terms and elaboration settings of the candidate's own,
which the kernel judge compares; kept apart from :mod:`.screen`, which applies them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_forall.lang.common import Token

#: Hierarchy Builder's commands (``From HB Require Import structures.``; mathcomp 2, mathcomp-analysis): Elpi programs
#: that declare records, definitions, canonical instances, coercions, notations and modules, all kernel terms or
#: elaboration settings of the candidate's own, judged as such (a field or instance that changes what the frozen
#: text means changes its kernel term: ``cheat/hb_field_captures_frozen_name``, rejected with the static layers off).
#: Not ``HB.graph`` (writes a file), ``HB.declare`` (section variables wherever it stands) nor ``HB.lock`` (a module
#: sealed by a module type: a sealed body is where the judge sees least, rocq#22387, and the screen refuses module
#: types by text; no surveyed library sentence used it).
HB_COMMANDS = frozenset({"HB.mixin", "HB.structure", "HB.instance", "HB.factory", "HB.builders", "HB.end",
                         "HB.export", "HB.reexport", "HB.about", "HB.locate", "HB.howto", "HB.status", "HB.check"})
#: Attributes of Hierarchy Builder's commands (names before ``(``/``=``): how the structure is named, keyed and
#: inferred, and what it prints. Not ``log`` (its output is a file of Coq commands).
HB_ATTRIBUTES = frozenset({"short", "key", "infer", "primitive", "primitive_class", "non_forgetful_inheritance",
                           "mathcomp", "arg_sort", "verbose", "compress_coercions", "hnf", "wrapper"})


def hierarchy_builder_attribute(attribute: str) -> bool:
    """An attribute of an HB command (``short(type="finType")``, ``key="T"``, ``infer(n)`` …) by its name."""
    return re.split(r"[(=]", attribute)[0] in HB_ATTRIBUTES


#: Words of Rocq's own ``Derive f SuchThat P As g`` / ``Derive f in P as g`` (it opens a proof): never in
#: Equations' ``Derive classes for types``.
_CORE_DERIVE_WORDS = frozenset({"SuchThat", "As", "in", "as"})


def equations_derive(body: Sequence[Token]) -> bool:
    """Equations' ``Derive NoConfusion Subterm for t u.``: plain class names, ``for``, plain type names. What it
    generates are ordinary definitions and instances, judged like any candidate constant (an instance that changed
    how the frozen text elaborates changes its kernel term), like a new ``Instance``
    (``KERNEL_JUDGED_HEADS``), for the candidate's types or a library's (``Derive Signature for eq``). ``body``:
    the sentence's tokens after its attributes and locality, without the final ``.``."""
    texts = [t.text for t in body]
    if texts[:1] != ["Derive"] or texts.count("for") != 1:
        return False
    split = texts.index("for")
    return (split > 1 and split < len(texts) - 1 and all(t.kind == "ident" for t in body[1:])
            and not _CORE_DERIVE_WORDS & set(texts))
