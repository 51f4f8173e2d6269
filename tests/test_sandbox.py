"""The sandbox against hostile commands: real bwrap, real processes, real sockets.

Each test runs a program that tries one escape and checks both that it failed and what the audit says.
Long-lived processes carry :data:`MARKER` in their argv so the host can prove none of them survived.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import socketserver
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, require_tool
from pytest_forall.cli import sandbox as sandbox_cli
from pytest_forall.core.proc import ProcResult
from pytest_forall.core.workspace import read_candidate as safe_read
from pytest_forall.isolation import sandbox
from pytest_forall.isolation.sandbox import SandboxPolicy, probe_sandbox, run_sandboxed

MARKER = f"forall-sbx-test-{uuid.uuid4().hex}"
PYTHON = "/usr/bin/python3"
BENCHMARK_CHECKOUT = str(PUTNAM)


def _processes_with_marker() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and MARKER.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass  # exited while we looked
    return found


def _unreaped_children() -> list[int]:
    zombies = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            zombies.append(int(entry.name))
    return zombies


@pytest.fixture(scope="module", autouse=True)
def nothing_survives_the_module() -> Iterator[None]:
    """After every test here (timeouts, daemons, fork bombs included), no process of the suite is left."""
    yield
    assert _processes_with_marker() == []
    assert _unreaped_children() == []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "task_a"
    path.mkdir()
    return path


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    return tmp_path / "audit"


class _Service(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.accepted = 0
        super().__init__(("127.0.0.1", 0), _ReplyHandler)
        self.port: int = self.server_address[1]


class _ReplyHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _Service)
        server.accepted += 1
        request = self.rfile.readline().strip().decode()
        self.wfile.write(f"hello from {server.name}: {request}\n".encode())


@pytest.fixture
def services() -> Iterator[dict[str, _Service]]:
    """Two host-loopback TCP services: one the policy allows, one it does not."""
    running = {name: _Service(name) for name in ("allowed", "forbidden")}
    for service in running.values():
        threading.Thread(target=service.serve_forever, args=(0.05,), daemon=True).start()
    yield running
    for service in running.values():
        service.shutdown()
        service.server_close()


def run_python(code: str, policy: SandboxPolicy, audit_dir: Path, *args: str) -> ProcResult:
    return run_sandboxed([PYTHON, "-c", code, MARKER, *args], policy, audit_dir=audit_dir)


def audit_records(audit_dir: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (audit_dir / name).read_text().splitlines()]


def assert_sandbox_gone(result: ProcResult) -> None:
    assert result.extra["survivors"] == []
    assert not Path(f"/proc/{result.extra['sandbox_pid']}").exists()  # neither alive nor a zombie
    assert _processes_with_marker() == []


def test_probe_reports_a_working_sandbox() -> None:
    assert probe_sandbox() == ""


def test_sibling_workspace_and_benchmark_checkout_do_not_exist_inside(workspace: Path,
                                                                      audit_dir: Path) -> None:
    sibling = workspace.parent / "task_b"
    sibling.mkdir()
    (sibling / "notes.txt").write_text("SIBLING-SECRET")
    assert Path(BENCHMARK_CHECKOUT).is_dir()  # the host has it; the sandbox must not
    probes = [str(sibling / "notes.txt"), str(sibling), f"/workspace/../{sibling.name}/notes.txt",
              BENCHMARK_CHECKOUT, "/work", "/root", str(workspace.parent)]
    code = ("import os, sys\n"
            "for path in sys.argv[2:]:\n"
            "    try:\n        print(path, open(path).read())\n"
            "    except OSError as exc:\n        print(path, type(exc).__name__, os.path.lexists(path))\n")
    result = run_python(code, SandboxPolicy(workspace=workspace), audit_dir, *probes)
    assert result.returncode == 0, result.stderr
    assert "SIBLING-SECRET" not in result.stdout
    for path in probes:
        assert f"{path} FileNotFoundError False" in result.stdout
    # filesystem denials make no event (the paths do not exist); the policy in the audit is the trail
    [record] = audit_records(audit_dir, "sandbox.jsonl")
    assert record["policy"]["workspace"] == str(workspace)
    assert record["policy"]["ro_binds"] == []
    argv = record["bwrap_argv"]
    binds = [argv[i + 1] for i, arg in enumerate(argv) if arg.endswith("bind")]
    assert str(sibling) not in binds and BENCHMARK_CHECKOUT not in binds


def test_readonly_toolchain_and_usr_cannot_be_written(workspace: Path, audit_dir: Path,
                                                       tmp_path: Path) -> None:
    toolchain = tmp_path / "toolchain"
    (toolchain / "bin").mkdir(parents=True)
    tool = toolchain / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho tool-ok\n")
    tool.chmod(0o755)
    policy = SandboxPolicy(workspace=workspace, ro_binds=((toolchain, "/opt/toolchain"),),
                           env={"PATH": "/opt/toolchain/bin:/usr/bin"})
    script = ("tool; echo x > /opt/toolchain/bin/tool; echo x > /opt/toolchain/evil; echo x > /usr/evil; "
              "echo proof > /workspace/proof.v")
    result = run_sandboxed(["sh", "-c", script], policy, audit_dir=audit_dir)
    assert "tool-ok" in result.stdout
    assert result.stderr.count("Read-only file system") == 3
    assert tool.read_text() == "#!/bin/sh\necho tool-ok\n"
    assert not (toolchain / "evil").exists() and not Path("/usr/evil").exists()
    assert (workspace / "proof.v").read_text() == "proof\n"


DIRECT_NETWORK = """
import socket, sys
forbidden_port, udp_port = int(sys.argv[2]), int(sys.argv[3])
try:
    socket.create_connection(("127.0.0.1", forbidden_port), timeout=5)
    print("tcp connected")
