"""``forall apply RUN_DIR [--check]``: the proofs a run found for a project's admitted lemmas, put into the project.

For each project file, the accepted proofs of its admitted lemmas are merged into the file (the helpers right before
each lemma, the proof in place of its ``Admitted.``: :mod:`pytest_forall.suites.project_patch`). A file changed since
the run is refused (exit 4, one line naming it; nothing is written). An item whose helper is named like a later
declaration of the file, or whose proof does not compile in the whole file, is left out with the reason; the rest
still goes in. Then the project is rebuilt with its own build and re-judged in library mode (a pytest run of the
project with ``replay``: ``-m "not admitted"``, or every item gated against ``--baseline``), and every item's
statement as the kernel reads it is compared with the one before the apply: a helper must not change what another
lemma states (exit 1, naming it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

#: Exit status for a file changed since the run (a usage error: the run no longer describes the file).
STALE = 4
#: Exit status when a check cannot run at all (no toolchain, no sandbox, the project does not build), as ``forall
#: verify``'s infra.
INFRA_STATUS = 2


def rejudge_argv(root: Path, options: dict[str, Any], run_id: str, baseline: str = "") -> list[str]:
    """The library-mode pytest run of the patched project, with the run's build, toolchain, cache and sandbox."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--forall-project={root}",
            "--forall-frontend=replay", f"--forall-run-id={run_id}", "--forall-run-exists=restart"]
    for key in ("project_build", "rocq_toolchain", "cache_dir", "reports", "sandbox", "timeout"):
        if options.get(key) not in (None, ""):
            argv.append(f"--forall-{key.replace('_', '-')}={options[key]}")
    for key in ("project_axioms", "sandbox_ro"):
        for value in options.get(key) or []:
            argv.append(f"--forall-{key.replace('_', '-')}={value}")
    if baseline:
        argv += [f"--forall-baseline={Path(baseline).resolve()}", "--forall-gate=regressions"]
    else:
        argv += ["-m", "not admitted"]
    return argv


def _read_current(groups: dict[tuple[Path, str], list[Any]], run_name: str) -> tuple[dict[tuple[Path, str], str],
                                                                                       list[str]]:
    """Each file's text now, and one line per file that is not the one the run read (changed, or unreadable)."""
    from pytest_forall.suites.project_patch import file_digest

    texts: dict[tuple[Path, str], str] = {}
    stale = []
    for (root, rel), group in sorted(groups.items()):
        try:
            texts[(root, rel)] = text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            stale.append(f"forall apply: {root / rel}: cannot read it ({exc}); nothing written")
            continue
        if any(file_digest(text) != proof.file_digest for proof in group):
            stale.append(f"forall apply: {root / rel} changed since the run {run_name}; nothing written")
    return texts, stale


def _rejudge(root: Path, options: dict[str, Any], run_dir: Path, baseline: str, before: Any) -> int:
    """The library-mode run of the patched project, then the kernel's view of it (every item's statement, every
    declaration of the project's files) compared with ``before`` (a :class:`~pytest_forall.suites.project_patch.KernelView`)."""
    from pytest_forall.suites.project_patch import ApplyInfra, kernel_view

    run_id = f"{run_dir.name}-applied"
    argv = rejudge_argv(root, {**options, "reports": options.get("reports") or str(run_dir.parent)}, run_id, baseline)
    print(f"re-judging {root} in library mode: reports {run_id}", flush=True)
    status = subprocess.run(argv, cwd=root, check=False).returncode
    try:
        after = kernel_view({**options, "project": str(root)}, root, run_dir / "apply")
    except ApplyInfra as exc:
        print(f"forall apply: cannot compare the statements after the apply (infra): {exc}", file=sys.stderr)
        return max(status, INFRA_STATUS)
    changed = sorted(task_id for task_id, statement in before.statements.items()
                     if task_id in after.statements and after.statements[task_id] != statement)
    for task_id in changed:
        print(f"statement changed: {task_id}: the kernel reads another statement after the apply (a helper changed "
              f"what it refers to); the applied changes are in {run_dir / 'apply' / 'patches'}")
    unread = sorted(set(before.statements) - set(after.statements))
    print(f"kernel statements: {len(before.statements) - len(changed) - len(unread)} of {len(before.statements)} "
          f"items unchanged, {len(changed)} changed, {len(unread)} not read after the apply")
    # a declaration that is not an item (a definition, an inductive) can change meaning under the same name
    moved = sorted(key for key, value in before.declarations.items()
                   if key in after.declarations and after.declarations[key] != value)
    gone = sorted(set(before.declarations) - set(after.declarations))
    for key in moved:
        print(f"declaration changed: {key}: the kernel reads another declaration after the apply (a helper changed "
              f"what it means); the applied changes are in {run_dir / 'apply' / 'patches'}")
    for key in gone:
        print(f"declaration gone: {key}: the kernel has no such declaration after the apply")
    print(f"kernel declarations: {len(before.declarations) - len(moved) - len(gone)} of {len(before.declarations)} "
          f"unchanged, {len(moved)} changed, {len(gone)} gone")
    return max(status, 1) if changed or unread or moved or gone else status


