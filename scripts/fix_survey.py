"""The judge's fixpoint criterion over the installed Debian Rocq libraries (docs/verifier.md, "The fixpoint
criterion"): every compiled file of each package is dumped in project mode (``ForallJudgeFile``, every constant of
the file a target, as library mode dumps a project's file), and each ``fix`` finding — one refused fixpoint of a
constant of that file — is counted once per (constant, place), by the criterion's reason. Never std++ or Iris (kept
for independent evaluation; not installed here anyway); HoTT is left out (its own prelude, ``-noinit``).

    PYTHONPATH=$PWD nice -n 10 python scripts/fix_survey.py [--list] [--source FILE.mlg] [PACKAGE ...]

``--list`` prints each refused constant with its reason; ``--source`` builds the plugin from another
``forall_judge.mlg`` (a base revision's, ``git show REV:pytest_forall/lang/rocq/forall_judge.mlg``), else the working
tree's; either is built into a temporary cache and run by the host's coqc. Two coqc sessions per package: one lists
every file's declarations, one dumps them all with their constants as targets (the assumptions in one walk).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_forall.lang.rocq import judge as judge_module
from pytest_forall.lang.rocq.judge import FileDump, files_audit_source, parse_file_dump, plugin_dir

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


def dumps(files: list[tuple[str, list[str]]], work: Path, env: dict[str, str]) -> dict[str, FileDump | str]:
    """The project-mode dumps of several files in one coqc session (``files_audit_source``: the judge's own)."""
    outs = [(module, targets, str(work / f"out_{i}.txt")) for i, (module, targets) in enumerate(files)]
    for _, _, out in outs:
        Path(out).unlink(missing_ok=True)
    (work / "Survey.v").write_text(files_audit_source(outs, NONCE), encoding="utf-8")
    result = subprocess.run(["coqc", "-q", "Survey.v"], cwd=work, env=env, capture_output=True, text=True,
                            timeout=7200, check=False)
    found: dict[str, FileDump | str] = {}
    for module, _, out in outs:
        try:
            found[module] = parse_file_dump(Path(out).read_text(encoding="utf-8"), NONCE)
        except OSError:
            found[module] = f"no output (coqc exited {result.returncode}: {result.stderr.strip()[-300:]})"
    return found


def main(argv: list[str]) -> None:
    show = "--list" in argv
    if "--source" in argv:
        judge_module.PLUGIN_SOURCE = Path(argv[argv.index("--source") + 1]).absolute()
        argv = argv[:argv.index("--source")] + argv[argv.index("--source") + 2:]
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
        started = time.monotonic()
        refused: dict[tuple[str, str], str] = {}
        files = modules(package, contrib)
        listings = dumps([(module, []) for module in files], work, env)
        targets = []
        for module in files:
            listing = listings[module]
            if isinstance(listing, str):
                print(f"{package} {module}: no listing: {listing}", flush=True)
                continue
            targets.append((module, [path for path, entry in listing.fields if entry.startswith("const ")]))
        for module, found in dumps(targets, work, env).items():
            if isinstance(found, str):
                print(f"{package} {module}: no dump: {found}", flush=True)
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
        print(f"{package}: {len(files)} files, {sum(len(t) for _, t in targets)} constants, "
              f"{len(refused)} refused fixpoint owners "
              f"({time.monotonic() - started:.0f} s)", flush=True)
    for why, n in reasons.most_common():
        print(f"{n:5d}  {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
