"""A scripted model provider for driving the real agent CLIs offline.

It speaks the three wire APIs the CLIs use (Anthropic Messages, OpenAI Responses, OpenAI Chat
Completions) and answers each model request with the next *step* of a script, so a test decides
exactly what the "model" does (write a file, call a tool, fail with 401/429/5xx, report given usage)
and can compare what a CLI reports with what the server sent, which is logged per request.

Script (JSON)::

    {"roles": [
        {"name": "reviewer", "match": "REVIEW", "steps": [{"text": "APPROVE"}]},
        {"name": "actor", "steps": [
            {"write": {"path": "proof.lean", "content": "theorem t : True := trivial\\n"}},
            {"text": "done", "usage": {"input": 1200, "output": 30, "cached": 200}},
            {"error": 429, "type": "insufficient_quota", "message": "You exceeded your current quota"},
            {"call_tool": "echo", "args": {"text": "hi"}},
            {"write": {"path": "x.lean", "content": "..."}, "via": ["exec_command", "bash", "Bash"]},
            {"write": {"path": "x.lean", "content": "..."}, "via": ["Write"], "force": true},
            {"read": {"path": "proof.lean"}},
            {"text": "slow", "delay": 30}
        ]}
    ], "keys": {"sk-old": 1, "sk-new": null}}

A bare list of steps is one role named ``default``. A request goes to the first role whose ``match``
occurs in its system/user text (no ``match``: every request). Each request consumes one step of its
role; the last step repeats once the role runs out, so ``[{"error": 500}]`` fails every retry.
``write`` uses the CLI's file writer, else ``apply_patch``, else a shell heredoc, unless ``via`` lists the
tool names to try; when none is offered the step becomes a text saying so (the turn ends), unless ``force``
is set: then the first ``via`` tool is called although it was not offered (to see the CLI refuse it).
``read`` uses the CLI's file reader (some CLIs refuse to overwrite a file they have not read), else a shell.
``keys`` (optional) makes the server check the request's key (``x-api-key`` or ``Authorization: Bearer``):
a listed key may make that many model requests (``null``: any number), then it has expired; an expired or
unknown key gets a 401 that consumes no step. Without ``keys`` any key is accepted.
``usage`` (input includes cached; all may be 0) and ``delay`` (seconds) may be added to any step, and
``retry_after_ms`` to an error step (sent as the ``retry-after-ms`` header, which OpenCode's fixed five
retries honour instead of backing off for a minute).
Requests that offer no tools or ask for a JSON-schema answer (title generation) get a short text and
consume no step.

Run standalone: ``python tests/fake_model_server.py --script S.json --port-file P [--log L.jsonl]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import signal
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

Json = dict[str, Any]

CWD_PATTERNS = (re.compile(r"Primary working directory: *(\S+)"), re.compile(r"Working directory: *(\S+)"),
                re.compile(r"<cwd>\s*([^<\s]+)\s*</cwd>"))
WRITE_TOOLS = ("Write", "write")
READ_TOOLS = ("Read", "read")
PATCH_TOOLS = ("apply_patch",)
SHELL_TOOLS = ("exec_command", "shell_command", "shell", "Bash", "bash")
HEREDOC_END = "FORALL_SCRIPTED_EOF"
SECRET_HEADERS = {"authorization", "x-api-key", "cookie", "api-key"}

ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}
OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
                      404: "not_found", 429: "rate_limit_exceeded"}
OPENAI_ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


@dataclass
class Role:
    """One scripted participant: which requests it takes and the steps it answers them with."""

    name: str
    steps: list[Json]
    match: str = ""
    consumed: int = 0

    def next_step(self) -> tuple[int, Json]:
        index = min(self.consumed, len(self.steps) - 1)
        self.consumed += 1
        return index, self.steps[index]


def parse_script(script: Mapping[str, Any] | Sequence[Json]) -> list[Role]:
    """Turn script JSON into roles, rejecting shapes that would otherwise fail mid-run."""
    raw_roles = [{"name": "default", "steps": list(script)}] if isinstance(script, Sequence) else script["roles"]
    roles = [Role(r.get("name", f"role{i}"), list(r["steps"]), r.get("match", "")) for i, r in enumerate(raw_roles)]
    known = {"write", "read", "text", "error", "call_tool"}
    for role in roles:
        if not role.steps:
            raise ValueError(f"role {role.name!r} has no steps")
        for step in role.steps:
            if len(known & step.keys()) != 1:
                raise ValueError(f"step {step!r} of role {role.name!r} needs exactly one of {sorted(known)}")
    return roles


# ----------------------------------------------------------------------------------------------------------
# The model's decision, independent of the wire API


@dataclass
class ToolCall:
    name: str
    arguments: Json | str          # str: a freeform (custom) tool input such as an apply_patch
    namespace: str = ""
    call_id: str = ""


@dataclass
class Answer:
    """What the scripted model says: text or one tool call, with the usage it claims."""

    text: str = ""
    tool_call: ToolCall | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    note: str = ""

    @property
    def usage(self) -> Json:
        return {"input": self.input_tokens, "output": self.output_tokens, "cached": self.cached_tokens}


@dataclass
class OfferedTool:
    name: str
    properties: list[str] = field(default_factory=list)
    freeform: bool = False
    namespace: str = ""


@dataclass
class ModelRequest:
    """The parts of a request the script needs, extracted from any of the three wire shapes."""

    text: str                      # system + user text, used for role matching and the working directory
    tools: list[OfferedTool]
    wants_json: bool

    @property
    def workdir(self) -> str:
        for pattern in CWD_PATTERNS:
            found = pattern.search(self.text)
            if found:
                return found.group(1)
        return ""

    def tool(self, *names: str) -> OfferedTool | None:
        for name in names:
            for tool in self.tools:
                if tool.name == name:
                    return tool
        return None


def _absolute(request: ModelRequest, path: str) -> str:
    return path if path.startswith("/") or not request.workdir else f"{request.workdir.rstrip('/')}/{path}"


def _shell_args(tool: OfferedTool, script: str, purpose: str) -> Json:
    args: Json = {"cmd": script} if "cmd" in tool.properties else {"command": script}
    if tool.name == "shell":
        args = {"command": ["bash", "-c", script]}
    if "description" in tool.properties:
        args["description"] = purpose
    return args


def _unoffered(name: str) -> OfferedTool:
    """A tool the CLI did not offer, shaped as that CLI names its arguments (OpenCode: camelCase)."""
    if name in SHELL_TOOLS:
        return OfferedTool(name, ["cmd" if name == "exec_command" else "command"])
    return OfferedTool(name, ["filePath" if name == "write" else "file_path", "content"])


def read_call(request: ModelRequest, path: str) -> tuple[ToolCall | None, str]:
    """Read ``path`` with the CLI's file reader, else ``cat`` in a shell."""
    absolute = _absolute(request, path)
    for name in (*READ_TOOLS, *SHELL_TOOLS):
        tool = request.tool(name)
        if tool is None:
            continue
        if name in READ_TOOLS:
            path_key = next((p for p in tool.properties if "path" in p.lower()), "file_path")
            return ToolCall(name, {path_key: absolute}), ""
        return ToolCall(name, _shell_args(tool, f"cat '{absolute}'", f"read {path}")), ""
    return None, f"no offered tool can read {path}"


