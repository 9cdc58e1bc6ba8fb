"""The remote backends against a tiny fake llama-server / OpenAI server on 127.0.0.1.

Covers what a real server cannot be made to do on demand: error texts, being
down and coming back, "loading" answers, slot pinning, a stream we stop early,
and a cancelled request closing its connection.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec
import pytest
from contract import STATS_KEYS
from scripted_model import scripted_generator

from speculator.backends import load_remote
from speculator.backends.llama_server import LlamaServerEngine
from speculator.backends.openai import OpenAIEngine
from speculator.config import Backend, EngineConfig
from speculator.edits import EditHistory
from speculator.factory import load_engine
from speculator.jobs import CompletionJob, Generated, StopRule
from speculator.next_edit.core import NextEditRequest
from speculator.pipeline import Pipeline
from speculator.types import (
    Cancelled,
    CancelToken,
    CompletionRequest,
    EngineError,
    RefactorRequest,
    Snippet,
)

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


def run_cli(
    args: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`groundspec ARGS` with this checkout's code."""
    cli = [sys.executable, "-c", "from lsp_server.cli import main; main()"]
    return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_completion_sends_grounding_and_maps_stats(fake: tuple[Fake, str]) -> None:
    state, url = fake
    engine = llama(url)
    result = engine.complete(completion())
    # The single-line stop rule ends at the newline; the rest was never read.
    assert result.text == "area(w, h) * d"
    path, body, _ = [r for r in state.requests if r[1]][0]
    assert path == "/completion"
    assert body["prompt"].endswith("    return <|fim_suffix|>\n<|fim_middle|>")
    assert body["cache_prompt"] is True and body["n_cache_reuse"] > 0
    assert body["stop"] == ["\n"] and body["stream"] is True
    stats = msgspec.to_builtins(result.stats)
    assert set(stats) == STATS_KEYS
    assert stats["promptTokens"] == 42 and stats["reusedPromptTokens"] == 30
    assert stats["draftedTokens"] == 8 and stats["acceptedTokens"] == 5
    assert stats["speculation"] == "ngram-mod"
    assert engine.totals()["acceptance"] == {
        "ngram-mod": {"drafted": 8, "accepted": 5, "rate": 0.625}
    }


def test_a_lone_surrogate_travels_as_a_replacement(fake: tuple[Fake, str]) -> None:
    """A file name that is not UTF-8 (os.fsdecode gives lone surrogates) or an
    editor's half emoji: httpx raised UnicodeEncodeError, on every keystroke."""
    state, url = fake
    engine = llama(url)
    head = "# caf\udce9\n"
    request = CompletionRequest(
        text=head + SOURCE, cursor=len(head) + CURSOR, path="/w/caf\udce9.py"
    )
    assert engine.complete(request).text == "area(w, h) * d"
    body = posts(state)[-1]
    assert body["prompt"].startswith("<|fim_prefix|>") and "caf?" in body["prompt"]


def test_a_keystroke_only_appends_to_the_prompt(fake: tuple[Fake, str]) -> None:
    """What was typed since the anchor starts the FIM middle, so the server's
    cached prompt stays a prefix and a keystroke costs it a few tokens."""
    state, url = fake
    engine = llama(url)
    engine.warm(completion())
    for typed in ["w", "w ", "w *", "w "]:  # typing, then a backspace
        text = SOURCE[:CURSOR] + typed + SOURCE[CURSOR:]
        engine.complete(
            CompletionRequest(text=text, cursor=CURSOR + len(typed), path="/w/shapes.py")
        )
    prompts = [body["prompt"] for body in posts(state)]
    assert prompts == [prompts[0] + typed for typed in ["", "w", "w ", "w *", "w "]]
    # Elsewhere in the document: a new anchor, the cursor text back in the FIM prefix.
    engine.complete(
        CompletionRequest(text=SOURCE, cursor=SOURCE.index("w * h"), path="/w/shapes.py")
    )
    assert "    return <|fim_suffix|>w * h\n" in posts(state)[-1]["prompt"]
    assert posts(state)[-1]["prompt"].endswith("    return \n<|fim_middle|>")