except OSError as exc:
    print("tcp", type(exc).__name__)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for target in [("10.0.2.3", 53), ("8.8.8.8", 53)]:
    try:
        udp.sendto(b"x", target)
        print("udp sent", target)
    except OSError as exc:
        print("udp", target[0], exc.errno)
udp.sendto(b"x", ("127.0.0.1", udp_port))  # reaches the sandbox's own lo, not the host's
try:
    socket.getaddrinfo("example.com", 443)
    print("dns resolved")
except socket.gaierror:
    print("dns failed")
"""


def test_a_real_prover_checks_a_proof_inside_the_limits(workspace: Path, audit_dir: Path) -> None:
    require_tool("coqc")
    (workspace / "Add.v").write_text("Theorem one_plus_one : 1 + 1 = 2.\nProof. reflexivity. Qed.\n")
    findlib_conf = Path("/etc/ocamlfind.conf")  # coqc's plugin loader dies without it; /etc is not bound
    policy = SandboxPolicy(workspace=workspace, ro_binds=((findlib_conf, str(findlib_conf)),),
                           wall_seconds=60, memory_mb=1024, max_processes=64)
    result = run_sandboxed(["coqc", "Add.v"], policy, audit_dir=audit_dir)
    assert result.returncode == 0, result.stderr
    assert (workspace / "Add.vo").is_file() and not result.extra["oom"]


def test_direct_tcp_udp_and_dns_fail_even_with_a_proxy(workspace: Path, audit_dir: Path,
                                                        services: dict[str, _Service]) -> None:
    host_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    host_udp.bind(("127.0.0.1", 0))
    host_udp.settimeout(0.3)
    policy = SandboxPolicy(workspace=workspace, allow=(f"127.0.0.1:{services['allowed'].port}",))
    result = run_python(DIRECT_NETWORK, policy, audit_dir, str(services["forbidden"].port),
                        str(host_udp.getsockname()[1]))
    assert result.returncode == 0, result.stderr
    assert "tcp ConnectionRefusedError" in result.stdout
    assert f"udp 10.0.2.3 {errno.ENETUNREACH}" in result.stdout
    assert f"udp 8.8.8.8 {errno.ENETUNREACH}" in result.stdout
    assert "dns failed" in result.stdout
    assert services["forbidden"].accepted == 0
    with pytest.raises(TimeoutError):
        host_udp.recv(16)
    host_udp.close()
    # none of this reached the proxy, so there is nothing to log: the kernel refused it
    assert not (audit_dir / "access.jsonl").exists()


PROXY_CLIENT = """
import os, socket, sys

def read_all(sock):
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data

def via_proxy(target):
    sock = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    sock.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += sock.recv(1)
    status = head.split()[1].decode()
    if status == "200":
        sock.sendall(b"ping\\n")
        status += " " + read_all(sock).decode().strip()
    print(target, status)

allowed, forbidden = sys.argv[2], sys.argv[3]
for target in ["evil.example:443", forbidden, allowed]:
    via_proxy(target)