def write_call(request: ModelRequest, path: str, content: str, via: Sequence[str] = (),
               force: bool = False) -> tuple[ToolCall | None, str]:
    """Call the first offered tool of ``via`` (default: file writers, then apply_patch, then shells) that
    writes ``content`` to ``path``; a relative path is resolved against the prompt's working directory.
    With ``force``, ``via[0]`` is called even when the CLI did not offer it."""
    absolute = _absolute(request, path)
    names = via or (*WRITE_TOOLS, *PATCH_TOOLS, *SHELL_TOOLS)
    tool = next((t for t in (request.tool(name) for name in names) if t is not None),
                _unoffered(names[0]) if force else None)
    if tool is None:
        return None, f"no offered tool can write {path}"
    if tool.name in WRITE_TOOLS:
        path_key = next((p for p in tool.properties if "path" in p.lower()), "file_path")
        return ToolCall(tool.name, {path_key: absolute, "content": content}), ""
    if tool.name in PATCH_TOOLS:
        patch = "*** Begin Patch\n*** Add File: " + absolute + "\n"
        patch += "".join(f"+{line}\n" for line in content.splitlines()) + "*** End Patch\n"
        return ToolCall(tool.name, patch if tool.freeform else {"input": patch}), ""
    script = f"cat > '{absolute}' <<'{HEREDOC_END}'\n{content.rstrip(chr(10))}\n{HEREDOC_END}"
    return ToolCall(tool.name, _shell_args(tool, script, f"write {path}")), ""