def test_spans_and_snippets_travel_in_the_prompt(fake: tuple[Fake, str]) -> None:
    state, url = fake
    engine = llama(url)

    class Provider:
        def related(self, path: str | None, query: str, limit: int) -> list[Snippet]:
            return [Snippet(path="/w/units.py", text="CM_PER_M = 100\n")]

    engine.set_context_provider(Provider())
    far = "def volume_of(w, h, d):\n    return w * h * d\n\n" + "x = 1\n" * 800
    text = far + SOURCE
    engine.complete(CompletionRequest(text=text, cursor=len(far) + CURSOR, path="/w/shapes.py"))
    prompt = posts(state)[0]["prompt"]
    header, window = prompt.split("<|fim_prefix|>")
    assert header.startswith("<|repo_name|>groundspec\n<|file_sep|>/w/units.py\nCM_PER_M = 100\n")
    # The similar definition lies outside the prompt window: it comes as a span.
    assert "def volume_of" in header and "def volume_of" not in window


def test_each_document_keeps_the_slot_the_server_gave_it(fake: tuple[Fake, str]) -> None:
    state, url = fake
    engine = llama(url)
    engine.complete(completion())
    state.slot = 3
    engine.complete(CompletionRequest(text=SOURCE, cursor=CURSOR, path="/w/other.py"))
    engine.complete(completion())
    engine.complete(CompletionRequest(text=SOURCE, cursor=CURSOR, path="/w/other.py"))
    assert [b["id_slot"] for b in posts(state)] == [-1, -1, 2, 3]


def test_refactor_uses_the_chat_prompt_on_completion(fake: tuple[Fake, str]) -> None:
    state, url = fake
    doc = '    """Volume: ```vol(1, 2, 3)``` is 6."""\n'  # backticks inside the code
    state.pieces = ["def vol(w, h, d):\n", doc, "    return w * h * d\n```", "junk"]
    engine = llama(url)
    start = SOURCE.index("def volume")
    result = engine.refactor(
        RefactorRequest(text=SOURCE, start=start, end=len(SOURCE), instruction="rename to vol")
    )
    assert result.new_text == "def vol(w, h, d):\n" + doc + "    return w * h * d\n"
    path, body, _ = [r for r in state.requests if r[1]][-1]
    assert path == "/completion"
    assert body["prompt"].startswith("<|im_start|>system") and body["stop"] == ["\n```"]


VOLUME = "def volume(w, h, d):\n    area = w * h\n    return area * d\n"


def renamed_volume() -> NextEditRequest:
    """`w` renamed to `width` in the signature; `area = w * h` still to follow."""
    at = VOLUME.index("w,")
    history = EditHistory()
    history.record("u", at, "w", "width")
    text = VOLUME[:at] + "width" + VOLUME[at + 1 :]
    return NextEditRequest(text=text, cursor=at + 5, edits=history.edits("u"), path="vol.py")


@pytest.mark.parametrize("backend", ["llama-server", "openai"])
@pytest.mark.parametrize(("width_logprob", "proposed"), [(-0.5, True), (-8.0, False)])
def test_a_remote_next_edit_is_as_confident_as_the_servers_probabilities(
    fake: tuple[Fake, str], backend: Backend, width_logprob: float, proposed: bool
) -> None:
    state, url = fake
    state.pieces = ["def volume(width, h, d):\n", "    area = ", "width", " * h\n"]
    state.pieces += ["    return area * d\n", "```", "junk"]
    state.logprobs = [-0.01, -0.01, width_logprob, -0.01, -0.01, -0.01]
    request = renamed_volume()
    engine = load_remote(EngineConfig(backend=backend, backend_url=url))
    result = engine.next_edit(request)
    body = [r[1] for r in state.requests if r[1]][-1]
    asked = body["n_probs"] if backend == "llama-server" else body["logprobs"]
    assert asked == 1 and body["prompt"].startswith("<|im_start|>system")
    if proposed:
        [edit] = result.edits
        after = request.text[: edit.start] + edit.new_text + request.text[edit.end :]
        assert after == "def volume(width, h, d):\n    area = width * h\n    return area * d\n"
        assert result.confidence == pytest.approx(math.exp(width_logprob))
    else:  # 0.0003, under the bar: the server's model is not sure of `width`
        assert result.edits == [] and result.confidence is None


@pytest.mark.parametrize("backend", ["llama-server", "openai"])
def test_a_refactor_cut_at_the_token_limit_is_refused(
    fake: tuple[Fake, str], backend: Backend
) -> None:
    """Half a rewrite would replace the whole selection: the user gets an error."""
    state, url = fake
    state.pieces = ["def vol(w, h, d):\n", "    return", " w * h * d\n", "```"]
    url = url if backend == "llama-server" else url + "/v1"
    engine = load_remote(EngineConfig(backend=backend, backend_url=url))
    start = SOURCE.index("def volume")
    request = RefactorRequest(
        text=SOURCE, start=start, end=len(SOURCE), instruction="rename to vol", max_tokens=2
    )
    with pytest.raises(EngineError, match="limit of 2 tokens.*the selection is unchanged"):
        engine.refactor(request)
    request.max_tokens = 64
    assert engine.refactor(request).new_text == "def vol(w, h, d):\n    return w * h * d\n"


