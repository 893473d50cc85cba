"""A scripted model on 127.0.0.1 that speaks the wire protocols the agent clients use.

Turn 1 (a request that offers the client's shell tool and holds no result of it yet): the model
calls that tool once, with the command under test. Turn 2 (a request holding the tool's result):
the result is recorded and the model ends the conversation with a short text. Any other request
(titles, summaries, quota checks) gets a short text and is only logged.

Protocols, chosen by the request path:

- Anthropic Messages (``POST …/v1/messages``), SSE or not.
- OpenAI Responses (``POST …/responses``), SSE.
- OpenAI chat completions (``POST …/chat/completions``), SSE or not.
- Gemini (``POST …/models/M:streamGenerateContent`` and ``:generateContent``).

Every request body is kept (``requests``) so a failing test can show what the client sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The shell tool of each client, by the names they give it, most specific first.
SHELL_TOOLS = ("Bash", "run_shell_command", "shell_command", "exec_command", "shell", "bash")
DONE_TEXT = "Done."


def _tool_names_anthropic(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t.get("name"): t.get("input_schema") or {} for t in body.get("tools") or [] if isinstance(t, dict)}


def _tool_names_openai(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        name = fn.get("name")
        if name:
            out[name] = fn.get("parameters") or {}
    return out


def _tool_names_gemini(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for t in body.get("tools") or []:
        for fd in (t or {}).get("functionDeclarations") or []:
            out[fd.get("name")] = fd.get("parameters") or fd.get("parametersJsonSchema") or {}
    return out


def _pick(tools: dict[str, dict[str, Any]]) -> str | None:
    for name in SHELL_TOOLS:
        if name in tools:
            return name
    return None


def _arguments(schema: dict[str, Any], command: str) -> dict[str, Any]:
    """The shell tool's arguments for ``command`` as its schema asks for them."""
    props = schema.get("properties") or {}
    args: dict[str, Any] = {}
    if "command" in props:
        kind = props["command"].get("type")
        args["command"] = ["bash", "-lc", command] if kind == "array" else command
    elif "cmd" in props:
        args["cmd"] = command
    else:
        args["command"] = command
    required = schema.get("required") or []
    if "description" in props:
        args["description"] = "Run the command"
    for key in required:
        if key in args:
            continue
        kind = (props.get(key) or {}).get("type")
        args[key] = {"string": "x", "boolean": False, "integer": 1, "number": 1}.get(kind, "x")
    if "timeout" in props and "timeout" not in args and props["timeout"].get("type") in ("integer", "number"):
        args["timeout"] = 60000 if "millisecond" in json.dumps(props["timeout"]).lower() else 60
    return args


