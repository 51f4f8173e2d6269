"""The items of a Rocq project: where its files' proofs are (read from the text with the Rocq lexer: only where they
are, never what they mean), which are not items and why, and the task of each item (its template is its own file up
to its statement, the proof the hole)."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from pytest_forall.core.model import Task
from pytest_forall.lang.project import SUITE, task_id_of
from pytest_forall.lang.rocq.project import ROCQ_PROVER
from pytest_forall.lang.rocq.project.layout import CoqProject

#: Sentences whose proof makes an item (with ``Program`` in front too): theorems, and definitions, examples,
#: instances and (co)recursive functions proved in proof mode (the kernel checks the guard of the latter at the end).
ITEM_HEADS = frozenset({"Theorem", "Lemma", "Fact", "Remark", "Corollary", "Proposition", "Property", "Example",
                        "Definition", "Instance", "Fixpoint", "CoFixpoint"})


@dataclass
class RocqBlock:
    """A ``Section`` or ``Module`` open at a proof; ``unsupported`` says why an item inside cannot be one."""

    kind: str
    name: str
    unsupported: str = ""


@dataclass
class RocqProof:
    """One proof of a file: where its statement and proof are, and how it ends."""

    keyword: str
    name: str
    start: int          # offset of the statement sentence
    stmt_end: int       # offset just after the statement's '.'
    opener: str         # the proof's first sentence when it is ``Proof.``/``Proof using …``/``Proof with …``
    body: str           # the proof after the opener, up to and including its last sentence
    ending: str         # Qed | Defined | Admitted | Abort | Save | Proof (a ``Proof term.``) | "" (unterminated)
    blocks: list[RocqBlock]
    skip: str = ""      # why this proof is not an item ("" = it is one)
    program: str = ""   # for an obligation: the ``Program`` declaration it belongs to (as the text names it)

    def module_path(self) -> list[str]:
        return [b.name for b in self.blocks if b.kind == "Module"]


def _open_block(sentence: Any, words: list[str]) -> RocqBlock | None:
    """The block ``sentence`` opens, if it is ``Section X.`` or a non-inline ``Module [Import|Export] X``."""
    if words[:1] == ["Section"] and len(words) > 1:
        return RocqBlock("Section", words[1])
    if words[:1] != ["Module"] or sentence.defines_inline():
        return None
    rest = words[1:]
    if rest[:1] == ["Type"]:
        name = rest[1] if len(rest) > 1 else "?"
        return RocqBlock("Module", name, unsupported=(
            f"the `Module Type` `{name}`: Coq keeps only the statement in the signature (`Parameter`) and discards "
            "the proof, so there is no body to check"))
    while rest[:1] in (["Import"], ["Export"]):
        rest = rest[1:]
    name = rest[0] if rest else "?"
    texts = [t.text for t in sentence.tokens]
    if "(" in texts:
        return RocqBlock("Module", name, unsupported=(
            f"the functor `{name}` (`Module {name} (…)`): its proofs are fields of the functor's body, over its "
            "parameters, not constants of the file's build the judge can read (lemmas after it, e.g. about an "
            "application `Module M := F …`, are items)"))
    if ":" in texts:  # (``Module M <: T`` only checks M against T: M stays as written, an ordinary module)
        return RocqBlock("Module", name, unsupported=(
            f"the module `{name}` sealed by a signature (`Module {name} : T`): outside it, the build has only the "
            "signature's fields (a lemma as a `Parameter`, one the signature does not name not at all), so there is "
            "no body to check"))
    return RocqBlock("Module", name)


def rocq_proofs(text: str) -> list[RocqProof]:
    """Every proof of ``text`` (statement sentence opening proof mode, up to its terminator), with the sections
    and modules open around it; raises NotUnderstood on text the Rocq lexer refuses. Only where the proofs are is
    read from the text: what the statements mean is read from Coq's build (the judge)."""
    from pytest_forall.lang.rocq.lexer import tokens
    from pytest_forall.lang.rocq.screen import split_sentences

    starts = line_offsets(text)
    sentences = split_sentences(tokens(text))

    def offset(token: Any) -> int:
        return int(starts[token.line - 1] + token.col - 1)

    found: list[RocqProof] = []
    blocks: list[RocqBlock] = []
    last_program = ""
    i = 0
    while i < len(sentences):
        sentence = sentences[i]
        words = sentence.command_words()
        texts = [t.text for t in sentence.tokens]
        opened = _open_block(sentence, words)
        if opened is not None:
            blocks.append(opened)
        elif words[:1] == ["End"] and blocks:
            blocks.pop()
        if words[:1] == ["Program"]:
            last_program = sentence.declared_name()
        # ``Obligation N [of p].`` opens a proof too (``Obligation Tactic := …`` and ``Obligations.`` do not)
        at = texts.index(words[0]) if words[:1] == ["Obligation"] else -1
        numbered = at >= 0 and at + 1 < len(texts) and texts[at + 1].isdigit()
        if not sentence.opens_proof() and not numbered:
            i += 1
            continue
        program_of = ""
        if words[:1] in (["Next"], ["Obligation"]):
            program_of = texts[texts.index("of") + 1] if "of" in texts[:-1] else last_program
        program = words[:1] == ["Program"]
        keyword = words[1] if program and len(words) > 1 else (words[0] if words else "")
        j = i + 1
        opener = ""
        if j < len(sentences) and sentences[j].command_words()[:1] == ["Proof"]:
            rest = [t.text for t in sentences[j].tokens[1:-1]]
            if rest and rest[0] not in ("using", "with"):  # ``Proof term.``: the proof in one sentence
                stmt_end = offset(sentence.tokens[-1]) + 1
                term = text[offset(sentences[j].tokens[1]):offset(sentences[j].tokens[-1])]
                found.append(RocqProof(keyword, sentence.declared_name(), offset(sentence.tokens[0]), stmt_end,
                                       "", f"exact ({term}).\nQed.", "Proof", list(blocks)))
                i = j + 1
                continue
            opener = text[offset(sentences[j].tokens[0]):offset(sentences[j].tokens[-1]) + 1]
            j += 1
        body_start = j
        while j < len(sentences) and not sentences[j].terminator():
            j += 1
        ending = sentences[j].terminator() if j < len(sentences) else ""
        body = ""
        if body_start < len(sentences) and j < len(sentences):
            body = text[offset(sentences[body_start].tokens[0]):offset(sentences[j].tokens[-1]) + 1]
        proof = RocqProof(keyword, sentence.declared_name(), offset(sentence.tokens[0]),
                          offset(sentence.tokens[-1]) + 1, opener, body, ending, list(blocks), program=program_of)
        proof.skip = _not_an_item(proof, words, program)
        found.append(proof)
        i = j + 1
    return found


