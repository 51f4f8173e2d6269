"""Rocq toolchains: which Coq/Rocq installation runs every prover process, and what differs between versions.

A toolchain is either an *installation* (a ``bin/`` directory or an opam-style prefix holding ``bin/coqc``;
default: what ``PATH`` gives) or a *root filesystem* (a directory with its own ``usr/bin/coqc``, e.g. one
``forall toolchain build trixie DIR`` made from Debian's packages). A root filesystem's tools cannot run on
the host as they are (their libraries and compiled-in paths are the root's), so every process of such a
toolchain runs under bubblewrap with the root's ``/usr`` and ``/etc`` in place of the host's: the sandbox
does that for the verifier's calls (:class:`pytest_forall.isolation.sandbox.SandboxPolicy` ``root``), and
:func:`root_prefix` does it for the harness's own calls (version probe, judge-plugin build).

Version knowledge lives here and nowhere else (:class:`VersionInfo`): command names, compile flags, the
standard library's logical prefix, the strict policy's axiom names, and which compatibility shim the
judge plugin is built with (``judge_compat/``). The command names are the same everywhere: Rocq 9.x still ships
``coqc``/``coqchk``/``coqtop`` beside ``rocq compile``/``rocqchk``, and the harness runs those.
docs/toolchains.md describes the supported toolchains.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_forall.core.proc import CPU_WALL_FACTOR, ProcResult, run_command
from pytest_forall.core.prover import ToolchainProbeFailed

#: What a root filesystem for the Rocq track holds (Debian package names); python3 runs the sandbox's init.
ROOT_PACKAGES = ("coq", "libcoq-stdlib", "libcoq-mathcomp", "libcoq-coquelicot", "libcoq-mathcomp-analysis",
                 "libcoq-mathcomp-real-closed", "libcoq-mathcomp-zify", "libcoq-mathcomp-algebra-tactics",
                 "libcoq-hammer", "libcoq-interval", "libcoq-quickchick", "libcoq-equations", "libcoq-core-ocaml-dev",
                 "ocaml-findlib", "python3-minimal")
SUITES = ("trixie", "sid")
#: The judge plugin's compatibility shims (judge_compat/<name>.ml), one per family of Coq/Rocq APIs.
COMPAT_NAMES = ("coq816", "coq820", "rocq9")
STAMP = ".forall-toolchain.json"
#: Read from the machine's apt configuration when no mirror is given.
DEBIAN_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
APT_OPTIONS = ('Acquire::Check-Valid-Until "false"',)  # sid's Release file on the mirror is past its date

# -- what differs between versions ---------------------------------------------------------------------------

#: The strict allow-list as the standard library names it (docs/verifier.md); the prefix is per version.
_STDLIB_STRICT = ("Logic.Classical_Prop.classic", "Logic.PropExtensionality.propositional_extensionality",
                  "Logic.FunctionalExtensionality.functional_extensionality_dep",
                  "Logic.ProofIrrelevance.proof_irrelevance", "Logic.Eqdep.Eq_rect_eq.eq_rect_eq",
                  "Logic.JMeq.JMeq_eq", "Logic.IndefiniteDescription.constructive_indefinite_description",
                  "Logic.ClassicalEpsilon.constructive_indefinite_description",
                  "Logic.Description.constructive_definite_description",
                  "Logic.ClassicalUniqueChoice.dependent_unique_choice",
                  "Logic.RelationalChoice.relational_choice",
                  "Sets.Ensembles.Extensionality_Ensembles",  # propositional + functional extensionality on sets
                  "Reals.ClassicalDedekindReals.sig_forall_dec", "Reals.ClassicalDedekindReals.sig_not_dec")
_MATHCOMP_STRICT = ("mathcomp.classical.boolp.propositional_extensionality",
                    "mathcomp.classical.boolp.functional_extensionality_dep",
                    "mathcomp.classical.boolp.constructive_indefinite_description")


@dataclass(frozen=True)
class VersionInfo:
    """Everything the harness does differently for one Coq/Rocq version."""

    version: tuple[int, int]
    #: the kernel names of the standard library start with this (``Coq.`` until 8.20, ``Stdlib.`` from 9.0)
    stdlib_prefix: str
    #: every logical root of an installed library (axioms from them are within the benchmark's rule)
    installed_roots: tuple[str, ...]
    #: flags every compile gets: 8.20 refuses a top-level ``Variable`` (PutnamBench's) unless this warning is off
    compile_flags: tuple[str, ...]
    #: ``judge_compat/<name>.ml``: the plugin's API differences (see that directory's README)
    judge_compat: str
    #: the findlib packages the judge plugin links against
    judge_packages: str
    #: whether ``coqtop -emacs`` prints the goals (and "No more goals.") after each tactic by itself (not in 9.x)
    coqtop_prints_goals: bool = True

    @property
    def strict_axioms(self) -> frozenset[str]:
        return frozenset(self.stdlib_prefix + name for name in _STDLIB_STRICT) | frozenset(_MATHCOMP_STRICT)

    @property
    def label(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def version_info(version: tuple[int, int]) -> VersionInfo:
    """The version knowledge for ``version`` (major, minor); the nearest known older release's rules apply."""
    roots = ("mathcomp.", "Coquelicot.", "Hammer.", "Ltac2.", "elpi.", "HB.")
    if version >= (9, 0):
        return VersionInfo(version, "Stdlib.", ("Stdlib.", "Corelib.", "Coq.", *roots), ("-w", "-declaration-outside-section"),
                           "rocq9", "rocq-runtime.vernac,rocq-runtime.printing", coqtop_prints_goals=False)
    if version >= (8, 17):
        return VersionInfo(version, "Coq.", ("Coq.", *roots), ("-w", "-declaration-outside-section"), "coq820",
                           "coq-core.vernac,coq-core.printing")
    return VersionInfo(version, "Coq.", ("Coq.", *roots), (), "coq816", "coq-core.vernac,coq-core.printing")


