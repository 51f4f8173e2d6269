"""What the coding-agent CLI frontends share: a private HOME per session, one process per turn with the
whole tree killed on timeout, the event stream saved to the audit dir, and infra classification.

What decides a sandboxed turn's outcome is what the agent cannot write (docs/sandbox.md): the CLI's own event
stream (a socket its tools cannot reopen; their shells run one Landlock domain below the CLI), how the CLI
ended (a signal from inside its sandbox is the actor's doing), and the proxy's record of the turn's traffic
to the provider, which must corroborate a provider failure the CLI reports before the turn is called infra.

Each adapter (``claude_code``, ``codex``, ``opencode``) only says how to spell a turn on the command line
and how to read its JSONL events; everything that must behave the same for all three lives here, so a
turn of any CLI leaves the same files behind and fails for the same reasons with the same names.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_forall.core.actor import REVIEWER, SessionContext, SessionHandle, TurnResult
from pytest_forall.core.model import Usage
from pytest_forall.core.proc import kill_group
from pytest_forall.core.prover import ProvidesShellTools, Sandboxable
from pytest_forall.isolation.confine import CLI_ONLY_ENV
from pytest_forall.isolation.sandbox import SandboxPolicy, SandboxUnavailable, host_binds, run_sandboxed

#: Variables of the parent environment a CLI may see; everything else (other keys, tokens) stays out.
PASSED_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
              "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
#: Inside bwrap the sandbox's own proxy must win over the host's.
PROXY_ENV = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"})
#: A shell command of the agent that runs a prover: counted as a compile (budget) and listed in the audit.
PROVER_COMMAND = re.compile(r"(?<![\w./-])(coqc|coqtop|rocq|lake|lean)(?![\w-])")
SANDBOX = "bwrap"
#: The CLIs run ``git`` themselves (Claude Code, at the start of a turn, in the workspace), unconfined: a repository the
#: actor made in its workspace ran its ``core.fsmonitor`` (``/usr/bin/python3`` on a file named ``2``) in the CLI's
#: domain, and a filter, hook or pager could too. Their git finds no repository and reads no global config; the
#: confined shells drop these (``confine.CLI_ONLY_ENV``), so the actor's own git is unchanged.
CLI_GIT_ENV = {"GIT_DIR": "/nonexistent/forall-no-repository", "GIT_CONFIG_GLOBAL": "/dev/null",
               "GIT_CONFIG_NOSYSTEM": "1"}

# Infra causes: the TurnResult.infra string starts with one of these names.
CLI_MISSING = "cli-missing"
AUTHENTICATION = "authentication"
QUOTA = "quota"
RATE_LIMIT = "rate-limit"
PROVIDER_ERROR = "provider-error"
PROVIDER_UNREACHABLE = "provider-unreachable"
ZERO_TOKENS = "zero-tokens"
PROVIDER_UNRESPONSIVE = "provider-unresponsive"
TURN_TIMEOUT = "turn-timeout"
#: How often a turn's event file is looked at for growth (the stall detector outside the sandbox).
POLL_SECONDS = 0.5
#: Default bound (MiB) on the memory of an agent session's whole process tree (the CLI, its shells, the prover
#: runs in them): ``--forall-memory``. Claude Code with Coq and mathcomp in its shell stays under 3 GiB.
DEFAULT_MEMORY_MB = 4096
#: Bytes a model request carries per token at most (JSON, English, code: 3-4): reported usage below the bytes the
#: proxy carried up over this is not what went to the provider (the row says so; caps count the larger).
BYTES_PER_TOKEN_CEILING = 16
#: The statuses that corroborate each cause the CLI names, when the proxy sees plaintext HTTP.
CORROBORATING_STATUSES = {"authentication": (401, 403), "quota": (402, 403, 429), "rate-limit": (429,),
                          "provider-error": (500, 502, 503, 504, 529)}

#: First match wins: a 429 that says "quota" is a quota problem, not a transient rate limit.
INFRA_PATTERNS = tuple((cause, re.compile(pattern, re.IGNORECASE)) for cause, pattern in (
    (AUTHENTICATION, (r"\b40[13]\b|authenticat|unauthori[sz]ed|not logged in|invalid.{0,12}api.?key|"
                     r"incorrect api key|missing environment variable|permission_error")),
    (QUOTA, r"insufficient_quota|quota|credit balance|spend(ing)? limit|billing|usage limit"),
    (RATE_LIMIT, r"\b429\b|rate.?limit|too many requests"),
    (PROVIDER_ERROR, (r"\b5(00|02|03|04|29)\b|overloaded|internal server error|server_error|service unavailable|"
                     r"bad gateway|high demand")),
    (PROVIDER_UNREACHABLE, (r"connection refused|econnrefused|unable to connect|failed to connect|"
                           r"error sending request|connection error|fetch failed")),
))


@dataclass
class ParsedTurn:
    """What an adapter read from one turn's events."""

    session_id: str = ""
    usage: Usage = field(default_factory=Usage)
    final_text: str = ""
    #: error messages the CLI reported in its events (API errors, failed turns)
    errors: list[str] = field(default_factory=list)
    #: shell commands the agent ran
    commands: list[str] = field(default_factory=list)
    #: the model said something (text, a tool call, usage): a killed turn without it never got an answer
    answered: bool = False


