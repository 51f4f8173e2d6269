"""CI gating (issue 13, items 1-3): the verdict cache, the regression baseline and gate, shards and merge,
remote xdist workers. The fake suite covers the plugin behaviour; real coqc covers the cache key's
environment part and the gate on real proofs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml, Properties

from conftest import EXAMPLES, REPO, require_tool
from pytest_forall.core import cache as vcache
from pytest_forall.core import workspace as ws
from pytest_forall.core.gating import change, parse_shard, shard_of, task_key
from pytest_forall.core.model import ACCEPT, INFRA, REJECT, Layer, Task, Verdict
from pytest_forall.core.prover import AxiomAudit, CompileResult

BASE = ["-p", "no:cacheprovider", "--forall-sandbox=none"]
PROOFS = Path(__file__).parent / "data" / "proofs"

# The fake suite's prover, with an environment fingerprint (from FAKE_VERSION) and a log of every compile.
COUNTING_CONFTEST = (EXAMPLES / "fake_conftest.py").read_text() + '''

import os as _os

def _fingerprint(self, task):
    return {"version": _os.environ.get("FAKE_VERSION", "fake 1"), "libraries": "fakelib"}

_plain_compile = FakeProver.compile

def _logged_compile(self, task, workspace, candidate, timeout):
    with open(_os.environ["FAKE_COMPILE_LOG"], "a") as handle:
        handle.write(task.task_id + "\\n")
    return _plain_compile(self, task, workspace, candidate, timeout)

_plain_template = FakeProver.check_template

def _logged_template(self, task, workspace, timeout):
    with open(_os.environ["FAKE_COMPILE_LOG"], "a") as handle:
        handle.write("template:" + task.task_id + "\\n")
    return _plain_template(self, task, workspace, timeout)

FakeProver.fingerprint = _fingerprint
FakeProver.compile = _logged_compile
FakeProver.check_template = _logged_template
'''


# -- the cache, on its own ----------------------------------------------------------------------------

class CountingProver:
    """A prover whose verdict is decided by the candidate text; counts compiles."""

    name = "countprover"
    ext = "txt"

    def __init__(self, version: str = "v1", libraries: str = "lib1") -> None:
        self.version, self.libraries = version, libraries
        self.calls: list[str] = []  # not a plain setting: it is no part of the cache key

    @property
    def compiles(self) -> int:
        return len(self.calls)

    def fingerprint(self, task: Task) -> dict[str, str]:
        return {"version": self.version, "libraries": self.libraries}

    def probe(self, workspace: Path) -> str:
        return ""

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        return [Layer("syntax_screen", True)]

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        return CompileResult(ok="BROKEN" not in task.template, infra="template broken" if "BROKEN" in task.template
                             else "")

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        from pytest_forall.core.model import sha256_bytes

        self.calls.append(task.task_id)
        ok = "BAD" not in candidate.read_text()
        return CompileResult(ok=ok, digest=sha256_bytes(candidate.read_bytes()),
                             messages=[] if ok else [{"severity": "error", "data": "bad proof"}])

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        return AxiomAudit(ok=True, strict_ok=True, rules_ok=True)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        return Layer("independent_check", True)


def _task(template: str = "GOAL\n") -> Task:
    return Task(task_id="t1", suite="s", track="x", prover="countprover", source_path="/nowhere", template=template,
                theorem_name="t1")


def test_a_hit_returns_the_stored_verdict_and_evidence_without_running_the_prover(tmp_path: Path) -> None:
    cache, prover = vcache.VerdictCache(tmp_path / "c", "readwrite"), CountingProver()
    first, hit1 = vcache.verify_cached(cache, _task(), prover, b"proof\n")
    second, hit2 = vcache.verify_cached(cache, _task(), prover, b"proof\n")
    assert (hit1, hit2) == (False, True) and prover.compiles == 1
    assert first.verdict == ACCEPT and second.to_wire() == first.to_wire()  # layers and evidence included
    rejected, _ = vcache.verify_cached(cache, _task(), prover, b"BAD\n")
    again, hit = vcache.verify_cached(cache, _task(), prover, b"BAD\n")
    assert rejected.verdict == REJECT and hit and again.to_wire() == rejected.to_wire() and prover.compiles == 2


def test_a_stored_verdict_comes_back_with_every_field() -> None:
    """Whatever a verdict carries on the wire (layers, evidence, and fields added later) survives the cache."""
    layers = (Layer("elaboration", True, "", {"output": "ok", "nested": {"a": [1, 2]}}), Layer("axiom_audit", True),
              Layer("independent_check", None, "not judged"))
    verdict = Verdict(ACCEPT, True, "d" * 64, layers, ("Coq.Logic.Classical_Prop.classic",), 1)
    assert vcache.verdict_from_wire(json.loads(json.dumps(verdict.to_wire()))).to_wire() == verdict.to_wire()


def test_any_key_component_changing_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = vcache.VerdictCache(tmp_path / "c", "readwrite")
    vcache.verify_cached(cache, _task(), CountingProver(), b"proof\n")

    def compiles(prover: CountingProver, task: Task | None = None, data: bytes = b"proof\n", **kw: object) -> int:
        vcache.verify_cached(cache, task or _task(), prover, data, **kw)  # type: ignore[arg-type]
        return prover.compiles

    assert compiles(CountingProver()) == 0  # unchanged: a hit
    assert compiles(CountingProver(version="v2")) == 1
    assert compiles(CountingProver(libraries="lib2")) == 1
    assert compiles(CountingProver(), task=_task("GOAL'\n")) == 1
    assert compiles(CountingProver(), data=b"proof \n") == 1
    assert compiles(CountingProver(), timeout=10.0) == 1
    assert compiles(CountingProver(), policy={"prover_sandboxed": True}) == 1
    stricter = CountingProver()
    stricter.checker_timeout = 5.0  # type: ignore[attr-defined]  # any plain setting of the backend
    assert compiles(stricter) == 1
    monkeypatch.setattr(vcache, "verifier_version", lambda prover: "another verifier")
    assert compiles(CountingProver()) == 1


def test_corrupt_foreign_and_inconsistent_entries_are_misses_then_rebuilt(tmp_path: Path) -> None:
    cache, prover = vcache.VerdictCache(tmp_path / "c", "readwrite"), CountingProver()
    vcache.verify_cached(cache, _task(), prover, b"BAD\n")
    [entry] = (tmp_path / "c").glob("*/*.json")
    good = entry.read_text()
    stored = json.loads(good)
    body = json.loads(stored["body"])
    forged = dict(body, value=dict(body["value"], verdict=ACCEPT, layers=[]))  # flip the reject to accept
    cases = {
        "truncated": good[: len(good) // 2],
        "not json": "\x00\x01garbage",
        "forged accept, old mac": json.dumps({"body": json.dumps(forged, sort_keys=True), "mac": stored["mac"]}),
        "foreign key": json.dumps({"body": json.dumps(forged, sort_keys=True), "mac": "0" * 64}),
    }
    for name, text in cases.items():
        entry.write_text(text)
        verdict, hit = vcache.verify_cached(cache, _task(), prover, b"BAD\n")
        assert not hit and verdict.verdict == REJECT, name
        assert json.loads(entry.read_text())["mac"] == stored["mac"], f"{name}: entry rebuilt"
    # a correctly signed entry whose verdict disagrees with its own layers is not trusted either
    inconsistent = json.dumps(forged, sort_keys=True)
    entry.write_text(json.dumps({"body": inconsistent, "mac": cache._mac(inconsistent)}))
    verdict, hit = vcache.verify_cached(cache, _task(), prover, b"BAD\n")
    assert not hit and verdict.verdict == REJECT
    # an entry copied from another cache (another HMAC key) is a miss
    other = vcache.VerdictCache(tmp_path / "other", "readwrite")
    vcache.verify_cached(other, _task(), CountingProver(), b"BAD\n")
    [foreign] = (tmp_path / "other").glob("*/*.json")
    shutil.copy(foreign, entry)
    assert vcache.verify_cached(cache, _task(), prover, b"BAD\n")[1] is False


def test_infra_is_never_stored_and_modes_are_honoured(tmp_path: Path) -> None:
    prover = CountingProver()
    cache = vcache.VerdictCache(tmp_path / "c", "readwrite")
    verdict, _ = vcache.verify_cached(cache, _task("BROKEN\n"), prover, b"proof\n")
    assert verdict.verdict == INFRA and not list((tmp_path / "c").glob("*/*.json"))
    read_only = vcache.VerdictCache(tmp_path / "r", "read")
    vcache.verify_cached(read_only, _task(), prover, b"proof\n")
    assert not list((tmp_path / "r").glob("*/*.json"))
    vcache.verify_cached(cache, _task(), prover, b"proof\n")
    assert vcache.verify_cached(vcache.VerdictCache(tmp_path / "c", "read"), _task(), prover, b"proof\n")[1]
    assert not vcache.verify_cached(vcache.VerdictCache(tmp_path / "c", "off"), _task(), prover, b"proof\n")[1]

    class Unnamed(CountingProver):
        fingerprint = None  # type: ignore[assignment]

    unnamed = Unnamed()
    for _ in range(2):
        assert vcache.verify_cached(cache, _task(), unnamed, b"other\n")[1] is False
    assert unnamed.compiles == 2  # an environment that cannot be named is never reused
    with pytest.raises(ValueError, match="not one of"):
        vcache.VerdictCache(tmp_path, "sometimes")


def test_entries_shared_by_parallel_writers_stay_valid(tmp_path: Path) -> None:
    """Several processes (as xdist workers) writing the same entries under the lock leave valid entries."""
    script = (f"import sys; sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(REPO)!r}]\n"
              "from pathlib import Path\nfrom test_gating import CountingProver, _task\n"
              "from pytest_forall.core import cache as c\n"
              f"cache = c.VerdictCache(Path({str(tmp_path / 'c')!r}), 'readwrite')\n"
              "for i in range(30):\n    c.verify_cached(cache, _task(), CountingProver(), f'p{i % 5}'.encode())\n")
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    cache = vcache.VerdictCache(tmp_path / "c", "read")
    prover = CountingProver()
    assert all(vcache.verify_cached(cache, _task(), prover, f"p{i}".encode())[1] for i in range(5))
    assert prover.compiles == 0 and len(list((tmp_path / "c").glob("*/*.json"))) == 5


# -- the cache in a run ---------------------------------------------------------------------------------

@pytest.fixture
def counting_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(COUNTING_CONFTEST)
    pytester.makefile(".forall.toml", suite=(EXAMPLES / "fake_suite.toml").read_text())
    monkeypatch.setenv("FAKE_COMPILE_LOG", str(pytester.path / "compiles.log"))
    return pytester


def _rows(pytester: pytest.Pytester, run_id: str) -> dict[str, dict]:
    path = pytester.path / "reports" / run_id / "results.jsonl"
    return {json.loads(line)["task_id"]: json.loads(line) for line in path.read_text().splitlines()}


def _junit(path: Path) -> dict[str, dict[str, str]]:
    return {case.name: {p.name: p.value for p in case.child(Properties)}
            for suite in JUnitXml.fromfile(str(path)) for case in suite}


def _log(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "compiles.log"
    return log.read_text().split() if log.exists() else []


def _compiles(pytester: pytest.Pytester) -> list[str]:
    return [line for line in _log(pytester) if not line.startswith("template:")]


def _template_checks(pytester: pytest.Pytester) -> int:
    return sum(1 for line in _log(pytester) if line.startswith("template:"))


def test_a_warm_run_serves_verdicts_from_the_cache_and_says_so(counting_suite: pytest.Pytester) -> None:
    select = ["-k", "t_strict or t_rules or t_failed", "--forall-frontend=fake"]
    cold = counting_suite.runpytest(*BASE, *select, "--forall-run-id=cold", "--junitxml=cold.xml")
    cold_compiles, cold_templates = len(_compiles(counting_suite)), _template_checks(counting_suite)
    warm = counting_suite.runpytest(*BASE, *select, "--forall-run-id=warm", "--junitxml=warm.xml")
    assert cold.ret == warm.ret == 1
    assert len(_compiles(counting_suite)) == cold_compiles  # nothing compiled again
    assert _template_checks(counting_suite) == cold_templates  # the templates are known to compile here
    before, after = _rows(counting_suite, "cold"), _rows(counting_suite, "warm")
    # the fake actor resubmits the same failing bytes every round: judged once, then served from the cache
    assert _compiles(counting_suite).count("t_failed") == 1 and before["t_failed"]["cached"] is True
    for task in ("t_strict", "t_rules", "t_failed"):
        assert after[task]["cached"] is True and (task == "t_failed" or before[task]["cached"] is False), task
        assert (after[task]["outcome"], after[task]["digest"]) == (before[task]["outcome"], before[task]["digest"])
    junit = _junit(counting_suite.path / "warm.xml")
    assert {props["forall.cached"] for props in junit.values()} == {"true"}
    assert _junit(counting_suite.path / "cold.xml")["t_strict[fake]"]["forall.cached"] == "false"
    # the environment changed: every verdict is judged again
    os.environ["FAKE_VERSION"] = "fake 2"
    try:
        counting_suite.runpytest(*BASE, *select, "--forall-run-id=bumped")
    finally:
        del os.environ["FAKE_VERSION"]
    assert len(_compiles(counting_suite)) == 2 * cold_compiles == 6
    assert _template_checks(counting_suite) > cold_templates  # a new environment: the templates are checked again
    assert not any(r["cached"] for t, r in _rows(counting_suite, "bumped").items() if t != "t_failed")
    # off: judged again, nothing read
    counting_suite.runpytest(*BASE, *select, "--forall-run-id=off", "--forall-cache=off")
    assert not any(r["cached"] for r in _rows(counting_suite, "off").values())
    assert len(_compiles(counting_suite)) == 6 + 1 + 1 + 8  # t_failed's eight rounds each compiled


def test_cache_option_errors_name_the_option(counting_suite: pytest.Pytester) -> None:
    result = counting_suite.runpytest(*BASE, "--forall-cache=sometimes")
    assert result.ret == 4 and "--forall-cache" in result.stderr.str() + result.stdout.str()
    counting_suite.makeini("[pytest]\nforall_cache = often\n")
    result = counting_suite.runpytest(*BASE)
    assert result.ret == 4 and "forall_cache" in result.stderr.str() + result.stdout.str()
    counting_suite.makeini("[pytest]\n")
    inside = counting_suite.runpytest(*BASE, "--forall-run-id=r", "--forall-cache-dir=reports/r/ws/cache")
    assert inside.ret == 4 and "workspace" in inside.stderr.str() + inside.stdout.str()


# -- regression baseline and gate -------------------------------------------------------------------------

REPLAY_SUITE = 'adapter = "fake"\n[tasks]\nt_a = "STRICT"\nt_b = "STRICT"\nt_c = "STRICT"\nt_open = "STRICT"\n'


@pytest.fixture
def store_suite(counting_suite: pytest.Pytester) -> pytest.Pytester:
    counting_suite.makefile(".forall.toml", suite=REPLAY_SUITE)
    store = counting_suite.path / "store"
    store.mkdir()
    for task in ("t_a", "t_b", "t_c"):
        (store / f"{task}.txt").write_text("a proof\n")
    (store / "t_open.txt").write_text("FAIL: a known-open problem\n")
    return counting_suite


def _replay(pytester: pytest.Pytester, run_id: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={pytester.path / 'store'}",
                              f"--forall-run-id={run_id}", *extra)


def test_one_broken_proof_is_exactly_one_regression_and_fails_the_gate(store_suite: pytest.Pytester) -> None:
    assert _replay(store_suite, "base").ret == 1  # t_open fails: without the gate the run fails
    (store_suite.path / "store" / "t_b.txt").write_text("FAIL: broken\n")
    gated = _replay(store_suite, "now", "--forall-baseline=reports/base", "--forall-gate=regressions",
                    "--junitxml=now.xml")
    rows = _rows(store_suite, "now")
    assert {t: r["change"] for t, r in rows.items()} == {"t_a": "same", "t_b": "regressed", "t_c": "same",
                                                         "t_open": "same"}
    assert gated.ret == 1
    out = gated.stdout.str()
    summary = out[out.index("forall summary"):]
    assert summary.index("REGRESSED") < summary.index("strict,")  # regressions come first
    assert "t_b" in summary.splitlines()[1] and "proof changed" in summary.splitlines()[1]
    assert _junit(store_suite.path / "now.xml")["t_b[fake]"]["forall.change"] == "regressed"
    # the same run against a results.jsonl, with the proof restored: the known-open failure does not fail it
    (store_suite.path / "store" / "t_b.txt").write_text("a proof\n")
    fixed = _replay(store_suite, "again", "--forall-baseline=reports/base/results.jsonl", "--forall-gate=regressions")
    assert fixed.ret == 0, fixed.stdout.str()
    assert {r["change"] for r in _rows(store_suite, "again").values()} == {"same"}
    assert rows["t_open"]["outcome"] == "failed"


def test_statement_churn_and_fixed_items_are_named(store_suite: pytest.Pytester) -> None:
    _replay(store_suite, "base")
    store_suite.makefile(".forall.toml", suite=REPLAY_SUITE.replace('t_a = "STRICT"', 't_a = "STRICT, reworded"'))
    (store_suite.path / "store" / "t_a.txt").write_text("FAIL: no longer proves it\n")
    (store_suite.path / "store" / "t_open.txt").write_text("now proved\n")
    result = _replay(store_suite, "now", "--forall-baseline=reports/base", "--forall-gate=regressions")
    rows = _rows(store_suite, "now")
    assert rows["t_a"]["change"] == "regressed" and "statement changed" in rows["t_a"]["change_cause"]
    assert rows["t_open"]["change"] == "fixed"
    assert "1 with the statement changed," in result.stdout.str() and "template churn" not in result.stdout.str()
    assert result.ret == 1


def test_baseline_and_gate_usage_errors(store_suite: pytest.Pytester) -> None:
    missing = _replay(store_suite, "x", "--forall-baseline=nowhere")
    assert missing.ret == 4 and "--forall-baseline" in missing.stderr.str() + missing.stdout.str()
    alone = _replay(store_suite, "y", "--forall-gate=regressions")
    assert alone.ret == 4 and "--forall-baseline" in alone.stderr.str() + alone.stdout.str()


def test_change_classification() -> None:
    def row(outcome: str) -> dict[str, str]:
        return {"outcome": outcome}

    assert change(row("strict"), row("failed")) == "regressed"
    assert change(row("strict"), row("rules_only")) == "regressed"
    assert change(row("rules_only"), row("strict")) == "same"
    assert change(row("failed"), row("failed")) == "same"
    assert change(row("failed"), row("strict")) == "fixed"
    assert change(None, row("strict")) == "new"
    assert change(row("infra"), row("failed")) == "new"
    assert change(row("strict"), row("infra")) == "unconfirmed"  # an infra cause is never a regression
    assert change(row("rules_only"), row("failed"), require_strict=True) == "same"


def test_a_baseline_recorded_with_the_earlier_task_digest_is_not_called_a_statement_change() -> None:
    """Rows before December 2026 name the task by ``template_digest`` (another digest of it): against such a baseline
    the cause says the digest cannot be compared, never that a statement changed which nobody touched."""
    from pytest_forall.core.gating import cause

    same = {"environment": "e", "candidate_digest": "c", "verifier": "v"}
    old = cause({**same, "template_digest": "t"}, {**same, "task_digest": "u"})
    assert "statement changed" not in old and "task_digest not recorded" in old
    assert cause({**same, "task_digest": "t"}, {**same, "task_digest": "u"}) == "statement changed"
    assert cause({**same, "task_digest": "t"}, {**same, "task_digest": "t"}) == "nothing recorded changed"


def test_real_proofs_gate_on_the_real_kernel(pytester: pytest.Pytester, putnam_root: Path, tmp_path: Path) -> None:
    """Two stored PutnamBench proofs and one problem without a proof; breaking one proof is one regression."""
    require_tool("coqc")
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\n")
    store = tmp_path / "store"
    shutil.copytree(PROOFS, store)
    select = "(putnam_2001_a1 or putnam_2008_a1 or putnam_1962_a2) and coq"

    def run(run_id: str, *extra: str) -> pytest.RunResult:
        return pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={store}",
                                  "-k", select, f"--forall-run-id={run_id}", *extra)

    assert run("base").ret == 1
    (store / "putnam_2008_a1.v").write_text((store / "putnam_2008_a1.v").read_text().replace("lra.", "ring."))
    gated = run("now", "--forall-baseline=reports/base", "--forall-gate=regressions")
    rows = _rows(pytester, "now")
    assert {t: r["change"] for t, r in rows.items()} == {
        "putnam_2001_a1": "same", "putnam_2008_a1": "regressed", "putnam_1962_a2": "same"}
    assert rows["putnam_2001_a1"]["cached"] is True and rows["putnam_2008_a1"]["cached"] is False
    assert gated.ret == 1


# -- shards and merge ----------------------------------------------------------------------------------------

def test_shard_assignment_is_stable_and_complete() -> None:
    keys = [task_key("putnam", "coq", f"putnam_{i}") for i in range(200)]
    assignment = [shard_of(k, 4) for k in keys]
    assert assignment == [shard_of(k, 4) for k in keys] and set(assignment) == {1, 2, 3, 4}
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "2", "a/b", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


MANY = 'adapter = "fake"\n[tasks]\n' + "".join(f't_{i} = "{b}"\n' for i, b in
                                              enumerate(["STRICT", "RULES", "FAIL", "INFRA", "FALSE"] * 3))


def _cases(path: Path) -> list[tuple[str, str, str, str]]:
    out = []
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            kind = case.result[0]._tag if case.result else "passed"
            props = {p.name: p.value for p in case.child(Properties)}
            out.append((case.classname, case.name, kind, props.get("forall.outcome", "")))
    return sorted(out)


def test_two_shards_merged_equal_one_run(counting_suite: pytest.Pytester) -> None:
    counting_suite.makefile(".forall.toml", suite=MANY)
    fake = "--forall-frontend=fake"
    counting_suite.runpytest(*BASE, fake, "--forall-run-id=all", "--junitxml=reports/all/junit.xml")
    shards = []
    for k in (1, 2):
        result = counting_suite.runpytest(*BASE, fake, f"--forall-shard={k}/2", f"--forall-run-id=s{k}",
                                          f"--junitxml=reports/s{k}/junit.xml")
        shards.append(set(_rows(counting_suite, f"s{k}")))
        assert "deselected" in result.stdout.str()
    assert shards[0] and shards[1] and not shards[0] & shards[1]
    from pytest_forall.cli import main

    out = counting_suite.path / "merged"
    assert main(["report", "--merge", str(counting_suite.path / "reports/s1"), str(counting_suite.path / "reports/s2"),
                 "--out", str(out)]) == 0
    assert main(["report", str(counting_suite.path / "reports/all")]) == 0
    assert _cases(out / "junit.xml") == _cases(counting_suite.path / "reports/all/junit.xml")
    merged = {json.loads(line)["nodeid"] for line in (out / "results.jsonl").read_text().splitlines()}
    assert merged == {json.loads(line)["nodeid"] for line in
                      (counting_suite.path / "reports/all/results.jsonl").read_text().splitlines()}
    merged_junit = JUnitXml.fromfile(str(out / "junit.xml"))
    single = JUnitXml.fromfile(str(counting_suite.path / "reports/all/junit.xml"))
    for attr in ("tests", "failures", "errors", "skipped"):
        assert sum(getattr(s, attr) for s in merged_junit) == sum(getattr(s, attr) for s in single), attr


def test_merge_reports_overlapping_shards_and_bad_inputs(counting_suite: pytest.Pytester, capsys:
                                                         pytest.CaptureFixture[str]) -> None:
    counting_suite.runpytest(*BASE, "--forall-frontend=fake", "--forall-run-id=a")
    from pytest_forall.cli import main

    a = str(counting_suite.path / "reports/a")
    assert main(["report", "--merge", a, a, "--out", str(counting_suite.path / "m")]) == 2
    assert "both" in capsys.readouterr().err
    assert main(["report", "--merge", a, str(counting_suite.path / "nowhere"), "--out", "m2"]) == 2
    assert "no results.jsonl" in capsys.readouterr().err


def test_shard_option_errors_name_the_option(counting_suite: pytest.Pytester) -> None:
    result = counting_suite.runpytest(*BASE, "--forall-shard=3/2")
    assert result.ret == 4 and "--forall-shard" in result.stderr.str() + result.stdout.str()


# -- remote workers -------------------------------------------------------------------------------------

SERVER = ("import sys, execnet.script.socketserver as s\n"
          "from execnet.gateway_base import get_execmodel\n"
          "s.execmodel = get_execmodel('thread')\n"
          "sock = s.bind_and_listen(('127.0.0.1', int(sys.argv[1])), s.execmodel)\n"
          "print('listening', flush=True)\n"
          "s.startserver(sock, loop=False)\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_remote_socket_workers_report_every_item_to_the_controller(counting_suite: pytest.Pytester,
                                                                    tmp_path: Path) -> None:
    """Two execnet socket servers on 127.0.0.1, each in its own directory: all items reach the controller."""
    servers, ports = [], []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    for name in ("host1", "host2"):
        (tmp_path / name).mkdir()
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], cwd=tmp_path / name, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None and "listening" in proc.stdout.readline()
        servers.append(proc)
        ports.append(port)
    try:
        tx = [arg for port in ports for arg in ("--tx", f"socket=127.0.0.1:{port}")]
        result = counting_suite.runpytest(*BASE, "--forall-frontend=fake", "-d", *tx, "--rsyncdir",
                                          str(counting_suite.path), "--forall-run-id=remote",
                                          str(counting_suite.path / "suite.forall.toml"))
    finally:
        for proc in servers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    rows = _rows(counting_suite, "remote")
    assert set(rows) == {"t_strict", "t_rules", "t_failed", "t_infra", "t_false"}, result.stdout.str()
    assert not list(tmp_path.rglob("results.jsonl"))  # workers never write the run's results
    # one secret for the whole run, the controller's: remote workers name their workspaces with it, keep no copy
    secret = (counting_suite.path / "reports" / "remote" / ".secret").read_bytes()
    assert not list(tmp_path.rglob(".secret")) and len(secret) == 32
    # (an item whose template does not compile ends before a workspace is made)
    assert rows["t_infra"]["stop"] == "template"
    assert {p.name for p in tmp_path.glob("host*/**/reports/remote/ws/*")} == {
        ws.opaque_name(secret, row["nodeid"]) for row in rows.values() if row["stop"] != "template"}
    for row in rows.values():
        where = Path(row["audit_dir"])
        assert where.is_relative_to(tmp_path) and where.is_dir()  # the audit record stays on its worker
        assert row["audit_host"] == socket.gethostname() and row["worker"].startswith("gw")
    assert "1 strict, 1 rules_only, 1 failed, 1 infra, 1 statement_false, 0 vacuous, 0 inner_vacuous  (5 items)" in result.stdout.str()


def test_ci_examples_use_only_real_options_and_commands() -> None:
    import re

    from pytest_forall.cli import build_parser
    from pytest_forall.plugin import OPTIONS

    text = (REPO / "docs" / "ci.md").read_text()
    known = {"--forall-" + option.name.replace("_", "-") for option in OPTIONS}
    used = set(re.findall(r"--forall-[a-z-]+", text))
    assert {"--forall-shard", "--forall-baseline", "--forall-gate", "--forall-cache"} <= used <= known, used - known
    merges = re.findall(r"^ *-? *(?:run: )?forall report --merge (\S+) --out (\S+)$", text, re.MULTILINE)
    assert len(merges) == 2
    for shards, out in merges:
        args = build_parser("report").parse_args(["report", "--merge", shards, "--out", out])
        assert args.merge == [shards] and args.out == out