mirrored = socket.create_connection(("127.0.0.1", int(allowed.rpartition(":")[2])), timeout=10)
mirrored.sendall(b"mirror\\n")
print("mirrored", read_all(mirrored).decode().strip())
print("HTTPS_PROXY", os.environ["HTTPS_PROXY"])
"""


def test_proxy_allows_only_the_allowlist_and_logs_every_attempt(workspace: Path, audit_dir: Path,
                                                                 services: dict[str, _Service]) -> None:
    allowed = f"127.0.0.1:{services['allowed'].port}"
    forbidden = f"127.0.0.1:{services['forbidden'].port}"
    result = run_python(PROXY_CLIENT, SandboxPolicy(workspace=workspace, allow=(allowed,)), audit_dir,
                        allowed, forbidden)
    assert result.returncode == 0, result.stderr
    assert "evil.example:443 403" in result.stdout
    assert f"{forbidden} 403" in result.stdout
    assert f"{allowed} 200 hello from allowed: ping" in result.stdout
    assert "mirrored hello from allowed: mirror" in result.stdout
    assert "HTTPS_PROXY http://127.0.0.1:3128" in result.stdout
    assert services["forbidden"].accepted == 0 and services["allowed"].accepted == 2
    assert result.extra["access_log"] == str(audit_dir / "access.jsonl")
    log = audit_records(audit_dir, "access.jsonl")
    assert {entry["run"] for entry in log} == {result.extra["run"]}
    refused = {(e["host"], e["port"], e["status"]) for e in log if e["decision"] == "refused"}
    assert refused == {("evil.example", 443, 403), ("127.0.0.1", services["forbidden"].port, 403)}
    tunnels = [e for e in log if e["decision"] == "allowed"]
    reply = len("hello from allowed: ping\n")
    assert len(tunnels) == 2
    assert all(e["port"] == services["allowed"].port and e["status"] == 200 for e in tunnels)
    assert sorted((e["bytes_up"], e["bytes_down"]) for e in tunnels) == [(len("ping\n"), reply),
                                                                          (len("mirror\n"), reply + 2)]
    assert all(e["duration"] >= 0 for e in log)
    [record] = audit_records(audit_dir, "sandbox.jsonl")
    run_dir = Path(record["bwrap_argv"][record["bwrap_argv"].index("/etc/passwd") - 1]).parent.parent
    assert run_dir.name.startswith("forall-sbx-") and not run_dir.exists()  # proxy socket and all removed
    assert not [t for t in threading.enumerate() if t.name.startswith("forall-netproxy")]


def test_setsid_daemon_is_killed_when_the_command_ends(workspace: Path, audit_dir: Path) -> None:
    script = (f"setsid {PYTHON} -c 'import time; time.sleep(300)' {MARKER} </dev/null >/dev/null 2>&1 & "
              "sleep 0.5; echo spawned")
    result = run_sandboxed(["sh", "-c", script], SandboxPolicy(workspace=workspace, wall_seconds=30),
                           audit_dir=audit_dir)
    assert (result.returncode, result.stdout) == (0, "spawned\n")
    assert result.duration < 10 and not result.timed_out
    assert result.extra["leftovers_killed"] >= 1
    assert_sandbox_gone(result)


def test_timeout_returns_124_and_kills_the_whole_tree(workspace: Path, audit_dir: Path) -> None:
    sleeper = f"{PYTHON} -c 'import time; time.sleep(300)' {MARKER}"
    script = f"setsid {sleeper} </dev/null >/dev/null 2>&1 & {sleeper} & echo started; wait"
    result = run_sandboxed(["sh", "-c", script], SandboxPolicy(workspace=workspace, wall_seconds=1.0),
                           audit_dir=audit_dir)
    assert result.returncode == 124 and result.timed_out and result.extra["timed_out"]
    assert 1.0 <= result.duration < 5
    assert result.stdout == "started\n"
    assert result.extra["leftovers_killed"] >= 3  # sh and both sleepers
    assert_sandbox_gone(result)
    [record] = audit_records(audit_dir, "sandbox.jsonl")
    assert record["outcome"]["returncode"] == 124 and record["outcome"]["timed_out"]


FORK_BOMB = """
import os, time
forks = 0
try:
    while forks < 1000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forks += 1
except OSError as exc:
    print("stopped", forks, exc.errno)