def test_warm_evaluates_without_generating(fake: tuple[Fake, str]) -> None:
    state, url = fake
    assert llama(url).warm(completion()) == 12
    assert posts(state)[0]["n_predict"] == 0


def test_server_error_text_reaches_the_user(fake: tuple[Fake, str]) -> None:
    state, url = fake
    message = "the request exceeds the available context size, try increasing it"
    state.status = [(400, json.dumps({"error": {"code": 400, "message": message}}))]
    with pytest.raises(EngineError, match="HTTP 400: the request exceeds the available context"):
        llama(url).complete(completion())
    state.status = [(500, "internal trouble")]
    with pytest.raises(EngineError, match="HTTP 500: internal trouble"):
        llama(url).complete(completion())


def test_loading_model_is_retried(fake: tuple[Fake, str]) -> None:
    state, url = fake
    loading = json.dumps({"error": {"code": 503, "message": "Loading model"}})
    state.status = [(503, loading), (503, loading)]
    assert llama(url).complete(completion()).text == "area(w, h) * d"
    assert len(posts(state)) == 3


def test_down_server_fails_clearly_then_fast_then_recovers(fake: tuple[Fake, str]) -> None:
    _, url = fake
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    engine = llama(dead)
    started = time.perf_counter()
    with pytest.raises(EngineError, match="cannot reach llama-server at .*; is it running"):
        engine.complete(completion())
    first = time.perf_counter() - started
    assert 1.0 < first < 6.0  # retried with backoff, within the budget
    started = time.perf_counter()
    with pytest.raises(EngineError, match="cannot reach"):
        engine.complete(completion())
    assert time.perf_counter() - started < 0.5  # known down: one try, no waiting
    engine.transport.base_url = url  # the server is back (same engine, new address)
    engine.transport._client.base_url = url  # type: ignore[assignment]
    assert engine.complete(completion()).text == "area(w, h) * d"
    assert engine.transport.down is None


def test_cancel_closes_the_request(fake: tuple[Fake, str]) -> None:
    state, url = fake
    state.pieces = ["x"] * 200
    state.delay_s = 0.05
    engine = llama(url)
    token = CancelToken()
    threading.Timer(0.3, token.cancel).start()
    started = time.perf_counter()
    with pytest.raises(Cancelled):
        engine.complete(completion(max_tokens=200, multiline=True), token)
    assert time.perf_counter() - started < 1.0
    assert state.disconnected.wait(2.0), "the server never saw the client go away"


def test_openai_sends_the_raw_fim_prompt(fake: tuple[Fake, str]) -> None:
    state, url = fake
    os.environ["GROUNDSPEC_API_KEY"] = "sk-test"
    try:
        engine = load_remote(EngineConfig(backend="openai", backend_url=url + "/v1"))
    finally:
        del os.environ["GROUNDSPEC_API_KEY"]
    assert isinstance(engine, OpenAIEngine)
    result = engine.complete(completion())
    assert result.text == "area(w, h) * d"
    path, body, headers = state.requests[-1]
    assert path == "/v1/completions" and body["model"] == "qwen-coder"
    assert body["prompt"].startswith("<|fim_prefix|>") and body["prompt"].endswith("<|fim_middle|>")
    assert headers["Authorization"] == "Bearer sk-test"
    assert body["stop"] == ["\n"]  # so the server ends the line and sends its usage
    assert (result.stats.prompt_tokens, result.stats.reused_prompt_tokens) == (50, 48)


@pytest.mark.parametrize("backend", ["llama-server", "openai"])
def test_a_raw_prompt_goes_to_the_server_as_sent(fake: tuple[Fake, str], backend: Backend) -> None:
    # The text is the prompt (no FIM layout built around a cursor), with no new-line
    # stop: a raw answer ends as the server's own does.
    state, url = fake
    engine = load_remote(EngineConfig(backend=backend, backend_url=url))
    raw = "<|fim_prefix|>def f():\n    return <|fim_suffix|>\n<|fim_middle|>"
    request = CompletionRequest(
        text=raw, cursor=len(raw), prompt_format="raw", ends_at="limit", max_tokens=8
    )
    engine.complete(request)
    body = posts(state)[-1]
    assert body["prompt"] == raw and "stop" not in body
    if backend == "llama-server":  # its own prompt cache, as the request asks
        assert body["cache_prompt"] is True
        engine.complete(msgspec.structs.replace(request, cache_prompt=False))
        assert posts(state)[-1]["cache_prompt"] is False


