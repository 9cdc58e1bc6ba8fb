"""A tiny fake llama-server / OpenAI server on 127.0.0.1 for the remote backends'
tests (test_remote_*.py): `Fake` says what it answers and records what it saw; the
`fake` fixture serves it for one test (a module imports it and names it in `__all__`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from speculator.backends import load_remote
from speculator.backends.llama_server import LlamaServerEngine
from speculator.config import EngineConfig
from speculator.types import CompletionRequest

SOURCE = "def area(w, h):\n    return w * h\n\n\ndef volume(w, h, d):\n    return \n"
CURSOR = SOURCE.index("return \n") + len("return ")


class Fake:
    """What the fake server answers, and what it saw."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.pieces = ["area(w, h)", " * d", "\n", "never sent"]
        self.delay_s = 0.0  # before each piece
        self.status: list[tuple[int, str]] = []  # answers to give first, one per request
        self.slot = 2
        self.speculative = "none,ngram-mod"  # as llama-server lists them
        self.disconnected = threading.Event()
        # Each piece's log-probability, sent as llama-server does when asked (n_probs).
        self.logprobs: list[float] = []


def _handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            fake.requests.append((self.path, {}, dict(self.headers)))
            if self.path == "/props":
                params = {"speculative.types": fake.speculative}
                self._json(200, {"default_generation_settings": {"params": params}})
            elif self.path.endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "qwen-coder"}]})
            else:
                self._json(404, {"error": {"code": 404, "message": "File Not Found"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append((self.path, body, dict(self.headers)))
            if fake.status:
                code, text = fake.status.pop(0)
                self._raw(code, text)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")  # the stream ends with the connection
            self.end_headers()
            self.close_connection = True
            openai = self.path.startswith("/v1/")
            try:
                sent = ""
                limit = max(1, body.get("n_predict", body.get("max_tokens", 99)))
                stop_type = "limit" if len(fake.pieces) > limit else "eos"
                for n, piece in enumerate(fake.pieces[:limit]):
                    time.sleep(fake.delay_s)
                    # the server honours `stop` over the text so far and ends with its last event
                    cut = _first_stop(sent + piece, body.get("stop", []))
                    piece = piece if cut is None else piece[: max(0, cut - len(sent))]
                    sent += piece
                    event = _openai_event(piece, n) if openai else _llama_event(piece, n, fake)
                    if body.get("n_probs") and n < len(fake.logprobs):
                        event["completion_probabilities"] = [_probability(piece, fake.logprobs[n])]
                    if body.get("logprobs") and n < len(fake.logprobs):  # OpenAI's format
                        lists = {"tokens": [piece], "token_logprobs": [fake.logprobs[n]]}
                        event["choices"][0]["logprobs"] = lists
                    self._event(event)
                    if cut is not None:
                        stop_type = "word"
                        break
                self._event(_openai_final(stop_type) if openai else _llama_final(fake, stop_type))
                if openai:
                    self.wfile.write(b"data: [DONE]\n\n")
            except (BrokenPipeError, ConnectionResetError):
                fake.disconnected.set()

        def _event(self, data: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def _json(self, code: int, data: dict[str, Any]) -> None:
            self._raw(code, json.dumps(data))

        def _raw(self, code: int, text: str) -> None:
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _first_stop(text: str, stops: list[str]) -> int | None:
    found = [text.index(s) for s in stops if s in text]
    return min(found) if found else None


def _timings(n: int) -> dict[str, Any]:
    return {
        "cache_n": 30,
        "prompt_n": 12,
        "prompt_ms": 80.5,
        "predicted_n": n + 1,
        "predicted_ms": 40.0 * (n + 1),
        "draft_n": 8,
        "draft_n_accepted": 5,
    }


def _llama_event(piece: str, n: int, fake: Fake) -> dict[str, Any]:
    return {
        "content": piece,
        "stop": False,
        "id_slot": -1,  # as llama-server does: only the last event names the slot
        "tokens_evaluated": 42,
        "timings": _timings(n),
    }


def _probability(piece: str, logprob: float) -> dict[str, Any]:
    token = {"id": 1, "token": piece, "bytes": list(piece.encode()), "logprob": logprob}
    return {**token, "top_logprobs": [token]}


def _llama_final(fake: Fake, stop_type: str) -> dict[str, Any]:
    settings = {"speculative.types": fake.speculative}
    return {
        "content": "",
        "stop": True,
        "stop_type": stop_type,
        "id_slot": fake.slot,
        "tokens_evaluated": 42,
        "generation_settings": settings,
    }


def _openai_event(piece: str, n: int) -> dict[str, Any]:
    return {"choices": [{"text": piece, "index": 0, "finish_reason": None}]}


def _openai_final(stop_type: str) -> dict[str, Any]:
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 48},
    }
    reason = "length" if stop_type == "limit" else "stop"
    return {"choices": [{"text": "", "index": 0, "finish_reason": reason}], "usage": usage}


@pytest.fixture
def fake() -> Iterator[tuple[Fake, str]]:
    state = Fake()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def llama(url: str) -> LlamaServerEngine:
    engine = load_remote(EngineConfig(backend="llama-server", backend_url=url))
    assert isinstance(engine, LlamaServerEngine)
    return engine


def completion(**kw: Any) -> CompletionRequest:
    return CompletionRequest(text=SOURCE, cursor=CURSOR, path="/w/shapes.py", **kw)


def posts(fake: Fake) -> list[dict[str, Any]]:
    return [body for path, body, _ in fake.requests if body]