def decide(request: ModelRequest, step: Json | None, body_size: int) -> Answer:
    """Turn a script step (None: an auxiliary request) into an answer with deterministic usage."""
    answer = Answer()
    if step is None:
        answer.text = '{"title": "scripted"}' if request.wants_json else "scripted"
        answer.note = "auxiliary"
    elif "write" in step:
        call, answer.note = write_call(request, step["write"]["path"], step["write"]["content"], step.get("via", ()),
                                       bool(step.get("force")))
        answer.tool_call = call
        answer.text = "" if call else f"scripted model: {answer.note}"
    elif "read" in step:
        answer.tool_call, answer.note = read_call(request, step["read"]["path"])
        answer.text = "" if answer.tool_call else f"scripted model: {answer.note}"
    elif "call_tool" in step:
        suffix = step["call_tool"]
        tool = next((t for t in request.tools if f"{t.namespace}{t.name}".lower().endswith(suffix.lower())), None)
        if tool:
            answer.tool_call = ToolCall(tool.name, dict(step.get("args", {})), tool.namespace)
        else:
            answer.note = f"no offered tool ends with {suffix!r}"
            answer.text = f"scripted model: {answer.note}"
    else:
        answer.text = step["text"]
    produced = len(answer.text) + (len(json.dumps(answer.tool_call.arguments)) if answer.tool_call else 0)
    usage = (step or {}).get("usage", {})
    answer.input_tokens = int(usage.get("input", max(1, body_size // 4)))
    answer.output_tokens = int(usage.get("output", 5 + produced // 4))
    answer.cached_tokens = int(usage.get("cached", 0))
    return answer


# ----------------------------------------------------------------------------------------------------------
# Wire APIs: parse a request, render an answer or an error


def _texts(content: Any) -> Iterator[str]:
    """Text of a message content in any of the three shapes (str, list of typed parts)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text") and "text" in part:
                yield part["text"]


def _properties(schema: Any) -> list[str]:
    return list((schema or {}).get("properties", {}))


def _call_id(n: int) -> str:
    return f"call_{n:04d}"


class AnthropicMessages:
    """``POST /v1/messages``: JSON or SSE."""

    @staticmethod
    def parse(body: Json) -> ModelRequest:
        system = body.get("system", "")
        parts = list(_texts(system))
        for message in body.get("messages", []):
            if message.get("role") in ("user", "system"):
                parts.extend(_texts(message.get("content")))
        tools = [OfferedTool(t["name"], _properties(t.get("input_schema"))) for t in body.get("tools", [])]
        wants_json = bool((body.get("output_config") or {}).get("format"))
        return ModelRequest("\n".join(parts), tools, wants_json)

    @staticmethod
    def message(answer: Answer, model: str, n: int) -> Json:
        content: list[Json] = [{"type": "text", "text": answer.text}] if answer.text else []
        if answer.tool_call:
            content.append({"type": "tool_use", "id": f"toolu_{n:04d}", "name": answer.tool_call.name,
                            "input": answer.tool_call.arguments})
        return {"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": "tool_use" if answer.tool_call else "end_turn", "stop_sequence": None,
                "usage": AnthropicMessages.usage(answer)}

    @staticmethod
    def usage(answer: Answer) -> Json:
        return {"input_tokens": answer.input_tokens - answer.cached_tokens, "output_tokens": answer.output_tokens,
                "cache_read_input_tokens": answer.cached_tokens, "cache_creation_input_tokens": 0}

    @staticmethod
    def events(answer: Answer, model: str, n: int) -> Iterator[tuple[str, Json]]:
        message = AnthropicMessages.message(answer, model, n)
        blocks, message["content"] = message["content"], []
        yield "message_start", {"type": "message_start", "message": {**message, "stop_reason": None,
                                                                     "usage": {**message["usage"], "output_tokens": 0}}}
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                yield "content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "text", "text": ""}}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                yield "content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {**block, "input": {}}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "message_delta", {"type": "message_delta", "usage": message["usage"],
                                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}}
        yield "message_stop", {"type": "message_stop"}

    @staticmethod
    def error(status: int, message: str, kind: str) -> Json:
        return {"type": "error", "error": {"type": kind or ANTHROPIC_ERROR_TYPES.get(status, "api_error"),
                                           "message": message}}


class OpenAIResponses:
    """``POST /v1/responses``: SSE (the only form Codex uses) or JSON."""

    @staticmethod
    def parse(body: Json) -> ModelRequest:
        parts = list(_texts(body.get("instructions", "")))
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") != "assistant":
                parts.extend(_texts(item.get("content")))
        tools: list[OfferedTool] = []
        for tool in body.get("tools", []):
            if tool.get("type") == "namespace":
                tools.extend(OfferedTool(t["name"], _properties(t.get("parameters")), namespace=tool["name"])
                             for t in tool.get("tools", []))
            elif "name" in tool:
                tools.append(OfferedTool(tool["name"], _properties(tool.get("parameters")),
                                         freeform=tool.get("type") == "custom"))
        wants_json = ((body.get("text") or {}).get("format") or {}).get("type") == "json_schema"
        return ModelRequest("\n".join(parts), tools, wants_json)

    @staticmethod
    def items(answer: Answer, n: int) -> list[Json]:
        items: list[Json] = []
        if answer.text:
            items.append({"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": answer.text, "annotations": []}]})
        call = answer.tool_call
        if call and isinstance(call.arguments, str):
            items.append({"type": "custom_tool_call", "id": f"ctc_{n:04d}", "call_id": _call_id(n),
                          "name": call.name, "input": call.arguments, "status": "completed"})
        elif call:
            item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": _call_id(n), "name": call.name,
                    "arguments": json.dumps(call.arguments), "status": "completed"}
            items.append({**item, "namespace": call.namespace} if call.namespace else item)
        return items

    @staticmethod
    def response(answer: Answer, model: str, n: int) -> Json:
        usage = {"input_tokens": answer.input_tokens, "input_tokens_details": {"cached_tokens": answer.cached_tokens},
                 "output_tokens": answer.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": answer.input_tokens + answer.output_tokens}
        return {"id": f"resp_{n:04d}", "object": "response", "created_at": int(time.time()), "model": model,
                "status": "completed", "output": OpenAIResponses.items(answer, n), "usage": usage}

    @staticmethod
    def events(answer: Answer, model: str, n: int) -> Iterator[tuple[str, Json]]:
        response = OpenAIResponses.response(answer, model, n)
        yield "response.created", {"type": "response.created",
                                   "response": {**response, "status": "in_progress", "output": [], "usage": None}}
        for index, item in enumerate(response["output"]):
            yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                 "item": item}
            if item["type"] == "message":
                yield "response.output_text.delta", {"type": "response.output_text.delta", "output_index": index,
                                                     "item_id": item["id"], "content_index": 0,
                                                     "delta": answer.text}
            yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                "item": item}
        yield "response.completed", {"type": "response.completed", "response": response}

    @staticmethod
    def error(status: int, message: str, kind: str) -> Json:
        kind = kind or OPENAI_ERROR_TYPES.get(status, "server_error")
        code = kind if kind == "insufficient_quota" else OPENAI_ERROR_CODES.get(status, kind)
        return {"error": {"message": message, "type": kind, "code": code, "param": None}}


class OpenAIChat:
    """``POST /v1/chat/completions``: SSE with a final usage chunk and ``[DONE]``, or JSON."""

    @staticmethod
    def parse(body: Json) -> ModelRequest:
        parts = [text for m in body.get("messages", []) if m.get("role") in ("system", "user", "developer")
                 for text in _texts(m.get("content"))]
        tools = [OfferedTool(t["function"]["name"], _properties(t["function"].get("parameters")))
                 for t in body.get("tools", []) if "function" in t]
        wants_json = (body.get("response_format") or {}).get("type") == "json_schema"
        return ModelRequest("\n".join(parts), tools, wants_json)

    @staticmethod
    def usage(answer: Answer) -> Json:
        return {"prompt_tokens": answer.input_tokens, "completion_tokens": answer.output_tokens,
                "total_tokens": answer.input_tokens + answer.output_tokens,
                "prompt_tokens_details": {"cached_tokens": answer.cached_tokens}}

    @staticmethod
    def message(answer: Answer, n: int) -> tuple[Json, str]:
        message: Json = {"role": "assistant", "content": answer.text or None}
        if answer.tool_call:
            message["tool_calls"] = [{"index": 0, "id": _call_id(n), "type": "function",
                                      "function": {"name": answer.tool_call.name,
                                                   "arguments": json.dumps(answer.tool_call.arguments)}}]
        return message, "tool_calls" if answer.tool_call else "stop"

    @staticmethod
    def completion(answer: Answer, model: str, n: int) -> Json:
        message, finish = OpenAIChat.message(answer, n)
        return {"id": f"chatcmpl-{n:04d}", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": OpenAIChat.usage(answer)}

    @staticmethod
    def events(answer: Answer, model: str, n: int) -> Iterator[tuple[str, Json]]:
        head = {"id": f"chatcmpl-{n:04d}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}
        message, finish = OpenAIChat.message(answer, n)
        yield "", {**head, "choices": [{"index": 0, "delta": message, "finish_reason": None}]}
        yield "", {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        yield "", {**head, "choices": [], "usage": OpenAIChat.usage(answer)}

    error = OpenAIResponses.error


WIRE_APIS: dict[str, Any] = {"/v1/messages": AnthropicMessages, "/v1/responses": OpenAIResponses,
                             "/v1/chat/completions": OpenAIChat}


# ----------------------------------------------------------------------------------------------------------
# HTTP


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log; requests are in the server's log instead."""

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self._not_found()

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        raw = self._body()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        wire = WIRE_APIS.get(path)
        if wire is None:
            self._not_found(body)
            return
        self._answer(wire, path, body, len(raw))

    def _answer(self, wire: Any, path: str, body: Json, body_size: int) -> None:
        request = wire.parse(body)
        auxiliary = request.wants_json or not request.tools
        refusal = self.server.model.check_key(self._key())
        if refusal:
            role, index, step = "", -1, {"error": 401, "message": refusal}
        else:
            role, index, step = self.server.model.take(request.text, auxiliary)
        if step and step.get("delay"):
            time.sleep(float(step["delay"]))
        entry: Json = {"path": path, "role": role, "step": index, "headers": self._headers(), "body": body}
        if step and "error" in step:
            status = int(step["error"])
            entry.update(status=status, usage={"input": 0, "output": 0, "cached": 0}, note="error")
            self.server.model.record(entry)
            retry_after = {"retry-after-ms": str(step["retry_after_ms"])} if "retry_after_ms" in step else {}
            self._send_json(status, wire.error(status, step.get("message", f"scripted error {status}"),
                                               step.get("type", "")), retry_after)
            return
        n = self.server.model.next_number()
        answer = decide(request, step, body_size)
        entry.update(status=200, usage=answer.usage, note=answer.note,
                     tool=answer.tool_call.name if answer.tool_call else "", text=answer.text)
        self.server.model.record(entry)
        model = str(body.get("model", "scripted"))
        if body.get("stream"):
            self._send_sse(wire.events(answer, model, n), data_only=wire is OpenAIChat)
        elif wire is OpenAIChat:
            self._send_json(200, OpenAIChat.completion(answer, model, n))
        elif wire is OpenAIResponses:
            self._send_json(200, OpenAIResponses.response(answer, model, n))
        else:
            self._send_json(200, AnthropicMessages.message(answer, model, n))

    def _body(self) -> bytes:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
        return raw

    def _key(self) -> str:
        bearer = self.headers.get("Authorization", "")
        return self.headers.get("x-api-key") or bearer.removeprefix("Bearer ").strip()

    def _headers(self) -> dict[str, str]:
        return {k: "<redacted>" if k.lower() in SECRET_HEADERS else v for k, v in self.headers.items()}

    def _not_found(self, body: Json | None = None) -> None:
        self.server.model.record({"path": self.path, "method": self.command, "status": 404, "body": body,
                                  "role": "", "usage": {"input": 0, "output": 0, "cached": 0}, "note": "unknown path"})
        self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _send_json(self, status: int, payload: Json, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: Iterator[tuple[str, Json]], *, data_only: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, payload in events:
            self._chunk((f"event: {name}\n" if name and not data_only else "") + f"data: {json.dumps(payload)}\n\n")
        if data_only:
            self._chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


class ScriptedModel:
    """The script's state and the request log, shared by the handler threads."""

    def __init__(self, roles: list[Role], log_path: Path | None, keys: Mapping[str, int | None] | None = None) -> None:
        self.roles = roles
        #: key -> model requests it may still make (None: unlimited); None: keys are not checked
        self.keys = dict(keys) if keys is not None else None
        self.requests: list[Json] = []
        self._log_path = log_path
        self._lock = threading.Lock()
        self._numbers = 0

    def check_key(self, key: str) -> str:
        """"" when ``key`` may make this request (and count it), else why it is refused."""
        with self._lock:
            if self.keys is None:
                return ""
            if key not in self.keys:
                return "invalid x-api-key"
            left = self.keys[key]
            if left is not None and left <= 0:
                return "authentication_error: the API key has expired"
            if left is not None:
                self.keys[key] = left - 1
            return ""

    def take(self, text: str, auxiliary: bool) -> tuple[str, int, Json | None]:
        with self._lock:
            role = next((r for r in self.roles if r.match in text), None)
            if role is None:
                return "", -1, {"error": 400, "message": "no script role matches this request"}
            if auxiliary:
                return role.name, -1, None
            index, step = role.next_step()
            return role.name, index, step

    def next_number(self) -> int:
        with self._lock:
            self._numbers += 1
            return self._numbers

    def record(self, entry: Json) -> None:
        with self._lock:
            entry = {"n": len(self.requests) + 1, "t": round(time.time(), 3), **entry}
            self.requests.append(entry)
            if self._log_path:
                with self._log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    model: ScriptedModel


class ScriptedModelServer:
    """In-process use: ``with ScriptedModelServer(script) as server: ... server.url ... server.requests``."""

    def __init__(self, script: Mapping[str, Any] | Sequence[Json], *, log_path: Path | None = None,
                 port: int = 0) -> None:
        keys = None if isinstance(script, Sequence) else script.get("keys")
        self.model = ScriptedModel(parse_script(script), log_path, keys)
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Root URL (``http://127.0.0.1:PORT``); OpenAI-style clients want ``url + "/v1"``."""
        assert self._httpd, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def requests(self) -> list[Json]:
        return list(self.model.requests)

    def model_requests(self, role: str | None = None) -> list[Json]:
        """Requests that consumed a step (not auxiliary, not unknown paths), optionally of one role."""
        return [r for r in self.model.requests if r.get("step", -1) >= 0 and role in (None, r["role"])]

    def start(self) -> ScriptedModelServer:
        self._httpd = _Server(("127.0.0.1", self._port), _Handler)
        self._httpd.model = self.model
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, required=True, help="script JSON (see the module docstring)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="written with the port once the server listens")
    parser.add_argument("--log", type=Path, help="append one JSON line per request")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(json.loads(args.script.read_text()), log_path=args.log, port=args.port).start()
    port = server.url.rsplit(":", 1)[1]
    if args.port_file:
        args.port_file.write_text(port)
    print(f"LISTENING {port}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    server.stop()


if __name__ == "__main__":
    main()
