"""Every ``--forall-*`` option with its ini twin, resolved once into plain values, and the item's budget.

Below the rest of the pytest glue: collect, the item runner and the reporter all read settings from here.
"""

from __future__ import annotations

import math
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.agents.agent_cli import DEFAULT_MEMORY_MB
from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import Task

#: The task an item proves, on the item's stash.
TASK_KEY = pytest.StashKey[Task]()
#: The manifest's ``[budget]`` table: below markers, options and ini in precedence (a suite default).
SUITE_BUDGET_KEY = pytest.StashKey[dict[str, Any]]()


@dataclass(frozen=True)
class Option:
    name: str
    help: str
    default: str = ""
    choices: tuple[str, ...] = ()
    #: given once per value on the command line, one value per line in the ini file (a list either way)
    repeated: bool = False


#: Every setting, as ``--forall-<name>`` on the command line and ``forall_<name>`` in the ini file.
OPTIONS = (
    Option("putnam_root", "PutnamBench checkout (else PUTNAMBENCH_ROOT, else ../shared/benchmarks/PutnamBench "
           "beside the clone)"),
    Option("frontend", "Who writes proofs: portfolio, replay, claude-code, codex, opencode, or a plugin's",
           "portfolio"),
    Option("reviewer", "Reviewer frontend (default: the actor's, for coding agents; none for offline ones)"),
    Option("proofs", "Directory of stored proofs <task id>.v/.lean (replay reads it; checked at start, and its "
           "files that match no task are named in one warning; without it a Rocq project item replays the "
           "project's own proof)"),
    Option("model", "Model name passed to the agent frontend"),
    Option("effort", "Reasoning effort passed to the agent frontend"),
    Option("max_retries", "Retries of a failed provider request inside an agent CLI (default: the CLI's own)"),
    Option("provider_url", "Base URL of the model provider (self-hosted, proxied or test endpoint)"),
    Option("require", "Which passes count: any (strict or rules-only) or strict", "any", ("any", "strict")),
    Option("reports", "Directory for run reports (results.jsonl, audit records)", "reports"),
    Option("run_id", "Name of this run's report directory (default: timestamp)"),
    Option("resume", "Continue run RUN: only items without a final outcome run again; the others are "
           "reported as recorded"),
    Option("run_exists", "What a --forall-run-id naming an existing run does: refuse, continue it (as "
           "--forall-resume) or restart (the old run directory is moved aside to <id>.old-<n>)", "refuse",
           ("refuse", "continue", "restart")),
    Option("selection", "What --forall-resume and --forall-run-exists=continue select: recorded (the run's paths, -k, "
           "-m, --forall-shard/subset/project, each part not given taken from the run; a part given differently is "
           "refused) or new (this session's own, to widen or narrow the run on purpose)", "recorded",
           ("recorded", "new")),
    Option("timeout", "Seconds per prover call", "300"),
    Option("turn_timeout", "Seconds one agent turn may take before it is killed", "3600"),
    Option("stall", "Seconds without a byte from an agent CLI's event stream before the turn is killed as "
           "infra provider-unresponsive", "900"),
    Option("memory", "MiB of memory for the whole process tree of an agent session (its CLI, shells and the "
           "prover runs in them): past it the turn is the actor's failure (sandboxed sessions only)", str(DEFAULT_MEMORY_MB)),
    Option("tactic_timeout", "Prover CPU seconds per portfolio tactic where measured (else wall clock)", "5"),
    Option("tools", "Benchmark tools (start/compile/submit, review) for coding agents over MCP: mcp or none",
           "mcp", ("mcp", "none")),
    Option("retrieval_root", "Library sources the agents' lookup/search/usages/outline tools index (default: none)"),
    Option("sandbox", "Isolation for actor and prover processes: bwrap, or none (recorded in every audit record)",
           "bwrap", ("bwrap", "none")),
    Option("sandbox_ro", "Extra read-only bind PATH[:INSIDE] for every prover process in the sandbox, e.g. a "
           "toolchain outside /usr (repeatable; ini: one per line)", repeated=True),
    Option("cache_dir", "Cache for compiled templates and indexes (default: under the reports directory)"),
    Option("run_usd", "Spend cap for the whole run, shared by all workers (USD)"),
    Option("cache", "Verdict cache (docs/ci.md): off, read, or readwrite", "readwrite", ("off", "read", "readwrite")),
    Option("baseline", "Earlier run (directory or results.jsonl) to compare with: forall.change per item"),
    Option("gate", "What fails the run: none (every failure) or regressions (only against --forall-baseline)",
           "none", ("none", "regressions")),
    Option("gate_allow_removed", "A baseline item the gate lets go: removed, renamed or now admitted without failing "
           "the run (its task id or qualified name, e.g. Lib.File.old_lemma; repeatable; ini: one per line, so the "
           "list can live in the repository's pytest.ini/pyproject.toml)", repeated=True),
    Option("shard", "Run only shard K/N of the items (stable: by a hash of the task id)"),
    Option("lean_project", "Lake project used to compile Lean candidates (default: lean_env/putnam)"),
    Option("lean_repl", "A leanprover-community/repl executable built for the Lean project's toolchain: gives Lean "
           "actors the goals/try/query tools (untested on real Lean; docs/tools.md)"),
    Option("rocq_toolchain", "Rocq installation every Rocq prover process runs from: a root filesystem, an opam "
           "switch prefix or a bin/ directory (default: PATH; docs/toolchains.md)"),
    Option("project", "Any Lake or Rocq project: each sorry theorem (Lean) / every proof (Rocq) becomes an item"),
    Option("project_build", "The --forall-project's own build command, run with sh in a copy of the project (e.g. "
           "'make -j2'); its compiled files are judged (default: dune build for a dune project using coq, else "
           "coq_makefile + make from _CoqProject)"),
    Option("project_axioms", "The --forall-project's own axioms its maintainer declares as the library's foundations, "
           "as fully qualified kernel names (e.g. Lib.Base.funext; repeatable, or comma-separated; ini: one per "
           "line): a proof resting only on them and the strict list is strict. Each must be an axiom of the "
           "project's own build (else every item is infra saying so)", repeated=True),
    Option("subset", "Named task subset of a suite (VeriSoftBench: aristotle)"),
    Option("verisoftbench_root", "VeriSoftBench data: the dataset JSONL and the task repositories"),
    Option("lean_eval_root", "Lean Eval checkout (generated/<id>/ workspaces)"),
    Option("samples", "Budget: fresh actor sessions per item"),
    Option("rounds", "Budget: actor turns per session"),
    Option("compiles", "Budget: compiles per sample (verifier runs and the actor's own prover commands)"),
    Option("review_rounds", "Budget: reviews per item"),
    Option("wall", "Budget: wall seconds per item"),
    Option("usd", "Budget: spend per item (USD)"),
)
#: the frontends this package ships, named when an unknown one is asked for (a plugin's are found by name only)
BUILTIN_FRONTENDS = ("portfolio", "audit", "replay", "claude-code", "codex", "opencode")
BUDGET_OPTIONS = ("samples", "rounds", "compiles", "review_rounds", "wall", "usd")
OPTIONS_KEY = pytest.StashKey[dict[str, Any]]()
#: An agent CLI alone needs a few hundred MiB: a smaller ``--forall-memory`` is a typo, refused at configure time.
MIN_MEMORY_MB = 256



