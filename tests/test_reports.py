"""``forall report --html`` (checked in headless Chromium) and ``forall watch`` (against a running run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, require_tool
from pytest_forall.cli import main
from pytest_forall.cli.report_html import COLOURS, audit_links, item_dir

PROOFS = Path(__file__).parent / "data" / "proofs"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
WINDOW = (1400, 1600)


def forall(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def chromium(*args: str) -> str:
    """Run headless Chromium with a fresh profile (and no network services); its stdout."""
    binary = shutil.which("chromium")
    assert binary is not None
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Dom(HTMLParser):
    """The cells of the report's tables (by data-config / data-col / data-outcome), its <pre> and links."""

    def __init__(self) -> None:
        super().__init__()
        self.table1: dict[str, dict[str, str]] = {}
        self.outcomes: dict[str, str] = {}
        self.items: dict[str, dict[str, str]] = {}
        self.links: dict[str, list[tuple[str, str]]] = {}
        self.summary = ""
        self.tags: set[str] = set()
        self.sources: list[str] = []
        self._row: tuple[str, str] | None = None
        self._cell: tuple[str, str] | None = None
        self._href = ""
        self._text: list[str] = []
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        self.sources += [a[k] for k in ("src", "srcset", "data") if k in a]
        if tag == "tr" and "data-config" in a:
            self._row = ("config", a["data-config"])
            self.table1[a["data-config"]] = {}
        elif tag == "tr" and "data-nodeid" in a:
            key = f"{a['data-run']}/{a['data-nodeid']}"
            self._row = ("item", key)
            self.items[key], self.links[key] = {}, []
        elif tag == "td" and ("data-col" in a or "data-outcome" in a):
            self._cell = ("col", a["data-col"]) if "data-col" in a else ("outcome", a["data-outcome"])
            self._text = []
        elif tag == "a" and self._row and self._row[0] == "item":
            self._href, self._text = a.get("href", ""), []
        elif tag == "pre" and a.get("id") == "summary":
            self._in_pre, self._text = True, []

    def handle_data(self, data: str) -> None:
        self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        text = "".join(self._text).strip()
        if tag == "td" and self._cell:
            kind, key = self._cell
            if kind == "outcome":
                self.outcomes[key] = text
            elif self._row and self._row[0] == "config":
                self.table1[self._row[1]][key] = text
            elif self._row:
                self.items[self._row[1]][key] = text
            self._cell = None
        elif tag == "a" and self._href and self._row:
            self.links[self._row[1]].append((text, self._href))
            self._href = ""
        elif tag == "pre" and self._in_pre:
            self.summary, self._in_pre = "".join(self._text), False
        elif tag == "tr":
            self._row = None


def png_pixels(path: Path) -> tuple[int, int, set[tuple[int, int, int]]]:
    """Width, height and the set of RGB colours of a non-interlaced 8-bit RGB(A) PNG (Chromium's screenshots)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = {}, 8
    idat = b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IDAT":
            idat += body
        chunks.setdefault(kind, body)
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and colour_type in (2, 6)
    channels = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    previous, colours = bytearray(stride), set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        colours.update(tuple(line[i:i + 3]) for i in range(0, stride, channels))  # type: ignore[misc]
        previous = line
    return width, height, colours


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def terminal_table(out: str) -> dict[str, dict[str, str]]:
    """``forall report``'s per-configuration table, by configuration and column title."""
    lines = [line for line in out.splitlines() if line.startswith("configuration (")]
    assert len(lines) == 1, out
    block = out.splitlines()[out.splitlines().index(lines[0]):]
    head = re.split(r"\s{2,}", block[0].strip())
    rows = {}
    for line in block[1:]:
        if not line.strip() or line.startswith("html report:"):
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(head), (head, cells)
        rows[cells[0]] = dict(zip(head[1:], cells[1:], strict=True))
    return rows


@pytest.fixture
def three_runs(fake_suite: pytest.Pytester, putnam_root: Path) -> dict[str, Path]:
    """Two configurations of the fake suite (models m1, m2) and a real Rocq replay of two PutnamBench problems."""
    require_tool("coqc")
    runs = {}
    for model in ("m1", "m2"):
        fake_suite.runpytest("--forall-frontend=fake", "-p", "no:cacheprovider", f"--forall-model={model}",
                             f"--forall-run-id=fake-{model}")
        runs[model] = fake_suite.path / "reports" / f"fake-{model}"
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", fake_suite.path / "putnam.forall.toml")
    fake_suite.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\n")
    fake_suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={PROOFS}",
                         "-k", "(putnam_2001_a1 or putnam_2000_a1) and coq", "--forall-run-id=putnam")
    runs["putnam"] = fake_suite.path / "reports" / "putnam"
    return runs


