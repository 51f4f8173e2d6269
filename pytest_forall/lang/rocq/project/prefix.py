"""The compiled prefix of a file the project's build stops in (issue 32): a small OCaml plugin
(``forall_prefix.ml``) loaded into every ``coqc`` of the default build (``coq_makefile``) by a ``Local Declare ML
Module`` (not exported: a file that compiles gets the same ``.vo``), which, when coqc exits after an error, saves the
library compiled so far to the build's ``prefix/`` directory, the item the error is in admitted. The items before the
error are then judged from that ``.vo`` (the judge in its own process, and ``coqchk``) instead of a second compile of
the file up to that item (docs/verifier.md, "A file that does not build"). Built by the harness once per source and
Coq installation; only for Coq 8.16's API on the host (another toolchain keeps the second compile)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pytest_forall.lang.rocq.toolchain import Toolchain, probe, run_in

#: the plugin's source, next to this module
PREFIX_SOURCE = Path(__file__).with_name("forall_prefix.ml")
#: its findlib package (``forall_prefix.plugin``) and the vernacular file that loads it (``coqc -l``)
PREFIX_PACKAGE = "forall_prefix"
PREFIX_LOADER = "load.v"
#: the environment variable naming the directory it saves into (unset: it saves nothing)
PREFIX_ENV = "FORALL_PREFIX_DIR"


def prefix_plugin(cache_dir: Path, coq_version: str, toolchain: Toolchain) -> Path | None:
    """The findlib directory holding the prefix plugin and its loader, or None (another Coq than 8.16 on the host,
    or it could not be built: the build then runs without it, and a broken file's prefix is compiled again). A cache
    path with white space gets None too: make splits ``COQEXTRAFLAGS=-l <loader>`` at spaces, so every coqc of the
    build would fail on a path it was never meant to read."""
    from pytest_forall.lang.rocq.judge import cached_entry

    if any(c.isspace() for c in str(cache_dir)):
        return None

    info = probe(toolchain)[1]
    if toolchain.root or info is None or info.version != (8, 16):
        return None
    source = PREFIX_SOURCE.read_bytes()
    key = "prefix-" + hashlib.sha256(source + b"\0" + coq_version.encode()).hexdigest()[:24]

    def build(scratch: Path) -> list[str] | str:
        package = scratch / PREFIX_PACKAGE
        package.mkdir()
        (package / "forall_prefix.ml").write_bytes(source)
        env = {"PATH": os.environ.get("PATH") or "/usr/bin:/bin"}
        result = run_in(toolchain, ["ocamlfind", "ocamlopt", "-thread", "-shared", "-rectypes", "-w", "-a",
                                    "-package", "coq-core.vernac", "forall_prefix.ml", "-o", "forall_prefix.cmxs"],
                        package, env=env)
        if result.returncode != 0:
            return f"building the prefix plugin failed: {(result.stdout + result.stderr).strip()[-300:]}"
        for leftover in package.iterdir():
            if leftover.name != "forall_prefix.cmxs":
                leftover.unlink()
        (package / "META").write_text('package "plugin" (\n  directory = "."\n  requires = "coq-core.vernac"\n'
                                      '  archive(native) = "forall_prefix.cmxs"\n'
                                      '  plugin(native) = "forall_prefix.cmxs"\n)\n', encoding="utf-8")
        (scratch / PREFIX_LOADER).write_text(f'Local Declare ML Module "{PREFIX_PACKAGE}.plugin".\n',
                                             encoding="utf-8")
        return [f"{PREFIX_PACKAGE}/forall_prefix.cmxs", f"{PREFIX_PACKAGE}/META", PREFIX_LOADER]

    if (str(cache_dir), key) in _FAILED:
        return None
    try:
        entry, problem = cached_entry(cache_dir, key, build)
    except OSError:
        problem = "unwritable"
    if problem:
        _FAILED.add((str(cache_dir), key))  # (not built again for every build of this process)
        return None
    return entry


#: (cache directory, plugin key) pairs this process could not build
_FAILED: set[tuple[str, str]] = set()