#: :func:`rocq_proofs` by the text's digest: the collection, the sessions ahead and each file's dump ask for the
#: same files in one process (a text is lexed once, however many times its items are asked for)
_PROOFS: dict[str, list[RocqProof]] = {}


def _proofs_of(text: str, store: Any = None) -> list[RocqProof]:
    """:func:`rocq_proofs` of ``text``, once per process and text (the result is read, never changed). With ``store``
    (the run's :class:`~pytest_forall.core.cache.VerdictCache`), once per text and pytest-forall version: lexing a
    library is most of its collection (1.1 s of 1.5 s for Coquelicot, in every process of a run, #18), so the result
    is kept in an HMAC-checked entry keyed by the text's SHA-256 and pytest-forall's own sources; an entry that is
    absent, foreign or malformed is lexed again."""
    from pytest_forall.core.cache import harness_version

    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    found = _PROOFS.get(key)
    if found is not None:
        return found
    entry = {"kind": "rocq-proofs", "text": key, "harness": harness_version()}
    if store is not None:
        found = _proofs_from_wire(store.value(entry))
    if found is None:
        found = rocq_proofs(text)
        if store is not None:
            store.remember(entry, [dataclasses.asdict(proof) for proof in found])
    _PROOFS[key] = found
    return found


def _proofs_from_wire(value: Any) -> list[RocqProof] | None:
    """The proofs :func:`_proofs_of` stored, or None when ``value`` is not such a list."""
    if not isinstance(value, list):
        return None
    try:
        return [RocqProof(**{**proof, "blocks": [RocqBlock(**block) for block in proof["blocks"]]})
                for proof in value]
    except (TypeError, KeyError):
        return None


def _not_an_item(proof: RocqProof, words: list[str], program: bool) -> str:
    """Why a proof is not made an item ("" when it is one)."""
    if proof.keyword in ("Next", "Obligation"):
        of = f"`{proof.program}`" if proof.program else "a `Program` declaration"
        named = ("" if proof.keyword == "Obligation" else " and numbers its constant `…_obligation_<n>` after the "
                 "obligations it solved itself, which the text does not show")
        return (f"an obligation of {of}: `Program` generates its statement (the file writes none for an agent to read "
                f"or the screen to freeze){named}; it is checked with its file in the build, and the items that use "
                "that definition rest on it (an admitted obligation makes them rules-only)")
    if proof.keyword == "Let":
        return "a section `Let` with a proof, which vanishes when its section ends"
    if proof.keyword == "Goal":
        return "a `Goal` declares no name"
    if proof.keyword not in ITEM_HEADS:
        return f"`{proof.keyword}` in proof mode is not an item kind"
    if not proof.name or proof.name in (":", "(", "{") or not re.fullmatch(r"[^\W\d][\w']*", proof.name):
        return "no name (Coq generates one)"
    if proof.ending in ("Abort", ""):
        return "the proof is aborted" if proof.ending == "Abort" else "the proof is not terminated"
    if proof.ending == "Save":
        return "`Save` ends the proof under another name"
    if program and proof.ending != "Admitted" and proof.keyword in ("Definition", "Instance"):
        return ""
    return next((f"inside {b.unsupported}" for b in proof.blocks if b.unsupported), "")