def parse_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from ``coqc --version`` output (``The Coq Proof Assistant, version 8.20.1`` / ``The Rocq
    Prover, version 9.2.0``)."""
    found = re.search(r"version (\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


# -- where a toolchain is ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Toolchain:
    """A resolved ``--forall-rocq-toolchain``: ``root`` for a root filesystem, else ``bin`` (may be "": PATH)."""

    spec: str
    root: str = ""
    bin: str = ""

    def tool(self, name: str) -> str:
        """The path to run ``name`` at: inside the root (``/usr/bin/…``), in ``bin``, or the bare name (PATH)."""
        if self.root:
            return f"/usr/bin/{name}"
        return os.path.join(self.bin, name) if self.bin else name

    def has(self, name: str) -> bool:
        if self.root:
            return os.path.isfile(os.path.join(self.root, "usr", "bin", name))
        return shutil.which(self.tool(name)) is not None


def resolve(spec: str, base: Path | None = None) -> Toolchain | str:
    """The toolchain ``spec`` names, or what is wrong with it (one sentence naming the path).

    "" is the installation on PATH. A directory with ``usr/bin/coqc`` is a root filesystem; one with
    ``coqc`` is a ``bin/`` directory; one with ``bin/coqc`` is an installation prefix (an opam switch)."""
    if not spec:
        return Toolchain("")
    path = Path(os.path.expanduser(spec))
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = Path(os.path.abspath(path))
    if not path.is_dir():
        return f"{spec!r} is not a directory (a root filesystem, an opam switch prefix or a bin/ directory)"
    if (path / "usr" / "bin" / "coqc").is_file():
        if not os.access("/usr/bin/bwrap", os.X_OK):
            return f"{spec!r} is a root filesystem, which runs only under bubblewrap (apt-get install bubblewrap)"
        return Toolchain(spec, root=str(path))
    for candidate in (path, path / "bin"):
        if (candidate / "coqc").is_file() and os.access(candidate / "coqc", os.X_OK):
            return Toolchain(spec, bin=str(candidate))
    return (f"{spec!r} holds no Coq installation: neither usr/bin/coqc (a root filesystem), bin/coqc (an opam "
            "switch prefix) nor coqc (a bin/ directory)")


def root_prefix(root: str, work: Path, ro_binds: Sequence[tuple[Path, str]] = ()) -> list[str]:
    """A bubblewrap prefix that runs a command of the root filesystem ``root`` with ``work`` writable at its own
    path (and ``ro_binds``): for the harness's own calls (version probe, plugin build) and for prover calls under
    ``--forall-sandbox=none``; sandboxed prover calls get the sandbox's root instead."""
    args = ["/usr/bin/bwrap", "--die-with-parent", "--unshare-all", "--ro-bind", f"{root}/usr", "/usr",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/sbin", "/sbin"]
    if os.path.isdir(f"{root}/usr/lib64"):
        args += ["--symlink", "usr/lib64", "/lib64"]
    return args + ["--ro-bind", f"{root}/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                   *[x for src, inside in ro_binds for x in ("--ro-bind", str(src), inside)],
                   "--bind", str(work), str(work), "--chdir", str(work)]


def run_in(toolchain: Toolchain, argv: Sequence[str], cwd: Path, timeout: float = 300,
           env: dict[str, str] | None = None, cpu_s: float | None = None) -> ProcResult:
    """Run one harness command of ``toolchain`` (inside its root filesystem when it has one). ``cpu_s``: a budget of
    CPU seconds of its process tree (bwrap's included), ``timeout`` then only the wall-clock backstop (a run it ends
    with the budget unspent is :attr:`ProcResult.starved`); without it, ``timeout`` is wall time. No answer in time
    exits 124 (``timed_out``), not "it does not run"."""
    full = [toolchain.tool(argv[0]), *argv[1:]]
    environment = {"PATH": "/usr/bin:/bin" if toolchain.root else os.environ.get("PATH") or "/usr/bin:/bin",
                   "HOME": str(cwd), "LC_ALL": "C.UTF-8", **(env or {})}
    if toolchain.root:
        full = [*root_prefix(toolchain.root, cwd), "--clearenv",
                *[x for key, value in environment.items() for x in ("--setenv", key, value)], "--", *full]
    try:
        return run_command(full, cwd=cwd, env=environment, timeout=timeout, cpu_s=cpu_s)
    except OSError as exc:
        return ProcResult(full, 127, "", str(exc), 0.0)


def no_answer(result: ProcResult) -> str:
    """Why a harness command of :func:`run_in` gave no answer in time: starved (its budget unspent: the machine's), its
    CPU budget spent, or its wall limit."""
    budget = result.extra.get("cpu_budget_s")
    return result.starved or (f"its {budget:g} s CPU budget spent" if budget is not None else "its wall limit reached")


#: CPU seconds a question to the toolchain (``coqc -where``) may use; the wall clock is only a backstop
#: ``CPU_WALL_FACTOR`` times longer, so a loaded machine still gets its answer
PROBE_CPU_SECONDS = 10.0


def coqc_answer(coqc: str, flag: str) -> str:
    """``coqc <flag>``'s answer (``-where``, ``--version``), asked under :data:`PROBE_CPU_SECONDS` of CPU. A run that
    gives none (timed out, killed, failed, empty) raises :class:`ToolchainProbeFailed`, never an empty answer read as
    "nothing installed" or used as a cache key."""
    result = run_command([coqc, flag], cwd=tempfile.gettempdir(), timeout=PROBE_CPU_SECONDS * CPU_WALL_FACTOR,
                         cpu_s=PROBE_CPU_SECONDS)
    answer = result.stdout.strip()
    if result.returncode != 0 or result.timed_out or not answer:
        why = result.starved or result.accident or f"exit {result.returncode}"
        raise ToolchainProbeFailed(f"`{coqc} {flag}` gave no answer ({why}): "
                                   f"{(result.stdout + result.stderr).strip()[-300:]}")
    return answer


@functools.cache
def coqc_where(coqc: str) -> str:
    """``coqc -where`` (its standard library's directory), once per process (:func:`coqc_answer`); an exception is
    not cached, so the next call asks again."""
    return coqc_answer(coqc, "-where")


#: Wall seconds :func:`probe` waits for ``coqc --version`` at most: the backstop of its :data:`PROBE_CPU_SECONDS` CPU
#: budget (bwrap's process tree is read like any other)
VERSION_WALL_SECONDS = PROBE_CPU_SECONDS * CPU_WALL_FACTOR
#: :func:`probe`'s answers, once per process; a probe that timed out is not kept (the next call asks again)
_PROBED: dict[Toolchain, tuple[str, VersionInfo | None]] = {}
#: the start of :func:`probe`'s line when ``coqc --version`` gave no answer in time (the machine's, not the toolchain's)
PROBE_TIMED_OUT = "coqc --version timed out"


def probe(toolchain: Toolchain) -> tuple[str, VersionInfo | None]:
    """``coqc --version`` of the toolchain (one line) and its version knowledge; (why, None) when it does not run,
    or (:data:`PROBE_TIMED_OUT` …, None) when it did not answer in time: that answer is not kept for the process."""
    if toolchain in _PROBED:
        return _PROBED[toolchain]
    result = run_in(toolchain, ["coqc", "--version"], Path(tempfile.gettempdir()), timeout=VERSION_WALL_SECONDS,
                    cpu_s=PROBE_CPU_SECONDS)
    if result.timed_out:
        return f"{PROBE_TIMED_OUT}: {no_answer(result)} {result.stderr.strip()[-300:]}".rstrip(), None
    line = " ".join(result.stdout.split())
    found = parse_version(line) if result.returncode == 0 else None
    answer = (line, version_info(found)) if found else ((result.stdout + result.stderr).strip()[-300:], None)
    _PROBED[toolchain] = answer
    return answer


def label(toolchain: Toolchain) -> str:
    """The short name recorded with every verdict: ``coq-8.20.1`` plus where it runs from (``root:DIR``)."""
    line, info = probe(toolchain)
    found = re.search(r"version (\S+)", line)
    name = f"{'rocq' if 'Rocq' in line else 'coq'}-{found.group(1)}" if found and info else "unknown"
    where = f"root:{toolchain.root}" if toolchain.root else (toolchain.bin or "PATH")
    return f"{name} ({where})"


def check_toolchain(path: str) -> str:
    """"" when ``path`` is a toolchain whose ``coqc --version`` runs, else what is wrong (the option's check)."""
    found = resolve(path)
    if isinstance(found, str):
        return found
    line, info = probe(found)
    return "" if info else f"its coqc does not run (coqc --version: {line or 'no output'})"


# -- the toolchain's commands in an agent's shell ----------------------------------------------------------

#: The commands an agent's shell gets from the verifier's toolchain (first on its PATH).
SHELL_TOOLS = ("coqc", "coqchk", "coqtop", "coqdep", "rocq")


def _root_loader(root: str) -> tuple[str, str]:
    """The root filesystem's own dynamic loader and library directories (its binaries need its glibc)."""
    loaders = sorted(Path(root, "usr").glob("lib*/ld-linux*.so.*")) + sorted(Path(root, "usr", "lib").glob(
        "*-linux-gnu*/ld-linux*.so.*"))
    libs = [str(d) for d in sorted(Path(root, "usr", "lib").glob("*-linux-gnu*")) if d.is_dir()]
    return (str(loaders[0]) if loaders else ""), ":".join([*libs, f"{root}/usr/lib"])


def shell_tools(toolchain: Toolchain, coqlib: Path | None, env: dict[str, str], directory: Path) -> str:
    """Write into ``directory`` (to go first on an agent's PATH) the toolchain's commands, so the actor compiles
    with the Coq the verifier uses; return "" or why they cannot run there (then each is a script saying so and
    pointing at the item's ``compile`` tool, never the host's other ``coqc``).

    An installation (``bin/``) is run as it is. A root filesystem's binaries need its own glibc, and the agent's
    sandbox keeps the host's ``/usr`` (its CLI needs it) and cannot nest a namespace: they run through the root's
    loader with its libraries and its library path in the environment (``COQLIB``/``ROCQLIB``, ``OCAMLPATH``, ``OCAMLFIND_CONF``). That
    fails where the binary starts another of the root's programs itself (Rocq 9.2's ``coqc`` starts ``rocqworker``
    under the host's loader): the probe compile says so."""
    directory.mkdir(parents=True, exist_ok=True)
    if not toolchain.root and not toolchain.bin:
        return ""
    line, info = probe(toolchain)
    names = [n for n in SHELL_TOOLS if toolchain.has(n)]
    scripts: dict[str, str] = {}
    if toolchain.bin:
        scripts = {n: f'exec {shlex.quote(os.path.join(toolchain.bin, n))} "$@"' for n in names}
    else:
        loader, libs = _root_loader(toolchain.root)
        variables = {**env, ("ROCQLIB" if info and info.version >= (9, 0) else "COQLIB"): str(coqlib or ""),
                     "OCAMLPATH": str(coqlib.parent) if coqlib else "",
                     "OCAMLFIND_CONF": f"{toolchain.root}/etc/ocamlfind.conf"}  # plugins: findlib's, first OCAMLPATH
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
        scripts = {n: f'export {exports}\nexec {shlex.quote(loader)} --library-path {shlex.quote(libs)} '
                      f'{shlex.quote(toolchain.root + "/usr/bin/" + n)} "$@"' for n in names}
    for name, body in scripts.items():
        _write_script(directory / name, f"# {name} of {label(toolchain)} ({line}): docs/toolchains.md\n{body}\n")
    problem = ""
    with tempfile.TemporaryDirectory(prefix="forall-shell-probe-") as scratch:
        Path(scratch, "Probe.v").write_text("Definition forall_shell_probe := 0.\n", encoding="utf-8")
        result = subprocess.run([str(directory / "coqc"), "-q", "Probe.v"], cwd=scratch, capture_output=True,
                                text=True, timeout=120, check=False, env={"PATH": "/usr/bin:/bin", "HOME": scratch})
        if result.returncode != 0 or not Path(scratch, "Probe.vo").is_file():
            problem = " ".join((result.stdout + result.stderr).split())[:300] or f"exit {result.returncode}"
    if problem:
        why = (f"the verifier's toolchain {label(toolchain)} cannot run in this shell ({problem}); compile with the "
               "item's compile tool, which runs it")
        for name in SHELL_TOOLS:
            _write_script(directory / name, f"echo {shlex.quote(name + ': ' + why)} >&2\nexit 127\n")
    return problem


def _write_script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)