"""


def test_fork_bomb_stops_at_the_pids_limit(workspace: Path, audit_dir: Path) -> None:
    result = run_python(FORK_BOMB, SandboxPolicy(workspace=workspace, max_processes=32, wall_seconds=30),
                        audit_dir)
    assert result.returncode == 0, result.stderr
    _, forks, error = result.stdout.split()
    assert int(forks) < 32 and int(error) == errno.EAGAIN
    assert result.extra["pids_limit_hit"] is True and result.extra["limits"]["pids"] == "cgroup-v1"
    assert result.duration < 10
    assert_sandbox_gone(result)


ALLOCATE_512_MIB = """
chunk = bytearray(b"x") * (512 << 20)
print("survived", len(chunk))
"""


def test_allocation_past_the_memory_limit_is_killed(workspace: Path, audit_dir: Path) -> None:
    result = run_python(ALLOCATE_512_MIB, SandboxPolicy(workspace=workspace, memory_mb=128), audit_dir)
    assert "survived" not in result.stdout
    assert result.returncode == 128 + 9
    assert result.extra["oom"] is True and result.extra["limits"]["memory"] == "cgroup-v1"
    assert_sandbox_gone(result)


def test_memory_limit_falls_back_to_rlimit_as_without_a_memory_cgroup(
        workspace: Path, audit_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "_own_cgroup_dirs", dict)
    result = run_python(ALLOCATE_512_MIB, SandboxPolicy(workspace=workspace, memory_mb=128), audit_dir)
    assert "survived" not in result.stdout
    assert "MemoryError" in result.stderr and result.returncode == 1
    assert result.extra["limits"]["memory"] == "rlimit-as" and result.extra["oom"] is None


def test_inherited_fds_are_not_visible_inside(workspace: Path, audit_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "solution.lean"
    secret.write_text("HOST-SECRET")
    leaked = os.open(secret, os.O_RDONLY)
    os.set_inheritable(leaked, True)
    code = ("import os, sys\nprint(sorted(os.listdir('/proc/self/fd')))\n"
            "try:\n    print(os.read(int(sys.argv[2]), 100))\nexcept OSError as exc:\n    print(exc.errno)\n")
    try:
        result = run_python(code, SandboxPolicy(workspace=workspace), audit_dir, str(leaked))
    finally:
        os.close(leaked)
    assert result.stdout.splitlines() == ["['0', '1', '2', '3']", str(errno.EBADF)]


def test_seccomp_denies_terminal_injection_and_new_namespaces(workspace: Path, audit_dir: Path) -> None:
    code = ("import fcntl, termios\n"
            "try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n"
            "except OSError as exc:\n    print('tiocsti', exc.errno)\n"
            "print([l for l in open('/proc/self/status') if l.startswith('Seccomp:')][0].split()[1])\n")
    result = run_python(code, SandboxPolicy(workspace=workspace), audit_dir)
    # without the filter TIOCSTI on /dev/null is ENOTTY; EPERM means the filter answered
    assert result.stdout.splitlines() == [f"tiocsti {errno.EPERM}", "2"]
    nested = run_sandboxed(["unshare", "--user", "true"], SandboxPolicy(workspace=workspace),
                           audit_dir=audit_dir)
    assert nested.returncode != 0 and "Operation not permitted" in nested.stderr


def test_safe_read_never_follows_planted_symlinks(workspace: Path, audit_dir: Path, tmp_path: Path) -> None:
    host_secret = tmp_path / "host_secret.txt"
    host_secret.write_text("HOST-SECRET")
    script = (f"ln -s {host_secret} result.txt; ln -s {tmp_path} dirlink; mkdir -p sub; "
              "echo proof > sub/proof.v; mkfifo pipe; head -c 2000 /dev/zero > big.bin")
    result = run_sandboxed(["sh", "-c", script], SandboxPolicy(workspace=workspace), audit_dir=audit_dir)
    assert result.returncode == 0, result.stderr
    assert (workspace / "result.txt").read_text() == "HOST-SECRET"  # open() would follow the planted link
    assert safe_read(workspace, "result.txt") is None
    assert safe_read(workspace, "dirlink/host_secret.txt") is None
    assert safe_read(workspace, "pipe") is None  # refused without blocking
    assert safe_read(workspace, "sub") is None
    assert safe_read(workspace, "missing.v") is None
    assert safe_read(workspace, "big.bin", max_bytes=1000) is None
    assert safe_read(workspace, "sub/proof.v") == b"proof\n"
    with pytest.raises(ValueError):
        safe_read(workspace, "../host_secret.txt")


def test_stdin_env_and_cwd_reach_the_command(workspace: Path, audit_dir: Path) -> None:
    (workspace / "sub").mkdir()
    policy = SandboxPolicy(workspace=workspace, env={"GREETING": "hi"})
    result = run_sandboxed(["sh", "-c", 'pwd; echo "$HOME $GREETING"; cat; echo; env'], policy,
                           audit_dir=audit_dir, stdin="from stdin", cwd_inside="/workspace/sub")
    lines = result.stdout.splitlines()
    assert lines[:3] == ["/workspace/sub", "/workspace hi", "from stdin"]
    # the host environment is not inherited: only what the policy sets, plus what sh itself adds (PWD)
    names = {line.partition("=")[0] for line in lines[3:]}
    assert names == {"PATH", "HOME", "USER", "LOGNAME", "GREETING", "PWD"}


def test_unsandboxed_runs_are_recorded_as_such(workspace: Path, audit_dir: Path) -> None:
    policy = SandboxPolicy(workspace=workspace, sandbox="none", wall_seconds=0.5)
    done = run_sandboxed(["sh", "-c", "cat; pwd"], policy, audit_dir=audit_dir, stdin="in\n")
    slow = run_sandboxed(["sleep", "30"], policy, audit_dir=audit_dir)
    assert done.stdout == f"in\n{workspace}\n" and done.extra["sandbox"] == "none"
    assert slow.returncode == 124 and slow.extra["timed_out"]
    records = audit_records(audit_dir, "sandbox.jsonl")
    assert [r["policy"]["sandbox"] for r in records] == ["none", "none"]
    assert [r["outcome"]["sandbox"] for r in records] == ["none", "none"]
    assert records[0]["outcome"]["limits"]["network"] == "unrestricted"


def test_policy_validation_and_wire_form(workspace: Path, tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=workspace, ro_binds=((tmp_path, "/opt/tc"),),
                           allow=("api.example.com:443",), wall_seconds=5, memory_mb=256,
                           env={"API_KEY": "sk-secret"})
    wire = policy.to_wire()
    assert json.loads(json.dumps(wire)) == wire
    assert "sk-secret" not in json.dumps(wire) and wire["env_keys"] == ["API_KEY"]
    invalid: list[dict[str, Any]] = [
        {"allow": ("no-port",)}, {"ro_binds": ((tmp_path, "/proc/x"),)}, {"workspace_inside": "/usr"},
        {"workspace_inside": "rel"}, {"ro_binds": ((tmp_path, "/opt/../etc"),)}, {"memory_mb": 0},
        {"sandbox": "docker"}]
    for bad in invalid:
        with pytest.raises(ValueError):
            SandboxPolicy(workspace=workspace, **bad)
    with pytest.raises(ValueError, match="audit dir must be outside"):
        run_sandboxed(["true"], SandboxPolicy(workspace=workspace), audit_dir=workspace / ".audit")


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    sandbox_cli.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


def test_cli_runs_the_command_in_the_sandbox(workspace: Path, audit_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    common = ["sandbox", "--workspace", str(workspace), "--audit-dir", str(audit_dir)]
    assert _cli([*common, "--", "sh", "-c", "ls /; exit 3"]) == 3
    out, err = capsys.readouterr()
    assert "workspace" in out.split() and "home" not in out.split()
    assert f"audit {audit_dir / 'sandbox.jsonl'}" in err and "access log none" in err
    assert _cli([*common, "--wall", "0.5", "--allow", "127.0.0.1:9", "--", "sleep", "30"]) == 124
    assert f"access log {audit_dir / 'access.jsonl'}" in capsys.readouterr().err
    assert [r["outcome"]["returncode"] for r in audit_records(audit_dir, "sandbox.jsonl")] == [3, 124]


def test_missing_bwrap_is_reported_with_the_fix(monkeypatch: pytest.MonkeyPatch, workspace: Path,
                                                audit_dir: Path) -> None:
    monkeypatch.setattr(sandbox, "BWRAP", "/nonexistent/bwrap")
    message = probe_sandbox()
    assert "apt-get install -y bubblewrap" in message and "--forall-sandbox=none" in message
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        run_sandboxed(["true"], SandboxPolicy(workspace=workspace), audit_dir=audit_dir)
    [record] = audit_records(audit_dir, "sandbox.jsonl")  # a launch that failed is on record too
    assert "bubblewrap" in record["outcome"]["error"]


def test_a_sandbox_bwrap_cannot_build_is_an_infrastructure_error(workspace: Path, audit_dir: Path,
                                                                 tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=workspace, ro_binds=((tmp_path / "no-such-toolchain", "/opt/tc"),))
    with pytest.raises(sandbox.SandboxUnavailable, match="no-such-toolchain"):
        run_sandboxed(["true"], policy, audit_dir=audit_dir)
