"""Run the Rocq screen over real library files, as if a candidate had written each file's sentences as helpers.

For each ``.v`` file: the last lemma opened by a bare ``Proof.`` is the theorem; the template is the file's
``Require`` sentences, that lemma and ``Proof. Admitted.``; the candidate is the file up to the end of that lemma's
proof. Every sentence before the lemma is then an inserted one, and every refusal of ``syntax_screen`` or
``shadowing_guard`` is listed, with the sentence. Refusals that are artifacts of the set-up are left out: a
declaration named like a name the lemma uses (in a real problem the template would hold that declaration), the
lemma inside a Section/Module the file opened, and anything after the proof. Honest proofs the screen refuses show
up here (issue: rejecting an honest proof is a defect too).

    python scripts/screen_survey.py libcoq-coquelicot libcoq-mathcomp-algebra ...   # Debian packages
    python scripts/screen_survey.py --files DIR/*.v --json out.json
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_forall.lang.common import Finding, NotUnderstood, layer_from_findings
from pytest_forall.lang.rocq import screen
from pytest_forall.lang.rocq.lexer import tokens

ARTIFACTS = (" shadows `", "which the candidate opened", "sentence after the proof")
_captured: dict[str, list[Finding]] = {}
_layer_from_findings = layer_from_findings


def _capture(name: str, findings: Sequence[Finding], passed: str, evidence: dict[str, Any] | None = None) -> Any:
    """Every finding of a layer (the layer itself keeps only the first 20)."""
    _captured[name] = list(findings)
    return _layer_from_findings(name, findings, passed, evidence)


setattr(screen, "layer_from_findings", _capture)  # noqa: B010 (the screen's own name, replaced)


def package_files(packages: Sequence[str]) -> Iterator[Path]:
    for package in packages:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
        yield from (Path(line) for line in listed.split() if line.endswith(".v"))


def survey(path: Path) -> list[tuple[str, str, str]]:
    """(layer, finding, sentence) for each refusal of the file's sentences put before its last lemma."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        sentences = screen.split_sentences(tokens(text))
    except NotUnderstood as exc:
        return [("lexer", f"not understood: {exc.message}", "")]
    picks = [i for i, s in enumerate(sentences[:-2]) if s.head() in screen.THEOREM_KEYWORDS and s.opens_proof()
             and [t.text for t in sentences[i + 1].tokens] == ["Proof", "."]]
    end = next((k for k in range(picks[-1] + 1, len(sentences)) if sentences[k].terminator()), None) if picks else None
    if end is None:
        return [("pick", "no lemma opened by a bare `Proof.` and closed", "")]
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def start(s: screen.Sentence) -> int:
        return offsets[s.tokens[0].line - 1] + s.tokens[0].col - 1

    def stop(s: screen.Sentence) -> int:
        return offsets[s.tokens[-1].line - 1] + s.tokens[-1].col - 1 + len(s.tokens[-1].text)

    theorem = sentences[picks[-1]]
    requires = [text[start(s):stop(s)] for s in sentences[:picks[-1]] if s.head() in ("Require", "From")]
    template = "\n".join(requires) + "\n" + text[start(theorem):stop(theorem)] + "\nProof.\nAdmitted.\n"
    _captured.clear()
    screen.rocq_static_layers(template, text[:stop(sentences[end])] + "\n", theorem_name=theorem.declared_name())
    return [(layer, finding.describe(), str(finding.evidence.get("sentence", "")))
            for layer in ("syntax_screen", "shadowing_guard") for finding in _captured.get(layer, [])
            if not any(a in finding.describe() for a in ARTIFACTS)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", help="Debian packages whose .v files to read")
    parser.add_argument("--files", nargs="*", default=[], type=Path, help=".v files to read")
    parser.add_argument("--json", type=Path, help="write every refusal, by file, here")
    parser.add_argument("--most", type=int, default=30, help="how many kinds of refusal to print")
    args = parser.parse_args(argv)
    results = {str(p): survey(p) for p in [*package_files(args.packages), *args.files]}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    kinds: collections.Counter[tuple[str, str]] = collections.Counter()
    example: dict[tuple[str, str], str] = {}
    for file, found in results.items():
        for layer, finding, sentence in found:
            kind = re.sub(r"^line \d+: ", "", finding)
            kind = re.sub(r"`(\S+)[^`]*` (changes|is not|in the)", r"`\1 …` \2", kind)
            kind = re.sub(r"proof of `[^`]*`", "proof of …", kind)[:100]
            kinds[layer, kind] += 1
            example.setdefault((layer, kind), f"{Path(file).name}: {sentence[:100]}")
    refusals = sum(kinds.values())
    clean = sum(not found for found in results.values())
    print(f"{len(results)} files, {refusals} refusals, {clean} files with none")
    for (layer, kind), count in kinds.most_common(args.most):
        print(f"{count:6} {layer}: {kind}\n       e.g. {example[layer, kind]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
