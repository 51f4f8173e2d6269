"""Benchmark tools for the actor and the reviewer, served on one MCP server beside retrieval.

Actor: ``start`` (the exact template, workspace state), ``compile`` (prover diagnostics, no verdict),
``submit`` (the full verifier; the verdict is recorded), and with a prover that holds a warm session
(:class:`~pytest_forall.core.prover.Interactive`) ``goals``/``try``/``query`` (the proof state, tactics tried without
touching the file, statement queries; nothing judged). Reviewer: ``review_start`` (statement and the
candidate's digest), ``review_compile`` (compile evidence bound to that digest; never writes the
reviewer's directory). The same tools reach shell frontends as ``forall start|compile|submit|…``
(:mod:`pytest_forall.tools.shell`), which are clients of the item's server, not second implementations.

Authority stays with the framework. :class:`ItemTools` serves an item's tools over streamable HTTP on
127.0.0.1 from a thread of the framework's own process, so the prover that judges and the per-item key
that seals every record never reach the agent; the agent only talks to the server. The context file
(``tool-context.json`` in the audit dir) tells clients the URL and is sealed with the same key, so a
server started from a file (``forall mcp --item-context``) refuses a forged one. Records
(``submissions.jsonl``, ``tool_calls.jsonl``) carry an HMAC each: a line the agent wrote itself is
reported as unauthenticated, never counted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from pytest_forall.core import workspace as ws
from pytest_forall.core.actor import ACTOR, REVIEWER
from pytest_forall.core.model import Task, sha256_bytes
from pytest_forall.core.prover import (
    Interactive,
    ProofSession,
    ProofTools,
    Prover,
    SessionAnswer,
    SessionRefused,
    proof_tools,
)
from pytest_forall.core.verify import DEFAULT_TIMEOUT, verify_candidate
from pytest_forall.tools.mcp_server import build_server

CONTEXT_ENV = "FORALL_ITEM_CONTEXT"
URL_ENV = "FORALL_TOOLS_URL"
#: Hex key for a server started from a context file (``forall mcp --item-context``) by a trusted parent.
KEY_ENV = "FORALL_CONTEXT_KEY"
CONTEXT_FILE = "tool-context.json"
SUBMISSIONS = "submissions.jsonl"
TOOL_CALLS = "tool_calls.jsonl"
SERVER_NAME = "forall"

NAVIGATION = frozenset({"lookup", "search", "usages", "outline"})
COMPILATION = frozenset({"compile", "submit", "review_compile"})
#: the actor's interactive tools over the item's warm prover session (offered when the prover is Interactive)
INTERACTION = frozenset({"goals", "try", "query"})
ROLE_TOOLS = {ACTOR: ("start", "compile", "submit"), REVIEWER: ("review_start", "review_compile")}
#: First line of every compile/submit answer; ``forall <tool>`` maps it to its exit status.
STATUS_PREFIX = "status: "
MAX_MESSAGES = 20


class ContextError(Exception):
    """The context file is missing, malformed, or not sealed with the expected key."""


@dataclass(frozen=True)
class ToolContext:
    """What the tools of one item (for one role) need; written by the framework outside the workspace."""

    task: Task
    role: str                      # ACTOR | REVIEWER
    #: the actor's workspace, or the reviewer's directory (candidate copy + statement)
    workspace: Path
    #: where the context file and the records go (the item's or session's audit dir)
    audit_dir: Path
    prover: str
    prover_options: dict[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    #: library sources for lookup/search/usages/outline; empty: no navigation tools
    retrieval_root: str = ""
    retrieval_cache: str = ""
    #: declarations withheld from retrieval (the task's own theorem, by default)
    excluded: tuple[str, ...] = ()
    #: where the framework serves these tools (set by :class:`ItemTools`)
    url: str = ""

    def to_wire(self) -> dict[str, Any]:
        wire = asdict(self)
        wire.update(task=self.task.to_wire(), workspace=str(self.workspace), audit_dir=str(self.audit_dir),
                    excluded=list(self.excluded))
        return wire

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> ToolContext:
        return cls(**{**wire, "task": Task(**wire["task"]), "workspace": Path(wire["workspace"]),
                      "audit_dir": Path(wire["audit_dir"]), "excluded": tuple(wire["excluded"])})


# --- sealing -------------------------------------------------------------------------------------------

def _canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()


def _mac(key: bytes, data: dict[str, Any]) -> str:
    return hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()


def write_context(context: ToolContext, key: bytes) -> Path:
    """Write the sealed context file into ``context.audit_dir``; its path is what ``FORALL_ITEM_CONTEXT`` names."""
    wire = context.to_wire()
    path = context.audit_dir / CONTEXT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    sealed = {"context": wire, "mac": _mac(key, wire)}
    path.write_text(json.dumps(sealed, indent=1, default=str), encoding="utf-8")
    return path


def read_context(path: Path, key: bytes | None) -> ToolContext:
    """The context in ``path``; with ``key``, only if its seal verifies (a client without the key only needs the URL)."""
    try:
        sealed = json.loads(path.read_text(encoding="utf-8"))
        wire = sealed["context"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ContextError(f"cannot read item context {path}: {exc}") from None
    if key is not None and not (key and hmac.compare_digest(str(sealed.get("mac", "")), _mac(key, wire))):
        raise ContextError(f"item context {path} is not sealed with this key")
    return ToolContext.from_wire(wire)


def read_records(audit_dir: Path, name: str, key: bytes) -> tuple[list[dict[str, Any]], int]:
    """(authentic records of ``audit_dir/name``, number of lines that are not); seals are stripped."""
    authentic, other = [], 0
    try:
        lines = (audit_dir / name).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return [], 0
    for line in lines:
        try:
            record = json.loads(line)
            mac = record.pop("mac")
        except (ValueError, KeyError, AttributeError, TypeError):
            other += 1
            continue
        if hmac.compare_digest(str(mac), _mac(key, record)):
            authentic.append(record)
        else:
            other += 1
    return authentic, other


def summarize_tool_calls(audit_dir: Path, key: bytes) -> dict[str, Any]:
    """Per-item tool use for the audit record: navigation vs compilation calls and the navigation share."""
    calls, unauthenticated = read_records(audit_dir, TOOL_CALLS, key)
    by_tool: dict[str, int] = {}
    for call in calls:
        by_tool[call["tool"]] = by_tool.get(call["tool"], 0) + 1
    navigation = sum(n for tool, n in by_tool.items() if tool in NAVIGATION)
    compilation = sum(n for tool, n in by_tool.items() if tool in COMPILATION)
    interaction = sum(n for tool, n in by_tool.items() if tool in INTERACTION)
    both = navigation + compilation
    return {"navigation": navigation, "compilation": compilation, "interaction": interaction,
            "session": len(calls) - both - interaction,
            "restarts": sum(1 for call in calls if call.get("restarted")),
            "navigation_share": round(navigation / both, 3) if both else None,
            "by_tool": dict(sorted(by_tool.items())), "unauthenticated": unauthenticated}


# --- the tools -----------------------------------------------------------------------------------------

@dataclass
class _Outcome:
    """What a tool call produced: the answer, and what the record keeps of it."""

    text: str
    status: str = "ok"
    digest: str = ""
    record: dict[str, Any] = field(default_factory=dict)   # non-empty: also a submissions.jsonl line
    #: extra fields of the tool_calls.jsonl line (an interactive call's session restart)
    logged: dict[str, Any] = field(default_factory=dict)


def _diagnostics(messages: list[dict[str, Any]], build: Path) -> list[str]:
    """One line per prover message in source order; the private build path is cut so answers repeat exactly."""
    lines = []
    for message in messages[:MAX_MESSAGES]:
        where = f" at line {message['line']}" if message.get("line") else ""
        text = str(message.get("data", "")).replace(f"{build}/", "").strip()[:2000]
        lines.append(f"{message.get('severity', 'error')}{where}: {text}")
    if len(messages) > MAX_MESSAGES:
        lines.append(f"({len(messages) - MAX_MESSAGES} more messages)")
    return lines


class BenchmarkTools:
    """The tool implementations for one item and role; every call is logged, sealed, to the audit dir."""

    def __init__(self, context: ToolContext, prover: Prover, key: bytes,
                 charge_compile: Callable[[], bool] | None = None) -> None:
        self.context = context
        self.prover = prover
        self.key = key
        self.charge_compile = charge_compile
        self._lock = threading.Lock()
        self._calls = 0
        self._session: ProofSession | None = None
        self._session_lock = threading.Lock()

    # -- records --------------------------------------------------------------------------------------

    def _append(self, name: str, record: dict[str, Any]) -> None:
        line = json.dumps({**record, "mac": _mac(self.key, record)}, sort_keys=True, default=str)
        with self._lock, (self.context.audit_dir / name).open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def log_call(self, tool: str, arguments: dict[str, Any], status: str, digest: str, seconds: float,
                 extra: dict[str, Any] | None = None) -> None:
        with self._lock:
            self._calls += 1
            number = self._calls
        category = ("navigation" if tool in NAVIGATION else "compilation" if tool in COMPILATION
                    else "interaction" if tool in INTERACTION else "session")
        self._append(TOOL_CALLS, {"n": number, "t": round(time.time(), 3), "role": self.context.role, "tool": tool,
                                  "category": category, "arguments": arguments, "status": status,
                                  "digest": digest, "seconds": round(seconds, 3), **(extra or {})})

    def observe(self, tool: str, arguments: dict[str, Any], answer: str, seconds: float) -> None:
        """Retrieval calls are logged like the others (see :func:`pytest_forall.tools.mcp_server.build_server`)."""
        self.log_call(tool, arguments, "ok", "", seconds)

    def _run(self, tool: str, arguments: dict[str, Any], body: Callable[[], _Outcome]) -> str:
        started = time.monotonic()
        try:
            outcome = body()
        except ToolError as exc:
            self.log_call(tool, arguments, f"refused: {exc}", "", time.monotonic() - started)
            raise
        except Exception as exc:
            self.log_call(tool, arguments, f"crashed: {type(exc).__name__}", "", time.monotonic() - started)
            raise
        seconds = time.monotonic() - started
        self.log_call(tool, arguments, outcome.status, outcome.digest, seconds, outcome.logged)
        if outcome.record:
            self._append(SUBMISSIONS, {"tool": tool, "role": self.context.role, "t": round(time.time(), 3),
                                       "digest": outcome.digest, "status": outcome.status,
                                       "seconds": round(seconds, 3), **outcome.record})
        return outcome.text

    # -- shared steps ---------------------------------------------------------------------------------

    def _check_task(self, task: str) -> None:
        if task and task != self.context.task.task_id:
            raise ToolError(f"this server serves one task only: {self.context.task.task_id}")

    def _candidate(self) -> bytes:
        """The candidate's bytes, read without following a symlink the agent planted; never written."""
        data = ws.read_candidate(self.context.workspace, self.context.task.candidate_name)
        if data is None:
            raise ToolError(f"there is no regular file {self.context.task.candidate_name} (call start())")
        return data

    def _charge(self) -> None:
        if self.charge_compile is not None and not self.charge_compile():
            raise ToolError("the compile budget of this item is spent")

    def _compile(self, data: bytes) -> _Outcome:
        """Elaborate a private copy of ``data`` the way the verifier's elaboration layer does; no verdict."""
        task, digest = self.context.task, sha256_bytes(data)
        build = Path(tempfile.mkdtemp(prefix="forall-tool-"))
        try:
            template = self.prover.check_template(task, build, self.context.timeout)
            if not template.ok:
                reason = template.infra or template.first_error
                return _Outcome(f"{STATUS_PREFIX}infra\nsha256: {digest}\nthe template does not compile here: "
                                f"{reason}", "infra", digest, {"reason": reason})
            candidate = build / "cand" / task.candidate_name
            candidate.parent.mkdir(parents=True, exist_ok=True)
            candidate.write_bytes(data)
            compiled = self.prover.compile(task, build, candidate, self.context.timeout)
            lines = _diagnostics(compiled.messages, build)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        status = "infra" if compiled.infra else "ok" if compiled.ok else "error"
        if compiled.infra:
            lines.insert(0, compiled.infra)
        summary = {"ok": "compiles", "error": "does not compile", "infra": "the prover could not run"}[status]
        text = "\n".join([f"{STATUS_PREFIX}{status}", f"sha256: {digest}", f"{task.candidate_name} {summary}", *lines])
        errors = sum(1 for m in compiled.messages if m.get("severity") == "error")
        return _Outcome(text, status, digest, {"errors": errors, "timed_out": compiled.timed_out})

    # -- actor ----------------------------------------------------------------------------------------

    def start(self, task: str = "") -> str:
        """The task: its exact template text, and the state of the file to edit (recreated if it is missing).
        Call it first."""

        def body() -> _Outcome:
            self._check_task(task)
            item = self.context.task
            existed = ws.read_candidate(self.context.workspace, item.candidate_name)
            ws.prepare(self.context.workspace.parent, self.context.workspace.name, item, reset=False)
            data = self._candidate()
            state = ("missing, so it was recreated from the template" if existed is None
                     else "unchanged from the template" if data == item.template.encode() else "modified")
            offered = self.offered()
            if offered:
                threading.Thread(target=self._proof_session().warm, name="forall-session-warm", daemon=True).start()
            text = (f"{ws.task_brief(item)}\nWorkspace: {self.context.workspace}\n"
                    f"{item.candidate_name}: sha256 {sha256_bytes(data)}, {state}.\n"
                    "Edit that file; compile() shows the prover's diagnostics for it, submit() runs the full "
                    f"verifier on it and records the verdict.{' ' + offered.brief if offered else ''}\n\n"
                    f"--- {item.candidate_name} as given (the exact template) ---\n{item.template}")
            return _Outcome(text, digest=sha256_bytes(data))

        return self._run("start", {"task": task}, body)

    def compile(self) -> str:
        """Compile the current candidate file with the prover: deterministic diagnostics, no verdict
        (submit() judges). The first line is `status: ok|error|infra`."""

        def body() -> _Outcome:
            data = self._candidate()
            self._charge()
            outcome = self._compile(data)
            outcome.record = {}
            return outcome

        return self._run("compile", {}, body)

    def submit(self) -> str:
        """Run the full verifier on the current candidate file and record its digest and verdict.
        The first line is `status: accept|reject|infra`."""

        def body() -> _Outcome:
            data = self._candidate()
            self._charge()
            verdict = verify_candidate(self.context.task, self.prover, data, timeout=self.context.timeout)
            lines = [f"{STATUS_PREFIX}{verdict.verdict}", f"sha256: {verdict.digest}",
                     f"verdict: {verdict.verdict}{' (strict)' if verdict.strict else ''}"]
            for layer in verdict.layers:
                mark = {True: "ok", False: "FAIL", None: "not judged"}[layer.ok]
                reason = f": {layer.reason[:2000]}" if layer.reason and layer.ok is not True else ""
                lines.append(f"  {mark} {layer.name}{reason}")
            record = {"verdict": verdict.verdict, "strict": verdict.strict, "reason": verdict.reason,
                      "axioms": list(verdict.axioms), "layers": [[layer.name, layer.ok] for layer in verdict.layers]}
            return _Outcome("\n".join(lines), verdict.verdict, verdict.digest, record)

        return self._run("submit", {}, body)

    # -- reviewer -------------------------------------------------------------------------------------

    def review_start(self, task: str = "") -> str:
        """The statement as given and the SHA-256 of the candidate under review (your verdict must name it)."""

        def body() -> _Outcome:
            self._check_task(task)
            item = self.context.task
            digest = sha256_bytes(self._candidate())
            text = (f"Review: does `{item.candidate_name}` prove `{item.theorem_name}` of task {item.task_id} "
                    "faithfully (statement, definitions and answer unchanged in meaning, nothing assumed that "
                    f"the problem does not give)?\nCandidate {item.candidate_name}: sha256 {digest}\n"
                    "review_compile() compiles it and records the evidence for this digest.\n\n"
                    f"--- the statement as given ---\n{item.template}")
            return _Outcome(text, digest=digest)

        return self._run("review_start", {"task": task}, body)

    def review_compile(self) -> str:
        """Compile the candidate under review (a private copy: nothing here is written) and record the
        evidence bound to its digest. The first line is `status: ok|error|infra`."""

        def body() -> _Outcome:
            data = self._candidate()
            self._charge()
            return self._compile(data)

        return self._run("review_compile", {}, body)

    # -- actor: interactive ---------------------------------------------------------------------------

    def offered(self) -> ProofTools | None:
        """The actor gets goals/try/query when the prover can hold a warm session here (never the reviewer)."""
        return proof_tools(self.prover) if self.context.role == ACTOR else None

    def interactive(self) -> bool:
        return self.offered() is not None

    def _proof_session(self) -> ProofSession:
        with self._session_lock:
            if self._session is None:
                assert isinstance(self.prover, Interactive)
                self._session = self.prover.proof_session(self.context.task, self.context.timeout,
                                                          self.context.excluded)
            return self._session

    def close(self) -> None:
        """End the warm session (its prover process and private directory)."""
        with self._session_lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def _interact(self, tool: str, arguments: dict[str, Any],
                  ask: Callable[[ProofSession, bytes], SessionAnswer], data: bytes | None = None) -> str:
        """One interactive call: the bytes it read (the candidate, else ``data``) digested first, the session's
        answer after; refusals are one-line tool errors, a restart is logged as infra, never as the proof's."""

        def body() -> _Outcome:
            read = self._candidate() if data is None else data
            digest = sha256_bytes(read)
            try:
                answer = ask(self._proof_session(), read)
            except SessionRefused as exc:
                raise ToolError(str(exc)) from None
            text = f"sha256: {digest}\n{STATUS_PREFIX}{answer.status}\n{answer.text}"
            logged = {"restarted": answer.restarted} if answer.restarted else {}
            return _Outcome(text, answer.status, digest, logged=logged)

        return self._run(tool, arguments, body)

    def interactive_tools(self) -> list[Callable[..., str]]:
        """goals, try, query (``try`` is a Python keyword, so the functions are named here); their descriptions
        are the language pack's (:class:`~pytest_forall.core.prover.ProofTools`)."""
        texts = self.offered()
        assert texts is not None

        def goals(line: int = 0) -> str:
            return self._interact("goals", {"line": line}, lambda session, data: session.goals(data, line))

        def try_(tactics: str, line: int = 0) -> str:
            return self._interact("try", {"tactics": tactics[:4000], "line": line},
                                  lambda session, data: session.try_tactics(data, line, tactics))

        def query(command: str) -> str:
            return self._interact("query", {"command": command[:4000]}, lambda session, _: session.query(command),
                                  data=self.context.task.template.encode("utf-8"))

        try_.__name__ = "try"
        goals.__doc__, try_.__doc__, query.__doc__ = texts.goals, texts.try_, texts.query
        return [goals, try_, query]

    def for_role(self) -> list[Callable[..., str]]:
        tools = [getattr(self, name) for name in ROLE_TOOLS[self.context.role]]
        return tools + (self.interactive_tools() if self.interactive() else [])


