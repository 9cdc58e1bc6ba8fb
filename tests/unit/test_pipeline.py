"""Each stage of the request pipeline on plain data (speculator/pipeline.py).

The local generator runs on a scripted model (tests/scripted_model.py); the
remote one is compared with it in tests/e2e/test_remote_protocol.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_model import scripted_generator

from speculator.jobs import CompletionJob, Counts, Generated, RewriteJob
from speculator.limits import SPENT_LIMIT_MS, Limits
from speculator.outcome import StopReason
from speculator.pipeline import (
    Pipeline,
    finish_completion_text,
    finish_rewrite,
    prepare_completion,
    prepare_refactor,
    stats_of,
)
from speculator.types import (
    CancelToken,
    CompletionRequest,
    EngineError,
    RefactorRequest,
    Snippet,
)

SOURCE = "def area(w, h):\n    return w * h\n\n\ndef volume(w, h, d):\n    return \n"
CURSOR = SOURCE.index("return \n") + len("return ")


class CountingProvider:
    def __init__(self) -> None:
        self.queries: list[str] = []

    def related(self, path: str | None, query: str, limit: int) -> list[Snippet]:
        self.queries.append(query)
        return [Snippet(path="other.py", text="def helper():\n    pass\n")]


def generated(text: str, stop: StopReason = StopReason.END, **counts: int) -> Generated:
    return Generated(text, stop, Counts(**counts), "auto", started=0.0)


# -- prepare ---------------------------------------------------------------------------


def test_prepare_completion_checks_the_request() -> None:
    with pytest.raises(EngineError, match="outside the document"):
        prepare_completion(CompletionRequest(text="x", cursor=5), 0.0, None)
    with pytest.raises(EngineError, match="binary"):
        prepare_completion(CompletionRequest(text="a\x00b", cursor=1), 0.0, None)


def test_prepare_completion_decides_the_stop_rule_and_limits() -> None:
    request = CompletionRequest(
        text=SOURCE, cursor=CURSOR, max_predict_ms=300, max_predict_from_start=True, deadline_ms=900
    )
    job = prepare_completion(request, 10.0, None)
    assert job.multiline is False  # after `return `: one line
    assert job.stop("w * h * d\n    x = 1") == len("w * h * d")
    assert job.limits == Limits(10.0, 300, True, 900)
    forced = prepare_completion(
        CompletionRequest(text=SOURCE, cursor=CURSOR, multiline=True), 0.0, None
    )
    assert forced.multiline is True and forced.stop("w * h * d\n") is None


def test_the_workspace_context_is_asked_for_once_and_only_when_wanted() -> None:
    provider = CountingProvider()
    job = prepare_completion(CompletionRequest(text=SOURCE, cursor=CURSOR), 0.0, provider)
    assert provider.queries == []  # a remote prompt reused at its anchor never asks
    assert job.context() == job.context()
    assert provider.queries == [SOURCE[:CURSOR]]


def test_a_warm_up_job_has_no_stop_rule_limits_or_quick_window() -> None:
    request = CompletionRequest(text=SOURCE, cursor=CURSOR, quick_window=True, deadline_ms=50)
    job = prepare_completion(request, 0.0, None, warm=True)
    assert job.stop("anything\nat all") is None
    assert job.limits == Limits(0.0) and not job.quick
    assert prepare_completion(request, 0.0, None).quick


def test_prepare_refactor_dedents_the_selection_and_reads_the_renames() -> None:
    start = SOURCE.index("return w * h")  # from the keyword: its line's indent is the lead
    end = SOURCE.index("\n\n\n")
    request = RefactorRequest(
        text=SOURCE, start=start, end=end, instruction="rename w to width", language_id="python"
    )
    job = prepare_refactor(request, 0.0)
    assert job.selection == "return w * h" and job.lead == "    "
    assert job.code == "return w * h" and "return w * h" in job.prompt
    assert job.stop("return width * h\n" + job.fence + "\nmore") == len("return width * h\n")
    assert job.renames == {"w": "width"} and job.expected_text == job.code
    with pytest.raises(EngineError, match="instruction is empty"):
        prepare_refactor(RefactorRequest(text=SOURCE, start=0, end=3, instruction=" "), 0.0)


# -- finish ------------------------------------------------------------------------------


def test_finish_completion_keeps_the_line_and_drops_a_word_the_deadline_cut() -> None:
    job = prepare_completion(CompletionRequest(text=SOURCE, cursor=CURSOR), 0.0, None)
    assert finish_completion_text(job, generated("w * h * d")) == "w * h * d"
    cut = generated("w * h * dep", StopReason.DEADLINE)
    assert finish_completion_text(job, cut) == "w * h * "
    assert finish_completion_text(job, generated("w * h * dep", StopReason.TIME_LIMIT)) == (
        "w * h * dep"  # a time limit stops at a new line: nothing was cut
    )


def test_finish_rewrite_reindents_or_refuses_an_unfinished_rewrite() -> None:
    start, end = SOURCE.index("    return w * h"), SOURCE.index("\n\n\n")
    request = RefactorRequest(text=SOURCE, start=start, end=end, instruction="use width")
    job = prepare_refactor(request, 0.0)
    assert job.lead == "" and job.code == "return w * h"  # the whole line: dedented
    assert finish_rewrite(job, generated("return width * h")) == "    return width * h"
    unfinished = generated("return wid", StopReason.TOKEN_LIMIT)
    unfinished.why_unfinished = "the rewrite stopped before its end (limit)"
    with pytest.raises(EngineError, match="before its end"):
        finish_rewrite(job, unfinished)


# -- stats -------------------------------------------------------------------------------


def test_stats_round_the_counts_and_time_from_the_generation_start() -> None:
    result = generated("x", prompt_tokens=40, reused_prompt_tokens=30, generated_tokens=3)
    result.counts.prompt_ms, result.counts.decode_ms = 12.345, 6.789
    stats = stats_of(result, now=1.5)
    assert (stats.prompt_tokens, stats.reused_prompt_tokens, stats.generated_tokens) == (40, 30, 3)
    assert (stats.prompt_ms, stats.decode_ms, stats.total_ms) == (12.3, 6.8, 1500.0)
    assert stats.speculation == "auto"


def test_limits_count_from_the_start_and_a_spent_limit_still_applies() -> None:
    limits = Limits(started=100.0, max_predict_ms=500, from_start=True, deadline_ms=800)
    assert limits.decode_max_ms(now=100.2) == pytest.approx(300)
    assert limits.deadline_left_ms(now=100.2) == pytest.approx(600)
    assert limits.deadline_left_ms(now=101.0) == SPENT_LIMIT_MS
    assert Limits(100.0, 500).decode_max_ms(now=105.0) == 500  # from the first token
    assert Limits(100.0).deadline_left_ms(now=105.0) == 0  # none


# -- the pipeline over a generator ---------------------------------------------------------


class ListGenerator:
    """Answers each completion from a list; counts what it was asked to make."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.made = 0

    def prompt_for(self, job: CompletionJob) -> str:
        return job.request.text[: job.request.cursor]

    def run_completion(
        self, job: CompletionJob, prompt: str, cancel: CancelToken | None
    ) -> Generated:
        return next(self.run_alternatives(job, prompt, 1, cancel))

    def run_alternatives(
        self, job: CompletionJob, prompt: str, n: int, cancel: CancelToken | None
    ) -> Iterator[Generated]:
        for i, text in enumerate(self.texts):
            self.made += 1
            result = generated(text, prompt_tokens=10, generated_tokens=2)
            result.record = i == 0
            yield result

    def run_rewrite(self, job: RewriteJob, cancel: CancelToken | None) -> Generated:
        return generated("return width * h")

    def run_warm(self, job: CompletionJob, prompt: str, cancel: CancelToken | None) -> int:
        return len(prompt)

    def persist(self) -> int:
        return 0

    def close(self) -> None:
        pass