def test_html_report_renders_in_chromium_with_forall_reports_numbers(
        three_runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    require_tool("chromium")
    out_html = three_runs["m1"].parent / "report.html"
    status, out, err = forall(capsys, "report", *map(str, three_runs.values()), "--html", str(out_html))
    assert status == 0, err
    dom = Dom()
    dom.feed(chromium("--dump-dom", out_html.as_uri()))

    # the Table-1 view: every cell equal to the terminal's; one row per configuration
    table = terminal_table(out)
    assert set(table) == set(dom.table1) == {"fake/m1/-/fakeprover", "fake/m2/-/fakeprover", "replay/-/-/rocq"}
    titles = {"items": "items", "rules": "rules passes", "strict": "strict passes", "independent": "independent check",
              "compiles": "compiles", "tokens_in": "tokens in", "tokens_out": "tokens out", "cost_usd": "cost USD"}
    for config, cells in dom.table1.items():
        assert {titles[k]: v for k, v in cells.items()} == table[config], config
    # ... and equal to the raw results, summed here independently
    rows = [json.loads(line) for run in three_runs.values()
            for line in (run / "results.jsonl").read_text().splitlines()]
    fake = [r for r in rows if r["model"] == "m1"]
    assert dom.table1["fake/m1/-/fakeprover"]["items"] == "5" == str(len(fake))
    assert dom.table1["fake/m1/-/fakeprover"]["rules"] == "2" and dom.table1["fake/m1/-/fakeprover"]["strict"] == "1"
    assert dom.table1["fake/m1/-/fakeprover"]["tokens_in"] == str(sum(r["tokens_in"] or 0 for r in fake)) + " (1 unknown)"
    assert dom.table1["fake/m1/-/fakeprover"]["cost_usd"].startswith(f"{sum(r['cost_usd'] or 0 for r in fake):.4f}")
    assert dom.table1["replay/-/-/rocq"] == {
        "items": "2", "rules": "1", "strict": "1", "independent": "1/1 judged accepted, 0 accepted not judged",
        "compiles": "1", "tokens_in": "unknown", "tokens_out": "unknown", "cost_usd": "unknown"}

    # outcome counts: the terminal's counts lines, summed over the runs
    counts = {o: 0 for o in ("strict", "rules_only", "failed", "infra", "statement_false", "vacuous", "inner_vacuous")}
    for line in out.splitlines():
        if line.endswith(" items)"):
            for number, outcome in re.findall(r"(\d+) (\w+)", line.split("  (")[0]):
                counts[outcome] += int(number)
    assert {k: v for k, v in dom.outcomes.items() if k != "items"} == {k: str(v) for k, v in counts.items()}
    assert dom.outcomes["items"] == str(len(rows)) == "12"
    # the page repeats exactly what forall report printed
    assert dom.summary.strip() == out.split("html report:")[0].strip()

    # per-item rows link into the audit record with relative links that resolve
    assert len(dom.items) == 12
    for nodeid, links in dom.links.items():
        for _, href in links:
            assert not re.match(r"^[a-z]+:|^/", href), href
            assert (out_html.parent / href).is_file(), href
        assert any(label == "audit record" for label, _ in links), nodeid
    strict_item = dom.links["putnam/putnam.forall.toml::putnam_2001_a1[coq]"]
    labels = [label for label, _ in strict_item]
    assert {"accepted proof", "candidate s0/r1", "verdict layers s0/r1", "sandbox log"} <= set(labels), labels
    verdict = out_html.parent / dict(strict_item)["verdict layers s0/r1"]
    assert [layer["name"] for layer in json.loads(verdict.read_text())["layers"]][-1] == "independent_check"
    assert dom.items["putnam/putnam.forall.toml::putnam_2000_a1[coq]"]["outcome"] == "failed"

    # self-contained: no scripts, stylesheets, images or frames from anywhere
    assert not {"script", "link", "img", "iframe", "object"} & dom.tags and dom.sources == []
    text = out_html.read_text()
    assert re.findall(r"https?://[^\"' ]+", text) == ["http://www.w3.org/2000/svg"] * 3  # the SVG namespace only
    assert text.count("<svg") == 3 and 'data-plot="compiles"' in text and 'data-plot="cost_usd"' in text

    # the screenshot: the page rendered (outcome colours of badges and bars are on screen)
    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", out_html.as_uri())
    width, height, colours = png_pixels(shot)
    assert (width, height) == WINDOW
    for outcome in ("strict", "failed", "infra", "rules_only", "statement_false"):
        assert rgb(COLOURS[outcome]) in colours, outcome
    keep = os.environ.get("FORALL_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


def test_report_names_the_bad_argument(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = forall(capsys, "report", str(tmp_path / "nope"))
    assert status == 2 and "forall report:" in err and "nope" in err and "Traceback" not in err
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text('{"nodeid": "a::b", "outcome": "strict", "task_id": "b"}\n')
    (tmp_path / "file").write_text("")
    status, _, err = forall(capsys, "report", str(run), "--html", str(tmp_path / "file" / "out.html"))
    assert status == 2 and "--html" in err and "out.html" in err
    status, _, err = forall(capsys, "watch", str(tmp_path / "nope"))
    assert status == 2 and "not a run directory" in err
    status, _, err = forall(capsys, "watch", str(run), "--interval", "0")
    assert status == 2 and "--interval" in err


def test_access_log_and_transcripts_are_linked_where_the_sandbox_and_frontends_write_them(tmp_path: Path) -> None:
    item = tmp_path / "items" / "x"
    (item / "s0" / "actor-home").mkdir(parents=True)
    (item / "s0" / "access.jsonl").write_text("{}\n")
    (item / "s0" / "actor-home" / "access.jsonl").write_text("{}\n")  # the agent's own home is not the record
    (item / "s0" / "actor-turn1.jsonl").write_text("{}\n")
    (item / "audit.json").write_text(json.dumps({"turns": [{"role": "actor", "round": "s0/r1",
                                                            "transcript": "s0/actor-turn1.jsonl"}]}))
    links = audit_links(item)
    assert ("access log", item / "s0" / "access.jsonl") in links
    assert ("transcript actor s0/r1", item / "s0" / "actor-turn1.jsonl") in links
    assert all("actor-home" not in str(path) for _, path in links)
    # a row without an audit record (a crashed item's) links nothing, rather than the whole run's items
    assert item_dir(tmp_path, {"nodeid": "a::b", "audit_dir": ""}) is None and audit_links(None) == []
    moved = {"audit_dir": "/elsewhere/items/x"}  # a run directory copied from another machine
    assert item_dir(tmp_path, moved) == item


GATED = '''

import os, time


class GatedSession(FakeSession):
    """GATE: turn 1 submits a failing candidate; turn 2 waits for the test's release file, then proves it."""

    def turn(self, prompt, *, timeout):
        if "GATE" not in self.ctx.task.template:
            return super().turn(prompt, timeout=timeout)
        self.turns += 1
        deadline = time.time() + 120
        while self.turns >= 2 and not os.path.exists(os.environ["FORALL_TEST_RELEASE"]) and time.time() < deadline:
            time.sleep(0.05)
        (self.ctx.workspace / self.ctx.task.candidate_name).write_text("OK\\n" if self.turns >= 2 else "PENDING\\n")
        return TurnResult(session_id="gated", usage=Usage(10, 5, 0, 0.01))


class GatedFrontend(FakeFrontend):
    def start(self, ctx):
        return GatedSession(ctx)


@pytest.fixture
def forall_frontend():
    return GatedFrontend()
'''


def test_watch_follows_a_running_run_and_shows_the_finished_one(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text() + GATED)
    pytester.makefile(".forall.toml", suite='adapter = "fake"\n[tasks]\nt_strict = "STRICT"\nt_wait = "GATE"\n')
    release = pytester.path / "release"
    env = {**os.environ, "FORALL_TEST_RELEASE": str(release),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    run_dir = pytester.path / "reports" / "live"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                             "--forall-frontend=fake", "--forall-run-id=live"], cwd=pytester.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, frame = time.time() + 300, ""   # a hang guard: the loop waits on the second turn
        while time.time() < deadline and "actor turn s0/r2" not in frame and proc.poll() is None:
            time.sleep(0.2)
            if run_dir.is_dir():
                status, frame, err = forall(capsys, "watch", str(run_dir), "--once")
                assert status == 0, err
        if "actor turn s0/r2" not in frame:
            proc.kill()
            pytest.fail(f"the run never reached its second turn; watch said:\n{frame}\nthe run:\n"
                        f"{proc.communicate()[0][-3000:]}")
        assert "t_wait-fake: actor turn s0/r2; sample 0, 1 rounds, 1 compiles, 0 reviews, tokens 10/5, $0.0100" \
            in frame, frame
        assert "(running)" in frame and "2 selected, 2 started, 1 finished, 1 running" in frame, frame
        assert "finished: 1 strict, 0 rules_only, 0 failed, 0 infra, 0 statement_false, 0 vacuous, 0 inner_vacuous  (1 items)" in frame
        assert "spend so far: $0.0200 (finished $0.0100, running $0.0100)" in frame
        assert proc.poll() is None  # the item really was still running
        release.touch()
        output, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output
    status, frame, _ = forall(capsys, "watch", str(run_dir), "--interval", "0.1")  # a finished run: one frame
    assert status == 0
    assert "(finished)" in frame and "2 selected, 2 started, 2 finished, 0 running" in frame, frame
    assert "finished: 2 strict, 0 rules_only, 0 failed, 0 infra, 0 statement_false, 0 vacuous, 0 inner_vacuous  (2 items)" in frame
    assert "compiles 3, wall" in frame and "tokens in 30, out 15, cost USD 0.0300" in frame
    # a run whose pytest process died without finishing: the watcher says so and stops (exit 1), never waits forever
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["pid"] == proc.pid and meta["exitstatus"] == 0
    (run_dir / "run.json").write_text(json.dumps({**meta, "finished": None}))
    status, frame, _ = forall(capsys, "watch", str(run_dir), "--interval", "0.1")
    assert status == 1 and "CONTROLLER GONE" in frame, frame
    progress = json.loads((run_dir / "items" / "t_wait-fake" / "progress.json").read_text())
    assert progress["state"] == "finished" and progress["outcome"] == "strict" and progress["rounds"] == 2
    assert not list(run_dir.rglob(".progress.json.*.tmp"))  # every write was renamed into place