@dataclass
class ProviderTraffic:
    """The proxy's record of one sandboxed turn's tunnels to the provider: what the harness itself observed."""

    tunnels: int = 0
    #: CONNECTs the proxy could not complete upstream (refused, unreachable, timed out)
    refused: int = 0
    #: tunnels the provider closed first or that were reset (either side)
    closed_by_provider: int = 0
    reset: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    #: plaintext HTTP only: requests, and the status of each response
    requests: int = 0
    statuses: list[int] = field(default_factory=list)
    #: tunnels whose content the proxy cannot read (TLS)
    opaque: int = 0

    @classmethod
    def from_log(cls, access_log: Path, run: str, endpoint: str) -> ProviderTraffic:
        from pytest_forall.isolation.netproxy import parse_endpoint

        traffic = cls()
        target = parse_endpoint(endpoint) if endpoint else None
        lines = access_log.read_text(encoding="utf-8").splitlines() if access_log.is_file() else []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:  # a line cut short (a proxy stopped mid-write) records nothing of this turn
                continue
            if record.get("run") != run or (record.get("host"), record.get("port")) != target:
                continue
            traffic.tunnels += 1
            traffic.refused += record.get("decision") == "upstream_error"
            traffic.closed_by_provider += record.get("closed_by") == "upstream"
            traffic.reset += bool(record.get("reset"))
            traffic.bytes_up += int(record.get("bytes_up") or 0)
            traffic.bytes_down += int(record.get("bytes_down") or 0)
            http = record.get("http") or {}
            traffic.opaque += bool(http.get("opaque"))
            traffic.requests += int(http.get("requests") or 0)
            traffic.statuses += [int(status) for status in http.get("statuses") or []]
        return traffic

    def corroborates(self, cause: str) -> str:
        """Why this traffic bears out the CLI's ``cause``, or "" when it does not."""
        if cause == PROVIDER_UNREACHABLE:
            return f"{self.refused} connection(s) refused upstream" if self.refused else ""
        if cause == ZERO_TOKENS:
            return f"{self.tunnels} tunnel(s) to the provider, {self.bytes_down} bytes answered" if self.bytes_down else ""
        expected = CORROBORATING_STATUSES.get(cause, ())
        seen = [status for status in self.statuses if status in expected]
        if seen:
            return f"the provider answered {', '.join(map(str, sorted(set(seen))))}"
        if cause == PROVIDER_ERROR and (self.refused or self.reset):
            return f"{self.refused} refused, {self.reset} reset connection(s)"
        if self.opaque and self.bytes_down:  # TLS: the status is the provider's, unreadable here
            return f"{self.opaque} TLS tunnel(s) the provider answered ({self.bytes_down} bytes; statuses unreadable)"
        return ""

    def summary(self) -> str:
        statuses = f", statuses {self.statuses}" if self.statuses else ""
        return (f"{self.tunnels} tunnel(s), {self.requests} plaintext request(s){statuses}, {self.refused} refused, "
                f"{self.reset} reset, {self.bytes_up} bytes up, {self.bytes_down} down")

    def to_wire(self) -> dict[str, Any]:
        return {"tunnels": self.tunnels, "refused": self.refused, "closed_by_provider": self.closed_by_provider,
                "reset": self.reset, "bytes_up": self.bytes_up, "bytes_down": self.bytes_down,
                "requests": self.requests, "statuses": self.statuses, "opaque": self.opaque}