def _text_of(content: Any) -> str:
    """The text of a tool result in any of the protocols' shapes."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "output", "content", "llmContent", "error"):
            if key in content:
                return _text_of(content[key])
        return json.dumps(content, sort_keys=True)
    return "" if content is None else str(content)


class Script:
    """What the model does: call ``tool`` with ``command`` once, then record the result."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.called: str | None = None  # the tool name called
        self.call_arguments: dict[str, Any] | None = None
        self.result: str | None = None  # the tool result the client sent back
        self.result_raw: Any = None
        self.followup: dict[str, Any] | None = None  # the whole request that brought the result
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.done = threading.Event()
        self.lock = threading.Lock()

    def record(self, raw: Any) -> None:
        with self.lock:
            if self.result is None:
                self.result_raw = raw
                self.result = _text_of(raw)
                self.done.set()

    def plan(self, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        """The tool call to make now, or None (answer with text)."""
        with self.lock:
            name = _pick(tools)
            if name is None or self.called is not None:
                return None
            self.called = name
            self.call_arguments = _arguments(tools[name], self.command)
            return name, self.call_arguments


CALL_ID = "call_guard_0001"


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _sse(self, events: list[tuple[str | None, Any]]) -> None:
        chunks = []
        for name, data in events:
            line = data if isinstance(data, str) else json.dumps(data)
            chunks.append((f"event: {name}\n" if name else "") + f"data: {line}\n\n")
        self._send(200, "".join(chunks).encode(), "text/event-stream")

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        self.server.script.requests.append(("GET " + path, {}))
        if path.endswith("/models"):
            model = {"id": "guard-test-model", "object": "model", "created": 0, "owned_by": "guard",
                     "name": "guard-test-model", "display_name": "guard test model", "type": "model",
                     "capabilities": {"type": "chat", "family": "guard", "limits": {"max_prompt_tokens": 100000,
                                      "max_context_window_tokens": 128000, "max_output_tokens": 4096},
                                      "supports": {"tool_calls": True, "streaming": True}},
                     "model_picker_enabled": True, "version": "1", "vendor": "guard"}
            self._send(200, json.dumps({"object": "list", "data": [model], "models": [model]}).encode())
            return
        self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        script = self.server.script
        script.requests.append((path, body))
        had = script.result is not None
        if path.endswith("/messages/count_tokens"):
            self._send(200, b'{"input_tokens": 10}')
        elif path.endswith("/messages"):
            self._anthropic(body)
        elif path.endswith("/responses"):
            self._responses(body)
        elif path.endswith("/chat/completions"):
            self._chat(body)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._gemini(body, stream=":streamGenerateContent" in path)
        elif path.endswith(":countTokens"):
            self._send(200, b'{"totalTokens": 10}')
        else:
            self._send(404, b'{"error": {"message": "not found"}}')
        if not had and script.result is not None:
            script.followup = body

    # ------------------------------------------------------------------ Anthropic

    def _anthropic(self, body: dict[str, Any]) -> None:
        script = self.server.script
        for msg in body.get("messages") or []:
            for block in msg.get("content") or [] if isinstance(msg.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") == CALL_ID:
                    script.record(block.get("content"))
        plan = None
        if script.result is None:
            plan = script.plan(_tool_names_anthropic(body))
        model = body.get("model") or "claude"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if plan is not None:
            block = {"type": "tool_use", "id": CALL_ID, "name": plan[0], "input": plan[1]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": DONE_TEXT}
            stop = "end_turn"
        message = {"id": "msg_guard", "type": "message", "role": "assistant", "model": model,
                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            self._send(200, json.dumps(message).encode())
            return
        start = dict(message, content=[], stop_reason=None)
        if block["type"] == "tool_use":
            first = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": DONE_TEXT}
        self._sse([
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": first}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    # ------------------------------------------------------------------ OpenAI Responses

    def _responses(self, body: dict[str, Any]) -> None:
        script = self.server.script
        for item in body.get("input") or [] if isinstance(body.get("input"), list) else []:
            if isinstance(item, dict) and item.get("type", "").endswith("call_output") and item.get("call_id") == CALL_ID:
                script.record(item.get("output"))
        plan = None
        if script.result is None:
            plan = script.plan(_tool_names_openai(body))
        if plan is not None:
            item = {"type": "function_call", "id": "fc_guard", "call_id": CALL_ID, "name": plan[0],
                    "arguments": json.dumps(plan[1]), "status": "completed"}
        else:
            item = {"type": "message", "id": "msg_guard", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": DONE_TEXT, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        resp = {"id": "resp_guard", "object": "response", "created_at": 0, "status": "completed",
                "model": body.get("model") or "m", "output": [item], "usage": usage}
        if not body.get("stream", True):
            self._send(200, json.dumps(resp).encode())
            return
        self._sse([
            ("response.created", {"type": "response.created", "sequence_number": 0,
                                  "response": dict(resp, status="in_progress", output=[])}),
            ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2,
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "sequence_number": 3, "response": resp}),
        ])

    # ------------------------------------------------------------------ chat completions

    def _chat(self, body: dict[str, Any]) -> None:
        script = self.server.script
        for msg in body.get("messages") or []:
            if isinstance(msg, dict) and msg.get("role") == "tool" and msg.get("tool_call_id") == CALL_ID:
                script.record(msg.get("content"))
        plan = None
        if script.result is None:
            plan = script.plan(_tool_names_openai(body))
        model = body.get("model") or "m"
        base = {"id": "chatcmpl-guard", "object": "chat.completion.chunk", "created": 0, "model": model}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if plan is not None:
            call = {"index": 0, "id": CALL_ID, "type": "function",
                    "function": {"name": plan[0], "arguments": json.dumps(plan[1])}}
            delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": DONE_TEXT}
            finish = "stop"
        if not body.get("stream"):
            message = {k: v for k, v in delta.items()}
            if "tool_calls" in message:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in message["tool_calls"]]
            out = dict(base, object="chat.completion",
                       choices=[{"index": 0, "message": message, "finish_reason": finish}], usage=usage)
            self._send(200, json.dumps(out).encode())
            return
        self._sse([
            (None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
            (None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
            (None, dict(base, choices=[], usage=usage)),
            (None, "[DONE]"),
        ])

    # ------------------------------------------------------------------ Gemini

    def _gemini(self, body: dict[str, Any], stream: bool) -> None:
        script = self.server.script
        for content in body.get("contents") or []:
            for part in (content or {}).get("parts") or []:
                fr = (part or {}).get("functionResponse")
                if isinstance(fr, dict) and fr.get("name") == script.called:
                    script.record(fr.get("response"))
        plan = None
        if script.result is None:
            plan = script.plan(_tool_names_gemini(body))
        if plan is not None:
            part: dict[str, Any] = {"functionCall": {"name": plan[0], "args": plan[1]}}
        else:
            part = {"text": DONE_TEXT}
        out = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
               "modelVersion": "gemini-test"}
        if stream:
            self._sse([(None, out)])
        else:
            self._send(200, json.dumps(out).encode())


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