# --- serving -------------------------------------------------------------------------------------------

def instructions(context: ToolContext, offered: ProofTools | None = None) -> str:
    if context.role == REVIEWER:
        text = ("Review tools for one submitted proof: review_start() gives the statement and the candidate's "
                "SHA-256; review_compile() compiles the candidate and records the evidence.")
    else:
        text = ("Benchmark tools for one task: start() gives the exact template and the workspace state; "
                "compile() shows the prover's diagnostics; submit() runs the full verifier and records the verdict.")
        if offered:
            text += " " + offered.brief
    if context.retrieval_root:
        text += (" lookup/search/usages/outline find library declarations (statements only, no proofs; "
                 "matching is textual).")
    return text


def build_item_server(context: ToolContext, prover: Prover, key: bytes,
                      charge_compile: Callable[[], bool] | None = None,
                      tools: BenchmarkTools | None = None) -> MCPServer:
    """The item's MCP server: the role's benchmark tools, plus retrieval when ``retrieval_root`` is set."""
    tools = tools or BenchmarkTools(context, prover, key, charge_compile)
    context.audit_dir.mkdir(parents=True, exist_ok=True)
    if context.retrieval_root:
        from pytest_forall.retrieval.index import DEFAULT_CACHE_DIR, build_index

        cache = Path(context.retrieval_cache) if context.retrieval_cache else DEFAULT_CACHE_DIR
        declarations, _ = build_index(Path(context.retrieval_root), cache)
        return build_server(declarations, excluded=context.excluded, extra_tools=tools.for_role(),
                            observe=tools.observe, name=SERVER_NAME,
                            instructions=instructions(context, tools.offered()))
    server = MCPServer(SERVER_NAME, instructions=instructions(context, tools.offered()), log_level="WARNING")
    for tool in tools.for_role():
        server.add_tool(tool, structured_output=False)
    return server