def rocq_tasks(project: CoqProject, cones: dict[str, dict[str, Any]], skipped: list[tuple[str, str]],
               store: Any = None) -> list[Task]:
    """Every proof of the project an item: the template is the proof's own file up to its statement, its proof the
    hole, the blocks around it closed. Proofs that are not items go to ``skipped`` as (name, reason). ``store``: where
    a file's lexed proofs are kept between runs (:func:`_proofs_of`)."""
    from pytest_forall.lang.common import NotUnderstood

    tasks = []
    for rel in project.files:
        path = project.root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append((rel, f"cannot read: {exc}"))
            continue
        module = project.logical_module(rel)
        if module is None:
            skipped.append((rel, "outside every -Q/-R directory of the project"))
            continue
        try:
            proofs = _proofs_of(text, store)
        except NotUnderstood as exc:
            skipped.append((rel, f"cannot split into sentences: {exc}"))
            continue
        file_digest = hashlib.sha256(text.encode("utf-8")).hexdigest()  # once per file, not per proof (#18)
        for proof in proofs:
            qualified = ".".join([module, *proof.module_path(), proof.name or "?"])
            if proof.skip:
                where = f"{rel}:{text.count(chr(10), 0, proof.start) + 1}"
                skipped.append((qualified if proof.keyword in ITEM_HEADS and "no name" not in proof.skip
                                else f"{where} {proof.keyword}", proof.skip))
                continue
            tasks.append(_rocq_task(project, rel, module, text, file_digest, proof, cones.get(rel, {})))
    return tasks


def _rocq_task(project: CoqProject, rel: str, module: str, text: str, file_digest: str, proof: RocqProof,
               cone: dict[str, Any]) -> Task:
    """The item of one proof: the file up to the statement, the proof's opener, ``Admitted.`` as the hole, and
    ``End`` for every block open there (the file after the proof is not part of the problem: nothing after it can
    change what the declarations before it are). ``own_candidate`` is the project's own proof in that template."""
    path = [*proof.module_path(), proof.name]
    qualified = ".".join([module, *path])
    task_id = task_id_of(qualified)
    in_section = any(b.kind == "Section" for b in proof.blocks)
    admitted = proof.ending == "Admitted"
    opener = proof.opener or "Proof."
    if admitted and in_section and opener.split()[1:2] != ["using"]:
        # Coq generalises an admitted lemma over every section variable, a proved one over those it uses: the
        # project's statement of this lemma is the one over all of them
        opener = "Proof using All."
    closing = "".join(f"End {b.name}.\n" for b in reversed(proof.blocks))
    head = text[:proof.stmt_end] + "\n" + opener + "\n"
    template = head + "Admitted.\n" + closing
    own = "" if admitted else head + proof.body + "\n" + closing
    meta = {"candidate_name": f"{task_id}.v", "project_root": str(project.root), "project_file": rel,
            "coq_module": module, "qualified_name": qualified, "target_path": ".".join(path),
            "retrieval_exclude": [qualified], "cone_key": cone.get("key", ""), "deps_key": cone.get("deps_key", ""),
            "deps": list(cone.get("deps", [])), "statement_offset": proof.start, "opener": opener,
            "keyword": proof.keyword, "admitted": admitted, "own_candidate": own, "statement_audit": "off",
            "file_digest": file_digest,
            "markers": ["admitted"] if admitted else [],
            "sections": [b.name for b in proof.blocks if b.kind == "Section"], "modules": proof.module_path()}
    return Task(task_id=task_id, suite=SUITE, track="coq", prover=ROCQ_PROVER, source_path=str(project.root / rel),
                template=template, frozen=head, theorem_name=proof.name,
                statement=text[proof.start:proof.stmt_end], meta=meta)


def line_offsets(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


def has_items(project: CoqProject, rel: str) -> bool:
    """The file has items (what :func:`rocq_tasks_of_file` would find, without making them)."""
    from pytest_forall.lang.common import NotUnderstood

    try:
        return any(not proof.skip for proof in _proofs_of((project.root / rel).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, NotUnderstood):
        return False


def rocq_tasks_of_file(project: CoqProject, rel: str) -> list[Task]:
    """The items of one file (the targets the baseline dump reports assumptions for)."""
    skipped: list[tuple[str, str]] = []
    one = dataclasses.replace(project, files=[rel])
    return rocq_tasks(one, {}, skipped)
