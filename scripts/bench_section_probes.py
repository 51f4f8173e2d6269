"""What the section-local probes cost: the prefix library of the stdlib's Multiset.v (meq_singleton
admitted), compiled with and without its dependency probes, best of N runs each.

    python scripts/bench_section_probes.py [N]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_forall.suites.project import dependency_probes, load_project

MULTISET = Path("/usr/lib/ocaml/coq/theories/Sets/Multiset.v")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        text = re.sub(r"(\n  Lemma meq_singleton\b.*?\.\n  Proof\.\n).*?\n  Qed\.\n", r"\1  Admitted.\n",
                      MULTISET.read_text(encoding="utf-8"), flags=re.DOTALL)
        (root / "_CoqProject").write_text("-Q . MS\nMultiset.v\n")
        (root / "Multiset.v").write_text(text)
        task = load_project(root, {})[0]
        names = [d["name"] for d in task.meta["section_locals"]]
        probed = str(task.meta["prefix"])
        for label, source in (("with probes", probed), ("without", probed.replace(dependency_probes(names), ""))):
            path = root / f"P_{label.split()[0]}.v"
            path.write_text(source)
            best = float("inf")
            for _ in range(runs):
                start = time.monotonic()
                subprocess.run(["coqc", "-q", str(path)], check=True, capture_output=True, cwd=root)
                best = min(best, time.monotonic() - start)
            print(f"{label}: {len(names)} names, best of {runs}: {best:.2f} s")


if __name__ == "__main__":
    main()
