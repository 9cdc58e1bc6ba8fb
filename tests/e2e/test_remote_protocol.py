"""The remote backends against a tiny fake llama-server / OpenAI server on 127.0.0.1.

Covers what a real server cannot be made to do on demand: error texts, being
down and coming back, "loading" answers, slot pinning, a stream we stop early,
and a cancelled request closing its connection.

Deadlines ending a stream: test_remote_deadlines.py; choosing the backend, and
the CLI through it: test_remote_cli.py; the fake server: remote_fake.py.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from typing import Any

import msgspec
import pytest
from contract import STATS_KEYS
from scripted_model import scripted_generator

from speculator.backends import load_remote
from speculator.backends.openai import OpenAIEngine
from speculator.config import Backend, EngineConfig
from speculator.edits import EditHistory
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

from .remote_fake import CURSOR, SOURCE, Fake, completion, fake, llama, posts

__all__ = ["fake"]  # the fixture: a fake server per test


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
