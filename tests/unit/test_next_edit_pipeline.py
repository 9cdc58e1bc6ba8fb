"""A next edit through the pipeline and the local generator, on a scripted model
that writes the window with the rename carried on: the same edit with and without
speculation, drafted from the draft under `auto`, with the model's probabilities."""

from __future__ import annotations

import math

import pytest
from scripted_model import VOCAB, scripted_generator

from speculator.edits import EditHistory
from speculator.next_edit import core
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.pipeline import Pipeline
from speculator.pipeline_next_edit import prepare_next_edit

CODE = "".join(f"value_{i} = compute({i})\n" for i in range(12)) + (
    "def register(plugin):\n"
    "    for name in dir(plugin):\n"
    "        opts = parse(plugin, name)\n"
    "        method = getattr(plugin, name)\n"
)
# The scripted model's choice has logit 10 against 0 for the other tokens.
PROBABILITY = math.exp(10) / (math.exp(10) + VOCAB - 1)


def request(speculation: str, draft_only: bool = False) -> NextEditRequest:
    """The rename carried on, as a rewrite (draft_only: as the model only scores it)."""
    history = EditHistory()
    at = CODE.index("getattr(plugin, name)") + len("getattr(plugin, ")
    history.record("u", at, "name", "attr_name")
    text = CODE[:at] + "attr_name" + CODE[at + 4 :]
    return NextEditRequest(
        text=text,
        cursor=at + len("attr_name"),
        edits=history.edits("u"),
        path="/p.py",
        speculation=speculation,  # type: ignore[arg-type]
        min_confidence=0.3,  # the script's tokens have PROBABILITY; a rename needs 0.3**0.8
        draft_only=draft_only,
    )


def test_prepare_next_edit_is_a_traced_rewrite_of_the_window_drafting_from_the_draft() -> None:
    prepared = prepare_next_edit(request("auto"), 0.0)
    assert prepared is not None
    plan, job = prepared
    assert (
        job.selection == plan.window.text == job.request.text[job.request.start : job.request.end]
    )
    assert job.expected == plan.job.draft and "for attr_name in" in job.expected
    assert job.trace and job.slot_kind == "next-edit" and job.fence == "```"


@pytest.mark.parametrize("speculation", ["off", "lookup", "auto"])
def test_the_local_generator_proposes_the_scripted_edit(speculation: str) -> None:
    plan = prepare(request(speculation))
    assert plan is not None
    generator, _ = scripted_generator(plan.job.draft + "```\n")
    result = Pipeline(generator).next_edit(request(speculation))
    (edit,) = result.edits
    text = request(speculation).text
    proposed = text[: edit.start] + edit.new_text + text[edit.end :]
    assert proposed == CODE.replace("name", "attr_name")
    assert result.confidence == pytest.approx(PROBABILITY, rel=1e-4)
    if speculation == "lookup":
        assert result.stats.accepted_tokens > 100  # verified in batches from the draft
    if speculation == "off":
        assert result.stats.drafted_tokens == 0


def test_a_rewrite_the_model_did_not_finish_proposes_nothing() -> None:
    """The change written, then a runaway before the rewrite copies the window again."""
    plan = prepare(request("off"))
    assert plan is not None
    changed = plan.job.draft.index("parse(plugin, attr_name)\n") + len("parse(plugin, attr_name)\n")
    generator, _ = scripted_generator(plan.job.draft[:changed] + "x" * 2000)
    assert Pipeline(generator).next_edit(request("off")).edits == []


def test_the_draft_is_scored_as_a_second_candidate() -> None:
    """A model that copies the window proposes nothing itself; the draft (the rename
    carried on) is then scored by the model: proposed only if its changed tokens
    clear the bar (here they have the probability of a token the script did not pick)."""
    plan = prepare(request("off"))
    assert plan is not None
    generator, _ = scripted_generator(plan.window.text + "```\n")
    quiet = Pipeline(generator).next_edit(request("off"))
    assert quiet.edits == []
    low = NextEditRequest(**{**request("off").__dict__, "min_confidence": 0.0})
    generator, _ = scripted_generator(plan.window.text + "```\n")
    (edit,) = Pipeline(generator).next_edit(low).edits
    assert "attr_name" in edit.new_text


def test_only_the_drafts_first_change_is_scored_and_a_candidate() -> None:
    """A later change of the draft is scored after the earlier ones, which makes
    it look surer than it is: only the first counts, and scoring stops after it."""
    base = request("off")
    text = base.text + "        log(name)\n        return name\n"
    plan = prepare(NextEditRequest(**{**base.__dict__, "text": text}))
    assert plan is not None
    assert plan.job.draft.endswith("log(attr_name)\n        return attr_name\n")  # two changes
    end = core.draft_change_end(plan)
    assert end is not None
    assert plan.job.draft[:end].endswith("opts = parse(plugin, attr_name)\n")
    generator, _ = scripted_generator(plan.window.text + "```\n")
    low = NextEditRequest(**{**base.__dict__, "text": text, "min_confidence": 0.0})
    (edit,) = Pipeline(generator).next_edit(low).edits
    assert edit.new_text.startswith("attr_name in dir(plugin)")  # the first change


@pytest.mark.parametrize("speculation", ["off", "auto"])
def test_a_draft_only_model_scores_the_draft_in_one_batch_and_decodes_nothing(
    speculation: str,
) -> None:
    """The instruct model's way: no rewrite, the draft's change verified after the
    prompt; the same edit in every mode, proposed when its probability clears the bar."""
    plan = prepare(request(speculation, draft_only=True))
    assert plan is not None and plan.draft_only and plan.asks_model
    generator, _ = scripted_generator(plan.job.draft + "```\n")
    result = Pipeline(generator).next_edit(request(speculation, draft_only=True))
    (edit,) = result.edits
    assert "attr_name" in edit.new_text
    assert result.confidence == pytest.approx(PROBABILITY, rel=1e-4)
    assert result.stats.generated_tokens == 0 and result.stats.prompt_tokens > 0
    # A model that would copy the window gives the draft's tokens a low probability.
    generator, _ = scripted_generator(plan.window.text + "```\n")
    assert Pipeline(generator).next_edit(request(speculation, draft_only=True)).edits == []


def test_the_drafts_tokens_before_its_change_are_read_but_get_no_logits() -> None:
    """The lines the draft copies before its change are context: evaluated after
    the prompt, but only the change's tokens (and the one before, whose row
    predicts the first) are scored."""
    plan = prepare(request("auto", draft_only=True))
    assert plan is not None and plan.draft_change is not None
    since, upto = plan.draft_change.span[0], core.draft_change_end(plan)
    assert upto is not None and since > 0
    generator, session = scripted_generator(plan.job.draft + "```\n")
    (edit,) = Pipeline(generator).next_edit(request("auto", draft_only=True)).edits
    assert "attr_name" in edit.new_text
    # The scripted model's tokens are characters: all `upto` of them evaluated,
    # logits rows from the token before the change on.
    assert session.rows_asked == [upto - since]
    assert len(session.cells) == session.prompt_len  # the answer trimmed off again
