"""Cost of project mode against the project's own build (issue 18), on a copy of a real library.

    python scripts/bench_project.py [LIBRARY_DIR] [LOGICAL] [EDIT_FILE] [FILE ...]

Copies the FILEs (default: every ``.v``) of LIBRARY_DIR (default: the installed Coquelicot sources) to a scratch
project under the new logical name LOGICAL (``-R . LOGICAL``), then times, one after the other on the same
machine:

1. ``make -j2`` of the copy (``coq_makefile``), the reference;
2. cold: ``pytest --forall-project DIR --forall-frontend replay -m "not admitted"`` with an empty cache (the build,
   one judge session and one coqchk per file, every item judged);
3. warm: the same again, nothing changed (verdict cache hits);
4. one edit: a proof-free line appended to EDIT_FILE (a leaf of the library), the same command again.

Prints one line per step (seconds, ratio to ``make -j2``, item outcomes).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def installed(name: str) -> Path:
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(where) / "user-contrib" / name


def main() -> int:
    library = Path(sys.argv[1]) if len(sys.argv) > 1 else installed("Coquelicot")
    logical = sys.argv[2] if len(sys.argv) > 2 else "CQ"
    leaf = sys.argv[3] if len(sys.argv) > 3 else "Equiv.v"
    scratch = Path(tempfile.mkdtemp(prefix="bench-project-"))
    project = scratch / "proj"
    project.mkdir()
    files = sorted(sys.argv[4:]) or sorted(p.name for p in library.glob("*.v"))
    for name in files:
        text = (library / name).read_text(encoding="utf-8")
        (project / name).write_text(text, encoding="utf-8")
    (project / "_CoqProject").write_text(f"-R . {logical}\n" + "".join(f"{f}\n" for f in files))
    reference = scratch / "make"
    shutil.copytree(project, reference)
    subprocess.run(["coq_makefile", "-f", "_CoqProject", "-o", "Makefile"], cwd=reference, check=True,
                   capture_output=True)
    started = time.monotonic()
    made = subprocess.run(["make", "-j2"], cwd=reference, capture_output=True, text=True, check=False)
    make_s = time.monotonic() - started
    print(f"make -j2: {make_s:.1f} s (exit {made.returncode}), {len(files)} files")
    (scratch / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}

    def run(label: str) -> None:
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q",
                        "--forall-project", "proj", "--forall-frontend", "replay", "-m", "not admitted",
                        "--forall-run-id", label], cwd=scratch, env=env, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        rows = [json.loads(line) for line in (scratch / "reports" / label / "results.jsonl").read_text().splitlines()]
        outcomes = collections.Counter(r["outcome"] for r in rows)
        cached = sum(1 for r in rows if r.get("cached"))
        print(f"{label}: {seconds:.1f} s = {seconds / make_s:.2f}x make -j2; {len(rows)} items {dict(outcomes)}, "
              f"{cached} from the verdict cache")

    run("cold")
    run("warm")
    edited = project / leaf
    edited.write_text(edited.read_text(encoding="utf-8") + "\n(* edited *)\nDefinition forall_bench_edit := 0.\n")
    run("one-edit")
    print(f"scratch: {scratch}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