@dataclass
class ProcessOutcome:
    returncode: int
    timed_out: bool
    #: killed because the event stream stayed silent for the stall limit (``timed_out`` is set too)
    stalled: bool = False
    stall_seconds: float | None = None
    #: the signal that ended the CLI when the harness did not send it (from inside the sandbox, or the OOM killer)
    signal: int | None = None
    #: the memory bound was hit (the cgroup's OOM killer killed a process of the turn)
    oom: bool = False
    #: processes of the turn found stopped when the stall fired: the silence was made inside the sandbox
    stopped: int = 0
    #: the proxy's record of the turn (sandboxed turns only: unsandboxed, nothing observes the traffic)
    traffic: ProviderTraffic | None = None


def read_events(path: Path) -> list[dict[str, Any]]:
    """JSON objects of a JSONL stream; other lines (banners, partial writes after a kill) are skipped."""
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def descendants(root: int) -> list[int]:
    """Pids below ``root``, found through /proc, so children that left the process group die too."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        children = parents.get(todo.pop(), [])
        found.extend(children)
        todo.extend(children)
    return found


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s descendants and its process group."""
    for pid in descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    kill_group(proc)


def run_streaming(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float | None,
                  stdout_path: Path, stderr_path: Path, stall: float | None = None) -> ProcessOutcome:
    """Run ``argv`` with output going straight to files, so the events survive a kill and no pipe can hang.

    The process gets its own session; on timeout, or when its stdout has not grown for ``stall`` seconds,
    its whole tree is killed, and after a normal exit any straggler left in its group (e.g. OpenCode's
    background ``npm install``) is killed as well.
    """
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
        except OSError as exc:
            err.write(f"{exc}\n".encode())
            return ProcessOutcome(127, False)
        started = last_output = time.monotonic()
        size, timed_out, stalled = 0, False, False
        try:
            while proc.poll() is None:
                now = time.monotonic()
                grown = os.fstat(out.fileno()).st_size
                if grown != size:
                    size, last_output = grown, now
                stalled = stall is not None and now - last_output >= stall
                if stalled or (timeout is not None and now - started >= timeout):
                    timed_out = True
                    kill_tree(proc)
                    proc.wait()
                    break
                try:
                    proc.wait(timeout=POLL_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            if proc.poll() is None:  # interrupted (Ctrl-C): take the tree down with us
                kill_tree(proc)
                proc.wait()
            kill_group(proc)
    return ProcessOutcome(proc.returncode, timed_out, stalled, stall)


def classify_infra(parsed: ParsedTurn, outcome: ProcessOutcome, stderr: str) -> str:
    """Name the infrastructure cause of a turn, or "" when the model ran and the agent's work can be judged.

    A silent event stream is the provider's fault whatever the agent did before; a turn killed at its time
    limit is the agent's own round if the model answered at all, else it never got an answer (infra).
    """
    if outcome.stalled:
        return (f"{PROVIDER_UNRESPONSIVE}: no output from the CLI for {outcome.stall_seconds:g} s; the turn was "
                f"killed ({_last_error(parsed, stderr)})")
    if outcome.timed_out:
        return "" if parsed.answered else (f"{TURN_TIMEOUT}: killed at the turn's time limit without an answer "
                                           f"from the model ({_last_error(parsed, stderr)})")
    failed = bool(parsed.errors) or outcome.returncode != 0 or parsed.usage.spent_nothing
    if not failed:
        return ""
    evidence = [*parsed.errors, stderr[-4000:]] if outcome.returncode != 0 or parsed.errors else parsed.errors
    for cause, pattern in INFRA_PATTERNS:
        for text in evidence:
            found = pattern.search(text)
            if found:
                return f"{cause}: {_excerpt(text, found.start())}"
    if parsed.usage.spent_nothing:
        detail = parsed.errors[0] if parsed.errors else f"exit status {outcome.returncode}"
        return f"{ZERO_TOKENS}: the turn spent no tokens ({detail})"
    return ""


def attribute_turn(parsed: ParsedTurn, outcome: ProcessOutcome, stderr: str) -> tuple[str, str]:
    """(infra cause, why the turn's end is the actor's own doing): at most one is non-empty.

    Sandboxed, a turn is infra only on what the agent cannot write: a CLI the harness had to kill (stall, time
    limit), or a failure the CLI reports in its own stream that the proxy's record bears out. A CLI ended by a
    signal from inside its sandbox, or by the memory bound, is the actor's, whatever its stream says.
    """
    if outcome.oom and not outcome.timed_out:
        return "", "the turn's processes passed the memory bound (--forall-memory) and one was killed"
    if outcome.signal is not None:
        return "", f"the CLI was killed by signal {outcome.signal} from inside its own sandbox"
    if outcome.stalled and outcome.stopped:
        return "", f"the turn went silent with {outcome.stopped} of its processes stopped (SIGSTOP) inside its sandbox"
    cause = classify_infra(parsed, outcome, stderr)
    traffic = outcome.traffic
    if not cause or traffic is None or outcome.timed_out:
        return cause, ""
    if traffic.corroborates(cause.partition(":")[0]):
        return cause, ""
    return "", (f"the CLI reported {_excerpt(cause, 0, 200)!r} but the proxy saw no such failure from the provider "
                f"({traffic.summary()})")


def dispute_usage(usage: Usage, traffic: ProviderTraffic | None) -> tuple[Usage, str]:
    """(the usage the caps count, a note when the CLI's figure is below what the proxy carried).

    Input tokens below ``bytes_up / BYTES_PER_TOKEN_CEILING`` cannot have been all the provider read; the note
    names both figures and the larger count is charged, the cost scaled by the same factor."""
    if traffic is None or not traffic.bytes_up:
        return usage, ""
    floor = traffic.bytes_up // BYTES_PER_TOKEN_CEILING
    reported = usage.tokens_in or 0
    if reported >= floor:
        return usage, ""
    note = (f"usage disputed: the CLI reported {reported} input tokens, the proxy carried {traffic.bytes_up} bytes "
            f"to the provider (at least {floor} tokens); the larger is counted")
    cost = usage.cost_usd
    if cost is not None and reported:
        cost = cost * floor / reported
    return replace(usage, tokens_in=floor, cost_usd=cost), note


def _last_error(parsed: ParsedTurn, stderr: str) -> str:
    """The CLI's last words, for the reason of a killed turn."""
    words = parsed.errors[-1] if parsed.errors else stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return _excerpt(words, 0, 200) or "it wrote no error"


def _excerpt(text: str, at: int, width: int = 300) -> str:
    start = max(0, at - width // 2)
    return " ".join(text[start:start + width].split())


def private_env(home: Path, tmp: Path, cwd: Path, options: dict[str, Any]) -> dict[str, str]:
    """The environment of a CLI process: a few passed-through variables, its own HOME and TMPDIR, PWD
    matching its cwd (OpenCode trusts PWD over getcwd), and ``options["env"]`` (extra variables)."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env.update(HOME=str(home), TMPDIR=str(tmp), PWD=str(cwd))
    env.update({str(k): str(v) for k, v in (options.get("env") or {}).items()})
    return env


def provider_endpoint(url: str, default: str) -> str:
    """``host:port`` of the provider a sandboxed CLI may reach (the default provider without a URL)."""
    if not url:
        return default
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def install_binds(executable: str) -> list[Path]:
    """Read-only binds a sandboxed CLI needs besides /usr: its install prefix (``<prefix>/bin/<cli>``) and,
    for a node shim such as Codex's, node's prefix (:func:`~pytest_forall.isolation.sandbox.host_binds`)."""
    return host_binds([program for program in (executable, shutil.which("node") or "") if program])


class AgentCliFrontend:
    """Base of the three CLI frontends: locating the binary and opening sessions."""

    name = ""
    is_agent = True
    binary = ""
    npm_package = ""
    #: ``host:port`` of the CLI's own provider, the sandbox's allowlist when no ``provider_url`` is set
    default_endpoint = ""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = dict(options or {})

    def executable(self, options: dict[str, Any]) -> str | None:
        """The CLI to run: ``options["binary"]`` (a name or a path) looked up on the current PATH."""
        return shutil.which(str(options.get("binary") or self.binary))

    def missing(self, options: dict[str, Any]) -> str:
        if self.executable(options):
            return ""
        return (f"{CLI_MISSING}: {options.get('binary') or self.binary!r} is not on PATH; "
                f"install it with `npm install -g {self.npm_package}`")

    def probe(self) -> str:
        return self.missing(self.options)

    def start(self, ctx: SessionContext) -> AgentCliSession:
        raise NotImplementedError


class AgentCliSession:
    """One resumable conversation with a CLI: one process per turn, the CLI's session id carried across.

    Files, all in ``ctx.audit_dir`` (never in the workspace, which the agent and the verifier see):
    ``<label>-home/`` (HOME and config), ``<label>-tmp/``, and per turn ``<label>-turn<N>.prompt.txt``,
    ``.jsonl`` (stdout events) and ``.stderr.txt``. ``label`` is the role, numbered from the second
    session of the same role in one audit dir. ``ctx.resume`` reopens an earlier session: same label (so
    the same HOME, where the CLI keeps the conversation), same id, turn numbers continuing.

    With ``options["sandbox"] == "bwrap"`` (the default) each turn runs in the bwrap sandbox: the actor can
    write its workspace, HOME and TMPDIR only; the reviewer can write only its HOME and TMPDIR and reads its
    directory through a read-only bind; the network is the provider's ``host:port`` only.
    """

    #: default name of the variable holding the provider key
    key_env = ""
    #: Where in its HOME the CLI keeps the conversation a later turn resumes (paths relative to the HOME, ``*`` in the
    #: last part): all of the HOME that survives from one turn to the next (:meth:`before_turn`). None: all of it.
    conversation: tuple[str, ...] | None = None

    def __init__(self, frontend: AgentCliFrontend, ctx: SessionContext) -> None:
        self.frontend = frontend
        self.ctx = ctx
        self.options = {**frontend.options, **ctx.options}
        ctx.audit_dir.mkdir(parents=True, exist_ok=True)
        resume = ctx.resume
        if resume is not None and resume.label and (ctx.audit_dir / f"{resume.label}-home").is_dir():
            self.label, self.session_id, self.turns = resume.label, resume.session_id, resume.turns
        else:
            self.label, self.session_id, self.turns = _free_label(ctx.audit_dir, ctx.role), "", 0
        self.home = ctx.audit_dir / f"{self.label}-home"
        self.tmp = ctx.audit_dir / f"{self.label}-tmp"
        self._prover_tools: tuple[tuple[Path, str], ...] | None = None
        resumed = self.home.is_dir()
        self.home.mkdir(exist_ok=True)
        self.tmp.mkdir(exist_ok=True)
        if not resumed:
            self.prepare()
        else:
            self.reopen()

    @property
    def reviewer(self) -> bool:
        return self.ctx.role == REVIEWER

    @property
    def sandboxed(self) -> bool:
        return str(self.options.get("sandbox") or SANDBOX) == SANDBOX

    def prepare(self) -> None:
        """Write the CLI's config files into the private HOME."""

    def reopen(self) -> None:
        """Pick up what ``prepare`` left in the HOME of a resumed session."""

    def before_turn(self) -> None:
        """The HOME as :meth:`prepare` made it, plus the conversation: the actor's shell and the CLI's own file tools
        can write the HOME, and a CLI reads its config, plugins and agents from there at start-up (an OpenCode
        plugin ran inside the CLI and priced every later turn at $0). Runs before every turn, while nothing of the
        actor's sandbox is alive, so nothing can undo it before the CLI starts."""
        if self.conversation is None:
            return
        prune(self.home, self.conversation)
        self.prepare()

    def command(self, executable: str, prompt: str) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        env = private_env(self.home, self.tmp, self.ctx.workspace, self.options)
        if self.sandboxed:
            env = {k: v for k, v in env.items() if k not in PROXY_ENV}
            env.update(CLI_GIT_ENV, **{CLI_ONLY_ENV: " ".join(CLI_GIT_ENV)})
        if self.prover_tools():
            env["PATH"] = f"{self.tools_dir}:{env.get('PATH') or '/usr/bin:/bin'}"
        return env

    @property
    def tools_dir(self) -> Path:
        return self.ctx.audit_dir / f"{self.label}-bin"

    def prover_tools(self) -> tuple[tuple[Path, str], ...]:
        """The actor's prover commands, from the toolchain the verifier uses (written once per session, outside the
        workspace, read-only in the sandbox), and their binds; () for the reviewer or when PATH has them."""
        if self.reviewer or not isinstance(self.ctx.prover, ProvidesShellTools):
            return ()
        if self._prover_tools is None:
            self._prover_tools = self.ctx.prover.shell_tools(self.tools_dir)
        return self._prover_tools

    def api_key(self) -> str:
        """The provider key, read from the variable named by ``options["api_key_env"]``; it only ever
        reaches the CLI through its environment, never a file in the audit dir."""
        return os.environ.get(str(self.options.get("api_key_env") or self.key_env), "")

    def parse(self, events: list[dict[str, Any]]) -> ParsedTurn:
        raise NotImplementedError

    def handle(self) -> SessionHandle:
        return SessionHandle(self.session_id, self.label, self.turns)

    def sandbox_policy(self, executable: str, env: dict[str, str], timeout: float | None) -> SandboxPolicy:
        """Paths keep their host names inside, so the CLI's own session records (keyed by cwd) stay valid."""
        installs = tuple((path, str(path)) for path in install_binds(executable))
        endpoint = self.provider_endpoint()
        # The item's MCP tool servers (docs/tools.md) listen on host loopback; allowing them mirrors them inside.
        servers = [provider_endpoint(str(spec["url"]), "")
                   for spec in (self.options.get("mcp_servers") or {}).values()]
        allow = tuple(dict.fromkeys(e for e in (endpoint, *servers) if e))
        common: dict[str, Any] = {"allow": allow, "env": env, "wall_seconds": timeout, "confine_shells": True,
                                  "memory_mb": int(self.options.get("memory") or DEFAULT_MEMORY_MB)}
        if self.reviewer:
            # the workspace is read-only here but the actor's: nothing in it may run
            return SandboxPolicy(workspace=self.home, workspace_inside=str(self.home),
                                 rw_binds=((self.tmp, str(self.tmp)),),
                                 ro_binds=((self.ctx.workspace, str(self.ctx.workspace)), *installs),
                                 exec_beneath=tuple(inside for _, inside in installs), **common)
        declared = self.ctx.prover.sandbox_binds if isinstance(self.ctx.prover, Sandboxable) else ()
        # a prover's root filesystem replaces /usr only in the prover's own sandbox; the CLI needs the host's
        prover_binds = tuple((src, inside) for src, inside in declared if src.exists() and inside != "/")
        ro_binds = (*installs, *prover_binds, *self.prover_tools())
        return SandboxPolicy(workspace=self.ctx.workspace, workspace_inside=str(self.ctx.workspace),
                             rw_binds=((self.home, str(self.home)), (self.tmp, str(self.tmp))),
                             ro_binds=ro_binds, exec_beneath=tuple(inside for _, inside in ro_binds), **common)

    def provider_endpoint(self) -> str:
        """``host:port`` of the session's provider, "" when it has none (OpenCode without ``provider_url``)."""
        return provider_endpoint(str(self.options.get("provider_url") or ""), self.frontend.default_endpoint)

    @property
    def stall(self) -> float | None:
        """Seconds of silence on the event stream after which the turn is killed (``--forall-stall``)."""
        value = self.options.get("stall")
        return float(value) if value not in (None, "") else None

    def run_process(self, argv: list[str], timeout: float | None, stdout_path: Path,
                    stderr_path: Path) -> ProcessOutcome:
        env = self.environment()
        if not self.sandboxed:
            return run_streaming(argv, cwd=self.ctx.workspace, env=env, timeout=timeout, stdout_path=stdout_path,
                                 stderr_path=stderr_path, stall=self.stall)
        policy = replace(self.sandbox_policy(argv[0], env, timeout), stall_seconds=self.stall)
        result = run_sandboxed(argv, policy, audit_dir=self.ctx.audit_dir, cwd_inside=str(self.ctx.workspace))
        stdout_path.write_text(result.stdout, encoding="utf-8")
        stderr_path.write_text(result.stderr, encoding="utf-8")
        # no provider endpoint, no provider traffic to observe: the CLI's word stands, as unsandboxed
        endpoint, access_log = self.provider_endpoint(), result.extra.get("access_log")
        traffic = ProviderTraffic.from_log(Path(access_log), str(result.extra.get("run")), endpoint) if (
            endpoint and access_log) else None
        return ProcessOutcome(result.returncode, result.timed_out, bool(result.extra.get("stalled")), self.stall,
                              signal=result.extra.get("command_signal"), oom=bool(result.extra.get("oom")),
                              stopped=int(result.extra.get("stopped_at_stall") or 0), traffic=traffic)

    def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
        self.turns += 1
        stem = self.ctx.audit_dir / f"{self.label}-turn{self.turns}"
        stem.with_suffix(".prompt.txt").write_text(prompt, encoding="utf-8")
        transcript, stderr_path = stem.with_suffix(".jsonl"), stem.with_suffix(".stderr.txt")
        executable = self.frontend.executable(self.options)
        if executable is None:
            transcript.touch()
            return TurnResult(session_id=self.session_id, exit_code=127, infra=self.frontend.missing(self.options),
                              transcript=str(transcript))
        self.before_turn()
        try:
            outcome = self.run_process(self.command(executable, prompt), timeout, transcript, stderr_path)
        except SandboxUnavailable as exc:
            transcript.touch()
            return TurnResult(session_id=self.session_id, exit_code=127, infra=f"sandbox: {exc}",
                              transcript=str(transcript))
        parsed = self.parse(read_events(transcript))
        self.session_id = parsed.session_id or self.session_id
        stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
        compile_commands = [c for c in parsed.commands if PROVER_COMMAND.search(c)]
        if compile_commands and self.ctx.charge_compile is not None:
            self.ctx.charge_compile(len(compile_commands))
        infra, own_fault = attribute_turn(parsed, outcome, stderr)
        usage, disputed = dispute_usage(parsed.usage, outcome.traffic)
        return TurnResult(session_id=self.session_id, usage=usage, exit_code=outcome.returncode,
                          final_text=parsed.final_text, infra=infra, own_fault=own_fault, usage_disputed=disputed,
                          traffic=outcome.traffic.to_wire() if outcome.traffic else None,
                          timed_out=outcome.timed_out, transcript=str(transcript),
                          compiles=len(compile_commands), compile_commands=compile_commands)

    def close(self) -> None:
        """Nothing runs between turns; the HOME stays in the audit dir as evidence."""


def prune(root: Path, kept: tuple[str, ...]) -> None:
    """Remove everything under ``root`` but the paths matching ``kept`` (relative, ``fnmatch`` per part) and the
    directories leading to them; a symbolic link is removed itself, never followed."""
    patterns = [Path(pattern).parts for pattern in kept]

    def visit(directory: Path, depth: int) -> None:
        for entry in directory.iterdir():
            matching = [p for p in patterns if len(p) > depth and fnmatch.fnmatchcase(entry.name, p[depth])]
            if any(len(p) == depth + 1 for p in matching) and not entry.is_symlink():
                continue
            if matching and entry.is_dir() and not entry.is_symlink():
                visit(entry, depth + 1)
            elif entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    visit(root, 0)


def _free_label(audit_dir: Path, role: str) -> str:
    label, number = role, 1
    while (audit_dir / f"{label}-home").exists():
        number += 1
        label = f"{role}{number}"
    return label