def test_openai_usage_maps_to_stats(fake: tuple[Fake, str]) -> None:
    state, url = fake
    state.pieces = ["w * h * d"]
    engine = load_remote(EngineConfig(backend="openai", backend_url=url))
    stats = engine.complete(completion(multiline=True)).stats
    assert (stats.prompt_tokens, stats.reused_prompt_tokens, stats.generated_tokens) == (50, 48, 3)
    assert state.requests[-1][0] == "/v1/completions"


def test_bad_backend_settings_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDSPEC_BACKEND", "vllm")
    with pytest.raises(EngineError, match="unknown engine backend 'vllm'"):
        load_engine(EngineConfig())
    monkeypatch.setenv("GROUNDSPEC_BACKEND", "llama-server")
    monkeypatch.setenv("GROUNDSPEC_BACKEND_URL", "localhost:8080")
    with pytest.raises(EngineError, match="must look like http://HOST:PORT"):
        load_engine(EngineConfig())


def test_initialization_options_select_the_backend() -> None:
    from lsp_server.options import ServerOptions, apply_overrides

    data = {"engine": {"backend": "llama-server", "backendUrl": "http://gpu-box:8080"}}
    options, problems = apply_overrides(ServerOptions(), data)
    assert problems == []
    assert (options.engine.backend, options.engine.backend_url) == (
        "llama-server",
        "http://gpu-box:8080",
    )
    options, problems = apply_overrides(ServerOptions(), {"engine": {"backend": "vllm"}})
    assert options.engine.backend == "local" and "engine.backend" in problems[0]