# --- options -------------------------------------------------------------------------------------

def option_value(config: pytest.Config, name: str) -> tuple[Any, str]:
    """(value, source) with CLI > ini > default; the source names where a bad value came from."""
    cli = config.getoption(f"forall_{name}")
    flag = "--forall-" + name.replace("_", "-")
    if cli not in (None, ""):
        return cli, flag
    ini = config.getini(f"forall_{name}")
    if ini not in (None, "", []):
        return ini, f"ini option forall_{name}"
    option = next(o for o in OPTIONS if o.name == name)
    return ([] if option.repeated else option.default), f"default of {flag}"


def resolved_options(config: pytest.Config) -> dict[str, Any]:
    """All settings as plain values (they cross into hooks, frontends and the protocol)."""
    if OPTIONS_KEY in config.stash:
        return config.stash[OPTIONS_KEY]
    options: dict[str, Any] = {"rootdir": str(config.rootpath)}
    for opt in OPTIONS:
        value, source = option_value(config, opt.name)
        if opt.choices and value not in opt.choices:
            raise pytest.UsageError(f"{source}: {value!r} is not one of {list(opt.choices)}")
        options[opt.name] = value
    for key in ("timeout", "tactic_timeout", "turn_timeout", "stall", "run_usd"):
        if options[key] not in (None, ""):
            options[key] = _positive(options[key], option_value(config, key)[1], zero_ok=key == "run_usd")
    memory, source = options["memory"], option_value(config, "memory")[1]
    if not str(memory).isdigit() or not MIN_MEMORY_MB <= int(memory):
        raise pytest.UsageError(f"{source}: expected a whole number of MiB >= {MIN_MEMORY_MB}, got {memory!r}")
    options["memory"] = int(memory)
    _validate_sandbox_binds(config, options)
    for name in ("project", "reports", "cache_dir"):  # typed paths: from where the user typed them (issue 32)
        value, source = option_value(config, name)
        base = Path(config.invocation_params.dir) if source.startswith("--") else config.rootpath
        if name == "project":  # kept as typed (messages name it so), with the directory it is relative to
            options["project_base"] = str(base)
        elif value not in (None, ""):
            path = Path(str(value)).expanduser()
            options[name] = str(path if path.is_absolute() else (base / path).resolve())
    if not options["cache_dir"]:
        options["cache_dir"] = str(Path(options["reports"]) / ".cache")
    _validate_gating(config, options)
    _validate_toolchains(config, options)
    if options["lean_repl"]:
        value, source = option_value(config, "lean_repl")
        base = Path(config.invocation_params.dir) if source.startswith("--") else config.rootpath
        repl = (base / Path(str(value)).expanduser()).resolve()
        if not (repl.is_file() and os.access(repl, os.X_OK)):
            raise pytest.UsageError(f"{source}: {repl} is not an executable file (the REPL's build: "
                                    ".lake/build/bin/repl)")
        options["lean_repl"] = str(repl)
    # this process's place among pytest-xdist's workers, from xdist itself (a nested run inherits the outer
    # worker's environment variables, so those would name another run's share): [index, count], [0, 1] alone
    workerinput = getattr(config, "workerinput", None)
    options["worker_share"] = [0, 1]
    if workerinput is not None and str(workerinput.get("workerid", "")).removeprefix("gw").isdigit():
        count = max(1, int(workerinput.get("workercount") or 1))
        options["worker_share"] = [int(str(workerinput["workerid"])[2:]) % count, count]
    # the project suite starts the project's build as it collects, unless nothing will run (suites/project.py)
    options["build_ahead"] = not config.option.collectonly
    config.stash[OPTIONS_KEY] = options
    return options