def run_apply(args: argparse.Namespace) -> int:
    from pytest_forall.suites.project_patch import (
        ApplyInfra,
        accepted_in_run,
        compile_check,
        file_digest,
        kernel_view,
        plan_file,
        read_settings,
        write_patch,
        write_text_as,
    )

    run_dir = Path(args.run).resolve()
    if not (run_dir / "results.jsonl").is_file():
        print(f"forall apply: {args.run} is not a run directory (no results.jsonl)", file=sys.stderr)
        return 2
    proofs, problems = accepted_in_run(run_dir)
    for task_id, reason in problems:
        print(f"left out: {task_id}: {reason}")
    if not proofs:
        print(f"forall apply: {args.run} has no accepted proof of an admitted project lemma")
        return 0
    groups: dict[tuple[Path, str], list[Any]] = {}
    for proof in proofs:
        groups.setdefault((proof.root, proof.rel), []).append(proof)
    texts, stale = _read_current(groups, run_dir.name)
    if stale:
        for line in stale:
            print(line, file=sys.stderr)
        return STALE
    options = read_settings(run_dir)
    work = run_dir / "apply"
    work.mkdir(exist_ok=True)
    try:
        plans = [plan_file(root, rel, texts[(root, rel)], group,
                           compile_check({**options, "project": str(root)}, root, rel, work))
                 for (root, rel), group in sorted(groups.items())]
    except ApplyInfra as exc:
        print(f"forall apply: cannot check the patched files (infra, nothing written): {exc}", file=sys.stderr)
        return INFRA_STATUS
    for plan in plans:
        for task_id, reason in plan.left_out:
            print(f"left out: {task_id}: {reason}")
        if plan.applied:
            names = ", ".join(p.task_id for p in plan.applied)
            print(f"{'applies' if args.check else 'applied'}: {plan.rel} ({names})")
    if args.check:
        return 1 if problems or any(plan.left_out for plan in plans) else 0
    plans = [plan for plan in plans if plan.applied]
    roots = sorted({plan.root for plan in plans})
    try:  # what every item states now, as the kernel reads it (the build the run judged against)
        before = {} if args.no_rejudge else {root: kernel_view({**options, "project": str(root)}, root, work)
                                             for root in roots}
    except ApplyInfra as exc:
        print(f"forall apply: cannot read the project's statements (infra, nothing written): {exc}", file=sys.stderr)
        return INFRA_STATUS
    moved = [plan.root / plan.rel for plan in plans
             if file_digest((plan.root / plan.rel).read_text(encoding="utf-8")) != file_digest(plan.text)]
    if moved:
        print(f"forall apply: {moved[0]} changed while apply ran; nothing written", file=sys.stderr)
        return STALE
    for plan in plans:
        write_text_as(plan.root / plan.rel, plan.new_text)
        write_patch(work, plan)
    print(f"the applied changes, as patches: {work / 'patches'}")
    if args.no_rejudge:
        return 0
    return max((_rejudge(root, options, run_dir, args.baseline or "", before[root]) for root in roots), default=0)


def add_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("apply", help="Put a run's accepted proofs of a project's admitted lemmas into the "
                                          "project's files, then rebuild and re-judge the library")
    parser.add_argument("run", help="reports/<run id> of a run on --forall-project")
    parser.add_argument("--check", action="store_true", help="Only say whether the patches apply (nothing written)")
    parser.add_argument("--baseline", metavar="DIR", help="Gate the re-judging run against this library-mode run "
                                                           "from before (every item; --forall-gate=regressions)")
    parser.add_argument("--no-rejudge", action="store_true", help="Write the files, do not rebuild and re-judge")
    parser.set_defaults(func=run_apply)
