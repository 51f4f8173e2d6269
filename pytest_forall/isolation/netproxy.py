"""The only way out of a sandbox's network namespace: a per-run HTTP CONNECT proxy on a Unix socket.

The sandbox has no network interface but ``lo``; its init forwards 127.0.0.1:3128 to this proxy's Unix
socket, which is bind-mounted in. So every connection the sandbox makes passes the allowlist here, and every
attempt (allowed or refused) becomes one JSON line in the run's access log. The proxy resolves names itself,
so the sandbox needs no DNS. It runs on its own event loop in a thread, started and stopped per run.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self

#: A CONNECT request head larger than this is refused (it is a few hundred bytes from any real client).
HEADER_LIMIT = 8192
HEADER_TIMEOUT = 10.0
UPSTREAM_CONNECT_TIMEOUT = 10.0
CHUNK = 65536

_REASONS = {200: "Connection Established", 400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed",
            502: "Bad Gateway"}


def parse_endpoint(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` -> (lower-case host, no trailing dot; port). ValueError if malformed."""
    host, sep, port_text = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.lower().rstrip(".")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536 or any(
            c in host for c in " /\\@[]"):
        raise ValueError(f"not a host:port endpoint: {text!r}")
    return host, int(port_text)


class ConnectProxy:
    """CONNECT-only proxy enforcing an exact ``host:port`` allowlist, logging one JSON line per attempt."""

    def __init__(self, socket_path: Path, allow: Iterable[str], access_log: Path, run_id: str) -> None:
        self.socket_path = socket_path
        self.allowed = frozenset(parse_endpoint(entry) for entry in allow)
        self.access_log = access_log
        self.run_id = run_id
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._tunnels: set[asyncio.Task[Any]] = set()
        self._ready = threading.Event()
        self._startup_error: OSError | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Return once the socket is listening, so the sandbox never races the proxy."""
        self._thread = threading.Thread(target=self._run, name=f"forall-netproxy-{self.run_id}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._loop is None:
            error = self._startup_error
            raise RuntimeError(f"network proxy failed to start: {error}") from error

    def stop(self) -> None:
        """Close the listener, cut open tunnels (logging them), and join the thread."""
        if self._loop is not None and self._stop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                raise RuntimeError("network proxy thread did not stop")
        self._thread = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(loop))
        except OSError as exc:  # e.g. the socket cannot be bound; start() raises it
            self._startup_error = exc
        finally:
            self._ready.set()
            loop.close()

    async def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_unix_server(self._handle, path=str(self.socket_path), limit=HEADER_LIMIT)
        self._loop = loop
        self._ready.set()
        await self._stop.wait()
        server.close()
        for task in list(self._tunnels):
            task.cancel()
        await asyncio.gather(*self._tunnels, return_exceptions=True)
        await server.wait_closed()

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tunnels.add(task)
        started = time.monotonic()
        record: dict[str, Any] = {"run": self.run_id, "decision": "refused", "host": "", "port": 0,
                                  "status": 400, "bytes_up": 0, "bytes_down": 0}
        try:
            await self._tunnel(client_reader, client_writer, record)
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError, TimeoutError, ValueError):
            pass  # the record says how far the attempt got
        finally:
            client_writer.close()
            record["duration"] = round(time.monotonic() - started, 3)
            record["ts"] = round(time.time(), 3)
            with self.access_log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(record, sort_keys=True) + "\n")
            self._tunnels.discard(task)

    async def _tunnel(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter,
                      record: dict[str, Any]) -> None:
        head = await asyncio.wait_for(client_reader.readuntil(b"\r\n\r\n"), HEADER_TIMEOUT)
        method, _, rest = head.decode("latin-1").partition(" ")
        target = rest.partition(" ")[0]
        record["method"] = method[:16]
        if method != "CONNECT":
            record["status"] = 405
            await _respond(client_writer, 405)
            return
        try:
            record["host"], record["port"] = host, port = parse_endpoint(target)
        except ValueError:
            record["host"] = target[:256]
            await _respond(client_writer, 400)
            return
        if (host, port) not in self.allowed:
            record["status"] = 403
            await _respond(client_writer, 403)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), UPSTREAM_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            record.update(status=502, decision="upstream_error", error=type(exc).__name__)
            await _respond(client_writer, 502)
            return
        record.update(status=200, decision="allowed")
        try:
            await _respond(client_writer, 200)
            await asyncio.gather(_pump(client_reader, upstream_writer, record, "bytes_up"),
                                 _pump(upstream_reader, client_writer, record, "bytes_down"))
        finally:
            upstream_writer.close()


async def _respond(writer: asyncio.StreamWriter, status: int) -> None:
    writer.write(f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Length: 0\r\n\r\n".encode())
    await writer.drain()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: dict[str, Any],
                counter: str) -> None:
    """Copy until EOF, then half-close, so request/response protocols that rely on EOF still work."""
    try:
        while data := await reader.read(CHUNK):
            record[counter] += len(data)
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except ConnectionError:
        writer.close()
