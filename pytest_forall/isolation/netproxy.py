"""The only way out of a sandbox's network namespace: a per-run HTTP CONNECT proxy on a Unix socket.

The sandbox has no network interface but ``lo``; its init forwards 127.0.0.1:3128 to this proxy's Unix
socket, which is bind-mounted in. So every connection the sandbox makes passes the allowlist here, and every
attempt (allowed or refused) becomes one JSON line in the run's access log. The proxy resolves names itself,
so the sandbox needs no DNS. It runs on its own event loop in a thread, started and stopped per run.

The log is also the harness's own account of an agent's traffic to its provider, which no process in the sandbox
can write: per tunnel the bytes each way, who closed first (``closed_by``), a reset (``reset``), and, when the
tunnel carries plaintext HTTP/1.x (a test provider on loopback, a self-hosted one), the requests and the response
statuses (``http``). TLS is opaque here: ``http`` is then ``{"opaque": true}``.
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


#: A plaintext message head longer than this is not HTTP as we know it: the sniffer stops (``opaque``).
SNIFF_HEAD_LIMIT = 65536
_METHODS = (b"GET ", b"POST ", b"HEAD ", b"PUT ", b"DELETE ", b"PATCH ", b"OPTIONS ")


class HttpSniffer:
    """Counts the HTTP/1.x messages of one direction of a tunnel, and the status of each response, by their
    framing (Content-Length, chunked); anything else (TLS, HTTP/2, a malformed head) makes it ``opaque`` and it
    stops looking: it never guesses a status out of a byte stream it cannot frame."""

    def __init__(self, responses: bool, methods: list[str] | None = None) -> None:
        self.responses = responses
        #: request methods in order, shared by both directions (a HEAD response has no body)
        self.methods: list[str] = methods if methods is not None else []
        self.messages = 0
        self.statuses: list[int] = []
        self.opaque = False
        self._buffer = bytearray()
        self._body = 0            # bytes of the current body (or chunk, with its CRLF) still to come
        self._chunked = False     # inside a chunked body, between chunks
        self._trailer = False
        self._until_close = False

    def feed(self, data: bytes) -> None:
        if self.opaque or self._until_close:
            return
        self._buffer += data
        while self._step():
            pass
        if len(self._buffer) > SNIFF_HEAD_LIMIT:
            self.opaque = True
            self._buffer.clear()

    def _step(self) -> bool:
        """Consume one framing element from the buffer; False when more bytes are needed (or it gave up)."""
        buffer = self._buffer
        if self._body:
            taken = min(self._body, len(buffer))
            del buffer[:taken]
            self._body -= taken
            return bool(buffer) and not self._body
        if self._chunked or self._trailer:
            end = buffer.find(b"\r\n")
            if end < 0:
                return False
            line = bytes(buffer[:end])
            del buffer[:end + 2]
            if self._trailer:
                self._trailer = bool(line)   # the empty line ends the trailer, and the message
                return True
            try:
                size = int(line.split(b";")[0].strip() or b"x", 16)
            except ValueError:
                self.opaque = True
                return False
            if size == 0:
                self._chunked, self._trailer = False, True
            else:
                self._body = size + 2
            return True
        if not buffer:
            return False
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            start = bytes(buffer[:8])
            looks_like = b"HTTP/1.".startswith(start[:7]) if self.responses else any(
                m.startswith(start[:len(m)]) or start.startswith(m) for m in _METHODS)
            self.opaque = not looks_like
            return False
        head = bytes(buffer[:end]).decode("latin-1")
        del buffer[:end + 4]
        return self._head(head)

    def _head(self, head: str) -> bool:
        first, *lines = head.split("\r\n")
        parts = first.split(" ")
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        if self.responses:
            if not first.startswith("HTTP/1.") or len(parts) < 2 or not parts[1].isdigit():
                self.opaque = True
                return False
            status = int(parts[1])
            if 100 <= status < 200:
                return True            # an interim response: the real one follows
            self.statuses.append(status)
            method = self.methods.pop(0) if self.methods else ""
            bodiless = method == "HEAD" or status in (204, 304)
        else:
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                self.opaque = True
                return False
            self.methods.append(parts[0])
            bodiless = False
        self.messages += 1
        if bodiless:
            return True
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._chunked = True
        elif headers.get("content-length", "").isdigit():
            self._body = int(headers["content-length"])
        elif self.responses:
            self._until_close = True   # the body runs to the end of the connection
            return False
        return True

    def to_wire(self) -> dict[str, Any]:
        if self.opaque and not self.messages:
            return {"opaque": True}
        return {"statuses": self.statuses} if self.responses else {"requests": self.messages}


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
        methods: list[str] = []
        sniffers = HttpSniffer(False, methods), HttpSniffer(True, methods)
        try:
            await _respond(client_writer, 200)
            await asyncio.gather(_pump(client_reader, upstream_writer, record, "bytes_up", sniffers[0]),
                                 _pump(upstream_reader, client_writer, record, "bytes_down", sniffers[1]))
        finally:
            upstream_writer.close()
            requests, responses = (sniffer.to_wire() for sniffer in sniffers)
            record["http"] = ({"opaque": True} if requests.get("opaque") or responses.get("opaque")
                              else {**requests, **responses})


async def _respond(writer: asyncio.StreamWriter, status: int) -> None:
    writer.write(f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Length: 0\r\n\r\n".encode())
    await writer.drain()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: dict[str, Any],
                counter: str, sniffer: HttpSniffer) -> None:
    """Copy until EOF, then half-close, so request/response protocols that rely on EOF still work. The first
    side to finish is recorded (``closed_by``), and a reset on either (``reset``)."""
    side = "client" if counter == "bytes_up" else "upstream"
    try:
        while data := await reader.read(CHUNK):
            record[counter] += len(data)
            sniffer.feed(data)
            writer.write(data)
            await writer.drain()
        record.setdefault("closed_by", side)
        if writer.can_write_eof():
            writer.write_eof()
    except ConnectionError as exc:
        record.setdefault("closed_by", side)
        record["reset"] = type(exc).__name__
        writer.close()
