"""``ascendcraft doctor``: one line per part, what is there and what is used instead.

On this machine (no CANN, no torch_npu, no NPU) it must say plainly that there is no NPU and
that the emulator checks correctness and models the times. The Ray, PostgreSQL and LLM lines
are probed against real sockets: a real HTTP server on 127.0.0.1 for the endpoint, and a
port nothing listens on for the unreachable cases.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ascendcraft.cli import main
from ascendcraft.doctor import diagnose

PARTS = ["compiler", "CANN", "torch_npu", "devices", "Ray", "PostgreSQL", "LLM"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_this_machine(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "RAY_ADDRESS", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == PARTS
    by = {line.split()[1]: line for line in lines[:-1]}
    assert by["compiler"].startswith("ok ") and "emulator" in by["compiler"]
    assert by["devices"].startswith("-- ") and "no NPU" in by["devices"]
    assert "CPU emulator" in by["devices"] and "modeled" in by["devices"] and "not measured" in by["devices"]
    assert "ASCEND_HOME_PATH" in by["CANN"] and "-> " in by["CANN"]
    assert "not installed" in by["torch_npu"]
    assert "built-in offline proposer" in by["LLM"] and "SQLite" in by["PostgreSQL"]
    assert lines[-1].startswith("backend: emulator") and "modeled, never measured" in lines[-1]
    assert main(["doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["part"] for f in data["findings"]] == PARTS
    assert all(f["instead"] for f in data["findings"] if not f["ok"])


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body = b'{"data": [{"id": "m"}]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_endpoints_and_addresses_are_probed() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        closed = _closed_port()
        env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
               "RAY_ADDRESS": f"127.0.0.1:{closed}"}
        f = {x.part: x for x in diagnose(env, storage=f"postgresql://u@127.0.0.1:{closed}/db")}
    finally:
        server.shutdown()
        server.server_close()
    assert f["LLM"].ok and f"127.0.0.1:{port} answers" in f["LLM"].found
    assert not f["Ray"].ok and "unreachable" in f["Ray"].found and "RAY_ADDRESS" in f["Ray"].instead
    assert not f["PostgreSQL"].ok and f"127.0.0.1:{closed}" in f["PostgreSQL"].found
    gone = {x.part: x for x in diagnose({"PATH": "/nonexistent", "OPENAI_BASE_URL": f"http://127.0.0.1:{closed}/v1"})}
    assert not gone["compiler"].ok and "install g++" in gone["compiler"].instead
    assert not gone["LLM"].ok and "offline proposer" in gone["LLM"].instead
    assert diagnose({"PATH": "/usr/bin", "OPENAI_API_KEY": "k"})[-1].found.startswith("the OpenAI API")
    assert "sk-" not in " ".join(x.line() for x in diagnose({"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-secret"}))
