"""The judge's fixpoint criterion over the installed Debian Rocq libraries (docs/verifier.md, "The fixpoint
criterion"): every compiled file of each package is dumped in project mode (``ForallJudgeFile``, every constant of
the file a target, as library mode dumps a project's file), and each ``fix`` finding — one refused fixpoint of a
constant of that file — is counted once per (constant, place), by the criterion's reason. Never std++ or Iris (kept
for independent evaluation; not installed here anyway); HoTT is left out (its own prelude, ``-noinit``).

    PYTHONPATH=$PWD nice -n 10 python scripts/fix_survey.py [PACKAGE ...] [--list]

``--list`` prints each refused constant with its reason. The plugin is the working tree's (built into a temporary
cache), run by the host's coqc.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_forall.lang.rocq.judge import FileDump, parse_file_dump, plugin_dir

PACKAGES = ["libcoq-mathcomp-ssreflect", "libcoq-mathcomp-fingroup", "libcoq-mathcomp-algebra",
            "libcoq-mathcomp-solvable", "libcoq-mathcomp-field", "libcoq-mathcomp-character",
            "libcoq-mathcomp-finmap", "libcoq-mathcomp-real-closed", "libcoq-mathcomp-bigenough",
            "libcoq-mathcomp-zify", "libcoq-mathcomp-algebra-tactics", "libcoq-mathcomp-analysis",
            "libcoq-coquelicot", "libcoq-equations", "libcoq-ext-lib", "libcoq-interval", "libcoq-flocq",
            "libcoq-bignums", "libcoq-coqprime", "libcoq-quickchick", "libcoq-simple-io",
            "libcoq-hierarchy-builder", "libcoq-elpi"]
NONCE = "0f1e2d3c4b5a6978"


def modules(package: str, contrib: Path) -> list[str]:
    """The logical names of the package's compiled files under user-contrib."""
    listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=False).stdout.split()
    return sorted(".".join(Path(p).relative_to(contrib).with_suffix("").parts) for p in listed
                  if p.endswith(".vo") and Path(p).is_relative_to(contrib))


def dump(module: str, targets: list[str], work: Path, env: dict[str, str]) -> tuple[FileDump | str | None, str]:
    """One file's project-mode dump (its fields, and the detectors' findings per target)."""
    out = work / "out.txt"
    out.unlink(missing_ok=True)
    (work / "Survey.v").write_text(f'Declare ML Module "forall-judge.plugin".\nRequire {module}.\n'
                                   f'ForallJudgeFile "{out}" "{NONCE}" "{module}" "{" ".join(targets)}".\n')
    result = subprocess.run(["coqc", "-q", "Survey.v"], cwd=work, env=env, capture_output=True, text=True,
                            timeout=1800, check=False)
    if result.returncode != 0:
        return None, (result.stdout + result.stderr).strip()[-300:]
    return parse_file_dump(out.read_text(encoding="utf-8"), NONCE), ""


def main(argv: list[str]) -> None:
    show = "--list" in argv
    packages = [a for a in argv if not a.startswith("--")] or PACKAGES
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip()
    contrib = Path(where) / "user-contrib"
    version = subprocess.run(["coqc", "--print-version"], capture_output=True, text=True, check=True).stdout.split()[0]
    work = Path(tempfile.mkdtemp(prefix="fix-survey-"))
    plugin, problem = plugin_dir(work / "cache", version)
    if plugin is None:
        sys.exit(problem)
    env = {**os.environ, "OCAMLPATH": str(plugin)}
    reasons: collections.Counter[str] = collections.Counter()
    for package in packages:
        refused: dict[tuple[str, str], str] = {}
        files = modules(package, contrib)
        for module in files:
            listing, problem = dump(module, [], work, env)
            if listing is None or isinstance(listing, str):
                print(f"{package} {module}: no listing: {problem or listing}", flush=True)
                continue
            consts = [path for path, entry in listing.fields if entry.startswith("const ")]
            found, problem = dump(module, consts, work, env) if consts else (listing, "")
            if found is None or isinstance(found, str):
                print(f"{package} {module}: no dump: {problem or found}", flush=True)
                continue
            for items in found.findings.values():
                for finding in items:
                    feature, owner, place, _digest, why = finding.split(" ", 4)
                    if feature == "fix":
                        refused[(owner, place)] = why
        for (owner, place), why in sorted(refused.items()):
            reasons[why] += 1
            if show:
                print(f"  {owner} ({place}): {why}")
        print(f"{package}: {len(files)} files, {len(refused)} refused fixpoint owners", flush=True)
    for why, n in reasons.most_common():
        print(f"{n:5d}  {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
