"""PID 1 of a sandbox: network forwarder, command launcher, reaper. Runs *inside* bwrap, stdlib only.

Usage (built by :mod:`pytest_forall.isolation.sandbox`)::

    python3 -I -S sbx_init.py --status-fd N [--proxy SOCK --listen PORT [--mirror PORT=HOST:PORT]...] -- CMD

Being PID 1 (``bwrap --as-pid-1``) is the point: when the command exits, this process exits with its status,
and the kernel kills every other process of the pid namespace (``setsid`` daemons included) before bwrap
sees the exit, so nothing outlives the command and nothing becomes a zombie outside. Signals sent from
inside the sandbox to PID 1 are ignored by the kernel, so the command cannot take the forwarder down.

With ``--proxy``, 127.0.0.1:PORT is bound *before* the command starts (no race) and piped to the host proxy's
Unix socket; each ``--mirror`` binds 127.0.0.1:PORT and tunnels it with ``CONNECT HOST:PORT``, so an
allowlisted host-loopback service keeps its usual address. The status fd gets one line when the sandbox is up
and one (``{"exit_code": N, "leftovers": K}``, with ``"signal": S`` when a signal ended it) when the command has ended.

Every sandboxed command pays for this file's start-up, so it imports only ``os``, ``signal`` and ``sys``
unless the network is on (``json``, ``typing``, ``asyncio`` would cost 10-80 ms here).
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket  # imported for real, lazily, only on the network path

CHUNK = 65536


def main(argv: list[str]) -> int:
    options, command = _parse(argv[1:])
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python's handler would let `kill -INT 1` end the sandbox
    status_fd = int(options["--status-fd"][0])
    os.set_inheritable(status_fd, False)
    os.write(status_fd, b'{"started": true}\n')  # tells the host that bwrap built the sandbox
    if "--proxy" in options:
        _start_forwarder(options["--proxy"][0], int(options["--listen"][0]), options.get("--mirror", []))
    try:
        child = os.posix_spawnp(command[0], command, _initial_environment(),
                                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as exc:
        print(f"sandbox: cannot execute {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    while True:
        pid, wait_status = os.wait()  # reaps orphans too: we are their reaper
        if pid == child:
            break
    code = os.waitstatus_to_exitcode(wait_status)
    exit_code = 128 - code if code < 0 else code
    # the signal apart from the status: an exit status of 137 is the command's own word, a SIGKILL is not
    signal_part = f', "signal": {-code}' if code < 0 else ""
    os.write(status_fd, f'{{"exit_code": {exit_code}{signal_part}, "leftovers": {_count_other_processes()}}}\n'.encode())
    return exit_code


def _parse(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``--flag value`` pairs up to ``--``, then the command (argparse would cost start-up time)."""
    split = args.index("--")
    options: dict[str, list[str]] = {}
    for flag, value in zip(args[:split:2], args[1:split:2]):
        options.setdefault(flag, []).append(value)
    return options, args[split + 1:]


def _initial_environment() -> dict[str, str]:
    """The environment bwrap set, as at exec: os.environ has Python's locale coercion (LC_CTYPE) in it."""
    with open("/proc/self/environ", "rb") as environ:
        entries = [entry.partition(b"=") for entry in environ.read().split(b"\0") if entry]
    return {os.fsdecode(key): os.fsdecode(value) for key, _, value in entries}


def _count_other_processes() -> int:
    """Processes still alive when the command ended; the kernel kills them as soon as we exit."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    return sum(1 for name in os.listdir("/proc") if name.isdigit() and name != "1")


def _start_forwarder(proxy_socket: str, listen_port: int, mirrors: list[str]) -> None:
    import socket
    import threading

    def listen(port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
        return sock

    listeners = [(listen(listen_port), "")]
    for mirror in mirrors:
        port, _, endpoint = mirror.partition("=")
        listeners.append((listen(int(port)), endpoint))
    for listener, endpoint in listeners:
        threading.Thread(target=_accept_forever, args=(listener, proxy_socket, endpoint), daemon=True).start()


def _accept_forever(listener: socket.socket, proxy_socket: str, endpoint: str) -> None:
    import threading

    while True:
        client, _ = listener.accept()
        threading.Thread(target=_connect_and_splice, args=(client, proxy_socket, endpoint),
                         daemon=True).start()


def _connect_and_splice(client: socket.socket, proxy_socket: str, endpoint: str) -> None:
    """Plain threads and blocking sockets: importing asyncio would add ~80 ms to every sandbox start."""
    import socket
    import threading

    with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as proxy:
        try:
            proxy.connect(proxy_socket)
            if endpoint:  # a mirrored port: open the tunnel ourselves, then behave like a plain socket
                proxy.sendall(f"CONNECT {endpoint} HTTP/1.1\r\nHost: {endpoint}\r\n\r\n".encode())
                head = b""
                while b"\r\n\r\n" not in head and len(head) < 8192:
                    byte = proxy.recv(1)  # byte by byte: nothing after the head may be swallowed
                    if not byte:
                        return
                    head += byte
                if head.split(b" ", 2)[1:2] != [b"200"]:
                    return
            upstream = threading.Thread(target=_pump, args=(proxy, client), daemon=True)
            upstream.start()
            _pump(client, proxy)
            upstream.join()
        except OSError:
            pass


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until EOF, then half-close, so request/response protocols that rely on EOF still work."""
    import socket

    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


if __name__ == "__main__":
    status = main(sys.argv)
    sys.stderr.flush()
    os._exit(status)  # no interpreter teardown: the forwarder thread must not delay the exit