def test_cli_complete_through_the_backend(fake: tuple[Fake, str], tmp_path: Any) -> None:
    state, url = fake
    source = tmp_path / "shapes.py"
    source.write_text(SOURCE)
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "GROUNDSPEC_BACKEND": "openai"}
    line = SOURCE[:CURSOR].count("\n") + 1
    col = CURSOR - SOURCE.rfind("\n", 0, CURSOR)
    args = ["complete", f"{source}:{line}:{col}", "--json", "--backend", "llama-server"]
    out = run_cli([*args, "--backend-url", url], env, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["text"] == "area(w, h) * d" and set(result["stats"]) == STATS_KEYS
    assert [r[0] for r in state.requests if r[1]] == ["/completion"]  # the flag beat the env


def test_cli_bench_through_the_backend(fake: tuple[Fake, str]) -> None:
    """`groundspec bench --backend`: the tasks go to the server, one mode (the server
    chooses its speculation), no local peer; the in-process-only benches say why not."""
    state, url = fake
    state.pieces = ["def f():\n", "    return 1\n", "```"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    common = ["bench", "--backend", "llama-server", "--backend-url", url]
    out = run_cli([*common, "--kind", "refactor", "--limit", "1", "--json"], env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [run["mode"] for run in report["runs"]] == ["auto"] and report["peer"] == []
    assert report["runs"][0]["stats"]["speculation"] == "ngram-mod"
    assert "`llama-server` backend" in report["peer_note"]
    assert [r[0] for r in state.requests if r[1]] == ["/completion"]
    replay = run_cli([*common, "--replay"], env, timeout=60)
    assert replay.returncode != 0 and "python -m bench.remote" in replay.stderr


BLOCK = "def build(rows):\n    \n"
IN_BLOCK = BLOCK.index("    \n") + 4  # on the body's blank line
LINES = ["a = 1", "\n    b = 2", "\n    c = 3", "\n    d = 4", "\n    e = 5", "\n    f = 6"]


def typing(**kw: Any) -> CompletionRequest:
    return CompletionRequest(text=BLOCK, cursor=IN_BLOCK, path="/w/rows.py", multiline=True, **kw)


def test_a_remote_completion_without_limits_runs_to_its_end(fake: tuple[Fake, str]) -> None:
    state, url = fake
    state.pieces, state.delay_s = LINES, 0.05
    result = llama(url).complete(typing())
    assert result.text == "".join(LINES) and not result.timed_out


@pytest.mark.parametrize("backend", ["llama-server", "openai"])
def test_a_typing_deadline_ends_a_remote_stream_mid_line(
    fake: tuple[Fake, str], backend: str
) -> None:
    """As the local decoder: the stream ends where the next token would come past
    the deadline, cut back to a whole word, and the server sees the client go."""
    state, url = fake
    words = ["x = alpha"] + [f" + word{n}" for n in range(40)]
    state.pieces, state.delay_s = words, 0.05
    engine = load_remote(EngineConfig(backend=backend, backend_url=url))
    started = time.perf_counter()
    result = engine.complete(typing(deadline_ms=400, max_tokens=64))
    took = time.perf_counter() - started
    assert result.timed_out
    assert 0.3 < took < 1.5, took  # 41 pieces at 50 ms would take 2 s
    full = "".join(words)
    assert full.startswith(result.text) and 5 < len(result.text) < len(full)
    # cut back to whole words: the last word read may have been half of one
    assert result.text.rstrip(" +").split()[-1] in {"alpha", *(w[3:] for w in words[1:])}
    assert state.disconnected.wait(2.0), "the server never saw the client go away"


def test_max_predict_ends_a_remote_stream_at_a_new_line(fake: tuple[Fake, str]) -> None:
    state, url = fake
    state.pieces, state.delay_s = LINES, 0.1
    request = typing(max_predict_ms=250, max_predict_from_start=True)
    result = llama(url).complete(request)
    assert result.timed_out
    # Past 250 ms (the third piece, or the second on a slow start) the stream ends
    # at the next new line, with that line kept.
    assert result.text in {"".join(LINES[:n]) for n in (2, 3)}, result.text


def test_a_deadline_the_prompt_spent_keeps_a_whole_first_line(fake: tuple[Fake, str]) -> None:
    """The first text came after the deadline: it is dropped, as the local decoder
    drops it, and max_predict ends the completion at the first new line."""
    state, url = fake
    state.pieces, state.delay_s = LINES, 0.25
    request = typing(deadline_ms=100, max_predict_ms=150, max_predict_from_start=True)
    result = llama(url).complete(request)
    assert result.timed_out
    assert result.text == "a = 1\n    b = 2", result.text


def spy_on_completions(
    monkeypatch: pytest.MonkeyPatch, pipeline: Pipeline[Any], seen: list[tuple[str, StopRule]]
) -> None:
    """Record the prompt text and stop rule each completion's generator is given."""
    run = pipeline.generator.run_completion

    def spy(job: CompletionJob, prompt: Any, cancel: CancelToken | None) -> Generated:
        seen.append((prompt.text, job.stop))
        return run(job, prompt, cancel)

    monkeypatch.setattr(pipeline.generator, "run_completion", spy)


def test_local_and_remote_generators_agree_on_prompt_stop_rule_and_text(
    fake: tuple[Fake, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request through the pipeline with each generator: the local one on a
    model scripted to write what the fake server streams."""
    state, url = fake
    remote = llama(url)
    generator, session = scripted_generator("".join(state.pieces))
    local = Pipeline(generator)
    local_seen: list[tuple[str, StopRule]] = []
    remote_seen: list[tuple[str, StopRule]] = []
    spy_on_completions(monkeypatch, local, local_seen)
    spy_on_completions(monkeypatch, remote, remote_seen)
    request = completion(speculation="off")
    local_result, remote_result = local.complete(request), remote.complete(request)

    (local_prompt, local_stop), (remote_prompt, remote_stop) = local_seen[0], remote_seen[0]
    assert local_prompt == remote_prompt == posts(state)[-1]["prompt"]
    assert session.synced[-1] == [ord(c) for c in local_prompt]  # what the local model saw
    for probe in ("area(w, h)", "area(w, h) * d\n", "area(w, h) * d\n    return 1\n"):
        assert local_stop(probe) == remote_stop(probe)
    assert local_result.text == remote_result.text == "area(w, h) * d"

    start = SOURCE.index("def volume")
    refactor = RefactorRequest(text=SOURCE, start=start, end=len(SOURCE), instruction="rename")
    state.pieces = ["def vol(w, h, d):\n", "    return w * h * d\n```", "junk"]
    generator, session = scripted_generator("".join(state.pieces))
    local_text = Pipeline(generator).refactor(refactor).new_text
    assert (
        local_text
        == remote.refactor(refactor).new_text
        == "def vol(w, h, d):\n    return w * h * d\n"
    )
    assert session.synced[-1] == [ord(c) for c in posts(state)[-1]["prompt"]]