def settle_rootdir(config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """The rootdir (and ini file) pytest would choose knowing this plugin's options (issue 32).

    pytest picks its rootdir from the command line's paths before any plugin's option is registered, so the value
    of ``--forall-cache-dir DIR`` (space form) is taken for a test path, and an existing DIR moved the rootdir (its
    ancestors' ini file, the default reports directory, the project named relative to it) away from the project.
    Chosen again here with the options known, before any conftest is read; an ini file that this changes and that
    carries ``addopts`` (read already, from the other file) is refused rather than half applied.
    """
    try:
        from _pytest.config.findpaths import determine_setup

        known = parser.parse_known_args(list(args))
        rootpath, inipath, inicfg, *_ = determine_setup(
            inifile=known.inifilename, override_ini=known.override_ini, args=list(known.file_or_dir),
            rootdir_cmd_arg=known.rootdir or None, invocation_dir=config.invocation_params.dir)
    except (TypeError, AttributeError, ValueError, pytest.UsageError):
        return  # another pytest: its own choice stands
    if rootpath == config.rootpath and inipath == config.inipath:
        return
    moved = f"the rootdir {config.rootpath} (without the option values: {rootpath})"
    if not all(hasattr(config, name) for name in ("_rootpath", "_inipath", "_inicfg")):
        raise pytest.UsageError(f"a --forall-* option's value in the space form moved {moved}: write the option "
                                "as --forall-NAME=VALUE")
    if inipath != config.inipath and "addopts" in inicfg:
        raise pytest.UsageError(f"a --forall-* option's value in the space form moved {moved}, and {inipath}'s "
                                "addopts were not applied: write the option as --forall-NAME=VALUE")
    namespace = config.known_args_namespace
    if namespace.confcutdir == str(config.inipath.parent if config.inipath else config.rootpath):
        namespace.confcutdir = str(inipath.parent if inipath else rootpath)
    config._rootpath, config._inipath, config._inicfg = rootpath, inipath, inicfg
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)


def _validate_sandbox_binds(config: pytest.Config, options: dict[str, Any]) -> None:
    """``--forall-sandbox-ro`` as normalized ``HOST:INSIDE`` strings, what every prover backend binds (relative
    host paths: from the invocation directory on the command line, from the rootdir in the ini file)."""
    from pytest_forall.core.binds import OPTION, parse_ro_binds

    value, source = option_value(config, OPTION)
    base = Path(config.invocation_params.dir) if source.startswith("--") else config.rootpath
    try:
        options[OPTION] = parse_ro_binds(value, base)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None
    # the item's protocol moves each prover into the sandbox (its runner): no backend sandboxes itself as well
    options["sandboxed_by"] = "protocol"


def _validate_toolchains(config: pytest.Config, options: dict[str, Any]) -> None:
    """``--forall-<prover>-toolchain``: checked by its language pack once (it exists and runs), made absolute
    (relative: from the invocation directory on the command line, from the rootdir in the ini file)."""
    from pytest_forall.core.language import toolchain_problem

    for opt in OPTIONS:
        if not opt.name.endswith("_toolchain") or not options[opt.name]:
            continue
        value, source = option_value(config, opt.name)
        base = Path(config.invocation_params.dir) if source.startswith("--") else config.rootpath
        path, problem = toolchain_problem(opt.name.removesuffix("_toolchain"), str(value), base)
        if problem:
            raise pytest.UsageError(f"{source}: {problem}")
        options[opt.name] = path


