"""A scripted OpenAI-compatible chat-completions server for tests, on 127.0.0.1.

A real HTTP server (``http.server`` in a thread, a free port) that speaks the two routes
the ``openai`` client uses: ``GET /v1/models`` and ``POST /v1/chat/completions``. Each
chat request is answered by the next :class:`Reply` of the script (the last one repeats),
or by a function of the request. Every request is recorded (``requests``: the parsed JSON
body and when it arrived), so a test can check what was asked, how often and how far
apart the retries were.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: ``content`` with HTTP ``status`` after ``delay_s``. A status
    other than 200 sends an OpenAI-style error body. ``refuse_schema``: answer 400 when
    the request asks for a ``response_format`` (a server without structured output),
    without consuming this reply."""

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 100
    completion_tokens: int = 50
    refuse_schema: bool = False


def candidates_json(*items: dict[str, Any]) -> str:
    """An answer in the proposer's JSON form."""
    return json.dumps({"candidates": list(items)})


def fenced(*programs: str, prose: str = "Here are the kernels.") -> str:
    """An answer as prose with fenced DSL programs (no JSON)."""
    return prose + "\n\n" + "\n\n".join(f"```python\n{p.strip()}\n```" for p in programs)


class ScriptedServer:
    """``with ScriptedServer([...]) as srv: srv.base_url`` — see the module docstring."""

    def __init__(self, script: Sequence[Reply] | Callable[[dict[str, Any]], Reply],
                 models: Sequence[str] = ("scripted-model",)) -> None:
        self.script = script
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        self.refused_schema = 0
        self._lock = threading.Lock()
        self._next = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def chats(self) -> list[dict[str, Any]]:
        """The chat-completion request bodies, in order."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _reply_for(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if callable(self.script):
                return self.script(body)
            reply = self.script[min(self._next, len(self.script) - 1)]
            if reply.refuse_schema and "response_format" in body:
                self.refused_schema += 1
                return Reply(status=400, content="response_format is not supported")
            self._next += 1
            return reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server.requests.append({"path": self.path, "body": None, "t": time.monotonic()})
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "test"}
                        for m in server.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                server.requests.append({"path": self.path, "body": body, "t": time.monotonic()})
                reply = server._reply_for(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.content or "error",
                                                        "type": "test", "code": reply.status}},
                               reply.headers)
                    return
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.content}}],
                    "usage": {"prompt_tokens": reply.prompt_tokens,
                              "completion_tokens": reply.completion_tokens,
                              "total_tokens": reply.prompt_tokens + reply.completion_tokens},
                }, reply.headers)

        return Handler