def test_alternatives_are_distinct_and_stop_being_made_once_there_are_enough() -> None:
    generator = ListGenerator(["w * h * d", " w * h *  d", "", "d * w * h", "h", "never made"])
    pipeline = Pipeline(generator)
    results = pipeline.alternatives(CompletionRequest(text=SOURCE, cursor=CURSOR), 3)
    assert [r.text for r in results] == ["w * h * d", "d * w * h", "h"]
    assert generator.made == 5
    assert pipeline.totals()["requests"] == 1  # only the first counts


def test_the_pipeline_serves_every_kind_through_one_generator() -> None:
    pipeline = Pipeline(ListGenerator(["w * h * d"]))
    result = pipeline.complete(CompletionRequest(text=SOURCE, cursor=CURSOR))
    assert result.text == "w * h * d" and not result.timed_out
    assert pipeline.warm(CompletionRequest(text=SOURCE, cursor=CURSOR)) == CURSOR
    start, end = SOURCE.index("    return w * h"), SOURCE.index("\n\n\n")
    request = RefactorRequest(text=SOURCE, start=start, end=end, instruction="use width")
    refactored = pipeline.refactor(request)
    assert (refactored.new_text, refactored.start, refactored.end) == (
        "    return width * h",
        start,
        end,
    )


# -- the local generator on a scripted model ---------------------------------------------


def test_the_local_generator_decodes_the_prompt_it_built() -> None:
    generator, session = scripted_generator("w * h * d\n    x = 1\n")
    pipeline = Pipeline(generator)
    request = CompletionRequest(text=SOURCE, cursor=CURSOR, path="/w.py", speculation="off")
    job = prepare_completion(request, 0.0, None)
    prompt = generator.prompt_for(job)
    assert prompt.text.startswith("<|fim_prefix|>") and prompt.text.endswith("<|fim_middle|>")
    result = pipeline.complete(request)
    assert result.text == "w * h * d"
    assert session.synced[-1] == [ord(c) for c in prompt.text]
    assert result.stats.generated_tokens == len("w * h * d\n")  # the stop rule cut the "\n"
    assert generator.last_outcome is not None and generator.last_outcome.finished


def test_the_local_generator_refuses_a_rewrite_it_did_not_finish() -> None:
    generator, _ = scripted_generator("return width * h\n" + "x" * 400)
    start, end = SOURCE.index("    return w * h"), SOURCE.index("\n\n\n")
    request = RefactorRequest(
        text=SOURCE, start=start, end=end, instruction="use width", max_tokens=20
    )
    with pytest.raises(EngineError, match="the selection is unchanged"):
        Pipeline(generator).refactor(request)


def test_context_sent_with_the_request_comes_first_then_the_workspace() -> None:
    provider = CountingProvider()
    extra = [Snippet(path="a.py", text="unrelated words"), Snippet(path="b.py", text="def volume")]
    request = CompletionRequest(text=SOURCE, cursor=CURSOR, extra_context=extra)
    context = prepare_completion(request, 0.0, provider).context()
    assert [s.path for s in context] == ["a.py", "b.py", "other.py"]  # most shared words last
    many = extra + [Snippet(path=f"{i}.py", text=f"return w{i}") for i in range(3)]
    request = CompletionRequest(text=SOURCE, cursor=CURSOR, extra_context=many)
    assert len(prepare_completion(request, 0.0, provider).context()) == 3
    assert len(provider.queries) == 1  # three sent along: the workspace was not asked