# -- root filesystems from Debian's packages ----------------------------------------------------------------


def default_mirror() -> str:
    """The first non-security ``URIs:`` of the machine's Debian sources (else deb.debian.org)."""
    try:
        for line in DEBIAN_SOURCES.read_text(encoding="utf-8").splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    except OSError:
        pass
    return "http://deb.debian.org/debian"


def stamp_key(suite: str, packages: Sequence[str], mirror: str) -> str:
    return hashlib.sha256("\0".join([suite, mirror, *sorted(packages), *APT_OPTIONS]).encode()).hexdigest()[:24]


def read_stamp(directory: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((directory / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


#: Runs inside mmdebstrap (``$1`` is the new root): each wanted package is tried alone with ``apt-get -s``; the
#: installable ones are installed together and apt's reason for each other one is kept in the stamp.
_HOOK = r"""set -u
root="$1"; shift
ok=""
: > "$root/.forall-missing"
for pkg in "$@"; do
  if out=$(chroot "$root" apt-get install -s -q "$pkg" 2>&1); then ok="$ok $pkg"
  else printf '%s\t%s\n' "$pkg" "$(printf '%s' "$out" | grep -E 'Depends|Unable|not installable|broken' | tr '\n' ' ')" >> "$root/.forall-missing"
  fi
done
[ -z "$ok" ] || chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $ok
"""


def build_root(suite: str, directory: Path, mirror: str = "", packages: Sequence[str] = ROOT_PACKAGES,
               log: Callable[[str], object] = print) -> dict[str, Any]:
    """Build (or reuse) a root filesystem of ``suite`` with ``packages`` at ``directory``; return its stamp.

    Idempotent: a directory whose stamp names the same suite, mirror and package list is returned at once.
    ``coq`` and ``python3-minimal`` must install; each other package is installed when apt can install it on
    ``suite`` today, else recorded with apt's reason in the stamp's ``missing``."""
    mirror = mirror or default_mirror()
    key = stamp_key(suite, packages, mirror)
    stamp = read_stamp(directory)
    if stamp and stamp.get("key") == key and (directory / "usr" / "bin" / "coqc").is_file():
        return stamp
    if shutil.which("mmdebstrap") is None:
        raise RuntimeError("mmdebstrap is not installed (apt-get install -y mmdebstrap)")
    base = [pkg for pkg in packages if pkg in ("coq", "python3-minimal")]
    optional = [pkg for pkg in packages if pkg not in base]
    directory.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix=f".{directory.name}.build-", dir=directory.parent))
    scratch.rmdir()  # mmdebstrap wants a new or empty directory
    hook = f"sh -c {shlex.quote(_HOOK)} hook \"$1\" {' '.join(shlex.quote(p) for p in optional)}"
    argv = ["mmdebstrap", "--variant=minbase", f"--include={','.join(base)}",
            *[f"--aptopt={opt}" for opt in APT_OPTIONS], f"--customize-hook={hook}", suite, str(scratch), mirror]
    log(f"toolchain: {' '.join(argv)}")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"mmdebstrap failed ({result.returncode}): {(result.stdout + result.stderr).strip()[-2000:]}")
    missing = {}
    for line in (scratch / ".forall-missing").read_text(encoding="utf-8").splitlines():
        pkg, _, why = line.partition("\t")
        missing[pkg] = " ".join(why.split())
    (scratch / ".forall-missing").unlink()
    versions = subprocess.run(["chroot", str(scratch), "dpkg-query", "-W", "-f", "${Package} ${Version}\n",
                               *[p for p in packages if p not in missing]], capture_output=True, text=True,
                              check=False).stdout
    stamp = {"key": key, "suite": suite, "mirror": mirror, "packages": sorted(packages),
             "installed": versions.splitlines(), "missing": missing,
             "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "build_seconds": round(time.monotonic() - started, 1)}
    (scratch / STAMP).write_text(json.dumps(stamp, indent=1), encoding="utf-8")
    if directory.exists():
        old = directory.with_name(f".{directory.name}.old-{os.getpid()}")
        directory.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    scratch.rename(directory)
    return stamp


def compiles_here(toolchain: Toolchain, files: Sequence[Path], jobs: int = 2, timeout: float = 300,
                  progress: Callable[[str], None] | None = None) -> list[tuple[str, bool, str]]:
    """Compile each problem file (the benchmark's own, harness input) with the toolchain's ``coqc`` and its version's
    flags, each in a scratch copy: ``(name, compiled, first error line)`` per file, in order."""
    from concurrent.futures import ThreadPoolExecutor

    info = probe(toolchain)[1]
    if info is None:
        raise RuntimeError(f"{toolchain.spec or 'coqc on PATH'} does not run: {probe(toolchain)[0]}")

    def one(path: Path) -> tuple[str, bool, str]:
        with tempfile.TemporaryDirectory(prefix="forall-compiles-") as scratch:
            shutil.copyfile(path, Path(scratch) / path.name)
            result = run_in(toolchain, ["coqc", "-q", *info.compile_flags, path.name], Path(scratch), timeout=timeout)
            output = (result.stdout + result.stderr).strip()
            lines = output.splitlines()
            at = next((i for i, line in enumerate(lines) if line.startswith(("Error", "Anomaly"))), None)
            error = " ".join(" ".join(lines[at:at + 2]).split())[:200] if at is not None else output[-200:]
            error = "" if result.returncode == 0 else error
            if progress is not None:  # a long run (all 412) keeps what it measured if it is stopped
                progress(f"{path.stem}\t{'ok' if result.returncode == 0 else 'FAIL'}\t{error}")
            return path.stem, result.returncode == 0, error

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, files))