def item_server_from_file(path: Path, key: bytes) -> MCPServer:
    """``forall mcp --item-context``: a server from a sealed context file, with the prover made from its options."""
    from pytest_forall.core.registry import builtin_plugin_manager

    context = read_context(path, key)
    prover = builtin_plugin_manager().hook.pytest_forall_make_prover(name=context.prover,
                                                                     options=context.prover_options)
    if prover is None:
        raise ContextError(f"no installed prover backend is called {context.prover!r}")
    return build_item_server(context, prover, key)


class ItemTools:
    """Serve one item's tools from this process for as long as the ``with`` block runs.

    ``with ItemTools(context, prover) as tools:`` then pass ``tools.mcp_servers()`` as the frontend's
    ``options["mcp_servers"]`` and ``tools.env()`` into ``options["env"]``; afterwards
    ``tools.summary()`` and ``tools.submissions()`` read the sealed records back.
    """

    def __init__(self, context: ToolContext, prover: Prover,
                 charge_compile: Callable[[], bool] | None = None) -> None:
        self.key = secrets.token_bytes(32)
        self.context = context
        self.prover = prover
        self.charge_compile = charge_compile
        self.context_path = context.audit_dir / CONTEXT_FILE
        self._http: _HttpThread | None = None
        self.tools: BenchmarkTools | None = None

    @property
    def url(self) -> str:
        return self.context.url

    def offered(self) -> ProofTools | None:
        """The interactive tools this server offers (their texts), or None."""
        return self.tools.offered() if self.tools is not None else None

    def __enter__(self) -> Self:
        self.tools = BenchmarkTools(self.context, self.prover, self.key, self.charge_compile)
        server = build_item_server(self.context, self.prover, self.key, self.charge_compile, self.tools)
        self._http = _HttpThread(server)
        self.context = replace(self.context, url=f"http://127.0.0.1:{self._http.port}/mcp")
        self.context_path = write_context(self.context, self.key)
        self._http.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._http is not None:
            self._http.stop()
            self._http = None
        if self.tools is not None:
            self.tools.close()

    def mcp_servers(self) -> dict[str, dict[str, Any]]:
        """The frontend option ``mcp_servers`` that registers this server (see docs/tools.md)."""
        return {SERVER_NAME: {"url": self.url}}

    def env(self) -> dict[str, str]:
        """Variables for the agent's environment, so ``forall compile`` etc. in its shell reach this server."""
        return {CONTEXT_ENV: str(self.context_path), URL_ENV: self.url}

    def summary(self) -> dict[str, Any]:
        return summarize_tool_calls(self.context.audit_dir, self.key)

    def submissions(self) -> list[dict[str, Any]]:
        """Authentic submission and review-compile records, oldest first."""
        return read_records(self.context.audit_dir, SUBMISSIONS, self.key)[0]


class _HttpThread:
    """uvicorn serving the server's streamable-HTTP app on a socket bound before start, so the port is known."""

    def __init__(self, server: MCPServer) -> None:
        import uvicorn

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"forall-tools-{self.port}", daemon=True)

    def start(self, timeout: float = 20.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the item's tool server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


def open_item_tools(*, task: Task, role: str, workspace: Path, audit_dir: Path, prover: Prover, timeout: float,
                    retrieval_root: str, charge_compile: Callable[[], bool] | None) -> ItemTools:
    """The item's tools for one agent session: the protocol's ``open_tools`` (a context manager)."""
    context = ToolContext(task=task, role=role, workspace=workspace, audit_dir=audit_dir, prover=prover.name,
                          timeout=timeout, retrieval_root=retrieval_root,
                          excluded=tuple(task.meta.get("retrieval_exclude") or (task.theorem_name,)))
    return ItemTools(context, prover, charge_compile=charge_compile)