def _positive(value: Any, source: str, *, zero_ok: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``zero_ok``), else a UsageError naming where it came from."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{source}: expected a number, got {value!r}") from None
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero_ok):
        raise pytest.UsageError(f"{source}: expected a finite number {'>= 0' if zero_ok else '> 0'}, got {value!r}")
    return number


def check_configuration(config: pytest.Config) -> None:
    """Everything that can be checked before collection, once, as one UsageError naming the option."""
    from pytest_forall.core.budget import resolve_budget

    options = resolved_options(config)
    try:
        resolve_budget([], [(source, {name: value}) for name in BUDGET_OPTIONS
                            for value, source in [option_value(config, name)]])
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    for name in ("frontend", "reviewer"):
        value, source = option_value(config, name)
        if name == "reviewer" and value in (None, "", "none"):
            continue
        frontend = config.hook.pytest_forall_make_frontend(name=str(value), options=options)
        if frontend is None:
            known = [n for n in BUILTIN_FRONTENDS if config.hook.pytest_forall_make_frontend(name=n, options=options)]
            raise pytest.UsageError(f"{source}: no installed frontend is called {value!r}; installed: "
                                    f"{', '.join(known)} (and any a plugin adds)")
        if name == "frontend" and getattr(frontend, "reads_proofs", False):
            _validate_proofs(config, options, str(value), source)


def _validate_proofs(config: pytest.Config, options: dict[str, Any], frontend: str, source: str) -> None:
    """A frontend that reads ``--forall-proofs`` (replay) gets a readable directory, or one error naming the option.

    A benchmark suite has no proofs of its own, so there the option is required; a ``--forall-project`` replay
    without it re-checks the project's own proofs. The path is read as the frontend reads it (from the cwd).
    """
    value, where = option_value(config, "proofs")
    if value in (None, ""):
        if options.get("project"):
            return
        raise pytest.UsageError(f"{source}={frontend} needs --forall-proofs DIR (or the ini option forall_proofs): "
                                "a directory of stored proofs <task id>.<ext>")
    path = Path(str(value)).expanduser()
    if not path.exists():
        problem = "no such directory"
    elif not path.is_dir():
        problem = "not a directory"
    elif not os.access(path, os.R_OK | os.X_OK):
        problem = "not readable"
    else:
        return
    raise pytest.UsageError(f"{where}: {value}: {problem} (the stored proofs {frontend} reads)")
def _validate_gating(config: pytest.Config, options: dict[str, Any]) -> None:
    """Shard, baseline, gate and cache location, checked once so a mistake is one error naming the option."""
    from pytest_forall.core.gating import load_baseline, parse_shard

    if options["shard"]:
        try:
            options["shard"] = "/".join(map(str, parse_shard(str(options["shard"]))))
        except ValueError as exc:
            raise pytest.UsageError(f"{option_value(config, 'shard')[1]}: {exc}") from None
    if options["baseline"] and not hasattr(config, "workerinput"):  # only the controller compares
        value, source = option_value(config, "baseline")
        base = Path(config.invocation_params.dir) if source.startswith("--") else config.rootpath
        baseline = base / Path(str(value)).expanduser()
        try:
            load_baseline(baseline)
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"{source}: {exc}") from None
        options["baseline"] = str(baseline)
    if options["gate"] == "regressions" and not options["baseline"]:
        raise pytest.UsageError(f"{option_value(config, 'gate')[1]}=regressions needs --forall-baseline "
                                "(or the ini option forall_baseline): regressions against what?")
    cache = Path(str(options["cache_dir"])).resolve()
    reports = Path(str(options["reports"])).resolve()
    if cache.is_relative_to(reports) and "ws" in cache.relative_to(reports).parts[1:2]:
        raise pytest.UsageError(f"{option_value(config, 'cache_dir')[1]}: {cache} is inside a run's workspace "
                                "directory, which actors and provers can write; the verdict cache must not be")


def item_budget(item: pytest.Item) -> Any:
    from pytest_forall.core.budget import resolve_budget

    markers = [(f"forall_budget marker on {item.nodeid}", m.kwargs) for m in item.iter_markers("forall_budget")]
    layers = []
    for name in BUDGET_OPTIONS:
        value, source = option_value(item.config, name)
        layers.append((source, {name: value}))
    layers.append((f"[budget] of {item.path}", item.stash.get(SUITE_BUDGET_KEY, {})))
    return resolve_budget(markers, layers)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)