def add_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``forall toolchain build SUITE DIR`` and ``forall toolchain show SPEC``."""
    parser = subparsers.add_parser("toolchain", help="Build or inspect a prover toolchain",
                                   description="Build a root filesystem with a Rocq toolchain from Debian's packages "
                                               "(idempotent: a second call with the same package list returns at once), "
                                               "or show which version a toolchain is.")
    sub = parser.add_subparsers(dest="action", required=True)
    build = sub.add_parser("build", help="Build a root filesystem (mmdebstrap; needs root)")
    build.add_argument("suite", choices=SUITES)
    build.add_argument("directory", type=Path)
    build.add_argument("--mirror", default="", help=f"Debian mirror (default: the URIs of {DEBIAN_SOURCES})")
    show = sub.add_parser("show", help="Resolve a --forall-rocq-toolchain value and print its version")
    show.add_argument("spec", nargs="?", default="")
    count = sub.add_parser("compiles", help="Count the PutnamBench Coq problems that compile with a toolchain")
    count.add_argument("spec", nargs="?", default="", help="The toolchain (default: coqc on PATH)")
    count.add_argument("--putnam-root", type=Path, default=Path(os.environ.get("PUTNAMBENCH_ROOT", "PutnamBench")))
    count.add_argument("--every", type=int, default=1, metavar="K",
                       help="A bounded sample: every K-th problem in name order (default: all)")
    count.add_argument("--jobs", type=int, default=2)
    count.add_argument("--json", action="store_true", help="Also list every problem's result")
    parser.set_defaults(func=_cli_main)


def _cli_main(args: argparse.Namespace) -> int:
    if args.action == "compiles":
        return _compiles_main(args)
    if args.action == "show":
        found = resolve(args.spec)
        if isinstance(found, str):
            print(f"forall toolchain: {found}", file=sys.stderr)
            return 2
        line, info = probe(found)
        if info is None:
            print(f"forall toolchain: {args.spec or 'coqc on PATH'} does not run: {line}", file=sys.stderr)
            return 2
        print(json.dumps({"toolchain": label(found), "version": line, "stdlib_prefix": info.stdlib_prefix,
                          "compile_flags": list(info.compile_flags), "judge_compat": info.judge_compat}))
        return 0
    try:
        stamp = build_root(args.suite, args.directory.absolute(), args.mirror,
                           log=lambda s: print(s, file=sys.stderr))
    except (RuntimeError, OSError) as exc:
        print(f"forall toolchain build: {exc}", file=sys.stderr)
        return 2
    found = resolve(str(args.directory.absolute()))
    line = probe(found)[0] if isinstance(found, Toolchain) else found
    print(json.dumps({"directory": str(args.directory.absolute()), "suite": stamp["suite"], "coqc": line,
                      "missing": stamp["missing"]}, indent=1))
    return 0


def _compiles_main(args: argparse.Namespace) -> int:
    """``forall toolchain compiles``: PutnamBench's "compiles here" count for one toolchain (docs/toolchains.md)."""
    found = resolve(args.spec)
    source = args.putnam_root / "coq" / "src"
    if isinstance(found, str) or not source.is_dir() or args.every < 1:
        why = found if isinstance(found, str) else ("--every must be at least 1" if args.every < 1 else
                                                    f"--putnam-root: no coq/src under {args.putnam_root}")
        print(f"forall toolchain compiles: {why}", file=sys.stderr)
        return 2
    problems = sorted(source.glob("*.v"))
    files = problems[::args.every]
    started = time.monotonic()
    try:
        results = compiles_here(found, files, args.jobs,
                                progress=lambda line: print(line, file=sys.stderr, flush=True))
    except RuntimeError as exc:
        print(f"forall toolchain compiles: {exc}", file=sys.stderr)
        return 2
    failed = [(name, error) for name, ok, error in results if not ok]
    print(json.dumps({"toolchain": label(found), "problems": len(problems), "sampled": len(files),
                      "every": args.every, "compiled": len(files) - len(failed),
                      "seconds": round(time.monotonic() - started, 1),
                      "failed": dict(failed) if args.json or len(failed) <= 20 else sorted(dict(failed))}, indent=1))
    return 0
