"""A pytest plugin for scripts/bench_project.py ``--timers``: the CPU time (``time.process_time``) spent in the
harness's per-item steps, without a profiler's overhead (cProfile inflates pure-Python work such as JSON encoding
several times). Writes one line per step (seconds, calls, ms per call) to ``$FORALL_CPU_TIMERS`` at exit."""
import atexit
import collections
import functools
import importlib
import os
import time

TOTAL = collections.Counter()
COUNT = collections.Counter()
#: each step's longest call: the first item waits for the build while the process's other threads (the judge dumps
#: parsed ahead) spend CPU, counted in that call; "without it" is the per-item figure of the items after it
LONGEST = collections.Counter()
TARGETS = [
    ("pytest_forall.core.accept", "AuditRecord.__init__"),
    ("pytest_forall.core.accept", "AuditRecord.write_json"),
    ("pytest_forall.core.accept", "AuditRecord.write_bytes"),
    ("pytest_forall.core.accept", "AuditRecord.event"),
    ("pytest_forall.core.accept", "AuditRecord.summarize"),
    ("pytest_forall.core.cache", "cached_verdict"),
    ("pytest_forall.core.cache", "task_digest"),
    ("pytest_forall.core.protocol", "ItemRun._record_submission"),
    ("pytest_forall.core.protocol", "ItemRun._accept"),
    ("pytest_forall.core.protocol", "ItemRun._result"),
    ("pytest_forall.core.protocol", "ItemRun._environment"),
    ("pytest_forall.core.protocol", "ItemRun._save"),
    ("pytest_forall.core.protocol", "ItemRun.run"),
    ("pytest_forall.core.protocol", "ItemRun.__init__"),
    ("pytest_forall.core.workspace", "prepare"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.__init__"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.change_fields"),
    ("pytest_forall.suites.project", "load_project"),
    ("pytest_forall.plugin.runner", "finish_item"),
    ("pytest_forall.plugin.report", "ForallReporter.record"),
    ("pytest_forall.core.cache", "verify_cached"),
    ("pytest_forall.core.cache", "VerdictCache.get"),
    ("pytest_forall.core.cache", "VerdictCache.put"),
    ("pytest_forall.core.cache", "explain_miss"),
    ("pytest_forall.core.cache", "remember_key"),
    ("pytest_forall.core.cache", "cache_key"),
    ("pytest_forall.core.verify", "verify_candidate"),
    ("pytest_forall.core.verify", "_verify_compiled"),
    ("pytest_forall.core.protocol", "ItemRun._write_progress"),
    ("pytest_forall.core.protocol", "ItemRun._run_sample"),
    ("pytest_forall.core.protocol", "ItemRun._judge"),
    ("pytest_forall.core.protocol", "ItemRun._judge_claims"),
    ("pytest_forall.core.protocol", "ItemRun._submit"),
    ("pytest_forall.core.protocol", "ItemRun._review_and_accept"),
    ("pytest_forall.core.protocol", "ItemRun._accepted_from_cache"),
    ("pytest_forall.core.protocol", "ItemRun._tool_counts"),
    ("pytest_forall.core.workspace", "read_task_candidate"),
    ("pytest_forall.core.audit", "derived_tasks"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.static_layers"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.check_template"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.compile"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.statement_check"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.audit_axioms"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.independent_check"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.sentence_check"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.probe"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.kernel"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.advisory_check"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._judge_candidate"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._baseline"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._build"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.fresh"),
    ("pytest_forall.agents.replay", "ReplaySession.turn"),
    ("pytest_forall.plugin.runner", "verdict_cache"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._find_baseline"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._build_project"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._file_dump"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._prefetch"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver.judged_at_once"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._build_dir"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._per_vo"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._is_own"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._installed_roots"),
    ("pytest_forall.lang.rocq.project.prover", "ProjectRocqProver._file_check"),
    ("pytest_forall.core.verify", "_verify_candidate"),
    ("pytest_forall.core.model", "verdict_json"),
]


def wrap(owner, name, label):
    original = getattr(owner, name)

    @functools.wraps(original)
    def timed(*args, **kw):
        start = time.process_time()
        try:
            return original(*args, **kw)
        finally:
            spent = time.process_time() - start
            TOTAL[label] += spent
            COUNT[label] += 1
            LONGEST[label] = max(LONGEST[label], spent)
    setattr(owner, name, timed)


def pytest_configure(config):
    for module, path in TARGETS:
        try:
            mod = importlib.import_module(module)
            parts = path.split(".")
            owner = mod if len(parts) == 1 else getattr(mod, parts[0])
            wrap(owner, parts[-1], path)
        except (ImportError, AttributeError) as exc:
            print("cannot time", module, path, exc)


def report():
    if "FORALL_CPU_TIMERS" not in os.environ:
        return
    total = time.process_time()
    lines = [f"process CPU {total:.2f} s"] + [
        f"{k}: {v:.2f} s in {COUNT[k]} calls ({1000 * v / max(1, COUNT[k]):.2f} ms; longest {1000 * LONGEST[k]:.1f} ms, "
        f"without it {1000 * (v - LONGEST[k]) / max(1, COUNT[k] - 1):.2f} ms)" for k, v in TOTAL.most_common()]
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one file per process under pytest-xdist (the controller's too)
    path = os.environ["FORALL_CPU_TIMERS"] + (f".{worker}" if worker else "")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def pytest_unconfigure(config):
    report()  # a pytest-xdist worker may end without running atexit handlers


atexit.register(report)
