"""Edit history: keystrokes merge into the edits a person would name; undoing the
recorded edits from the current text gives back every earlier text."""

from __future__ import annotations

import random

from speculator.edits import (
    MAX_DOCUMENTS,
    MAX_EDITS,
    Edit,
    EditHistory,
    edits_between,
    merge,
    snapshots,
    spans_now,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def typed(history: EditHistory, uri: str, text: str, at: int, word: str) -> str:
    """Type `word` one character at a time at offset `at`; the new text."""
    for i, char in enumerate(word):
        history.record(uri, at + i, "", char)
        text = text[: at + i] + char + text[at + i :]
    return text


def test_a_word_typed_key_by_key_is_one_edit() -> None:
    history = EditHistory()
    text = typed(history, "a", "x = 1\n", 4, "10 + ")
    assert text == "x = 10 + 1\n"
    assert [(e.start, e.old, e.new) for e in history.edits("a")] == [(4, "", "10 + ")]


def test_a_rename_by_select_and_retype_is_old_to_new() -> None:
    history = EditHistory()
    text = "for name in dir(plugin):\n"
    history.record("a", 4, "name", "")  # the selected word deleted
    text = text[:4] + text[8:]
    text = typed(history, "a", text, 4, "attr_name")
    edits = history.edits("a")
    assert text == "for attr_name in dir(plugin):\n"
    # Trimmed to what changed: "name" kept its place, "attr_" came before it.
    assert [(e.start, e.old, e.new) for e in edits] == [(4, "", "attr_")]


def test_a_retyped_name_that_shares_a_letter_with_the_old_one_stays_one_edit() -> None:
    # Neovim's `ciw` then `length`: `side` deleted, then `le` reads as `sid -> l`
    # for a moment (the `e` is shared); the `n` typed next still extends the edit.
    history = EditHistory()
    text = "def area(side):\n"
    history.record("a", 9, "side", "")
    text = typed(history, "a", text[:9] + text[13:], 9, "length")
    assert text == "def area(length):\n"
    assert [(e.start, e.old, e.new) for e in history.edits("a")] == [(9, "side", "length")]


def test_backspaces_into_a_typed_word_shorten_it_and_typed_then_deleted_leaves_nothing() -> None:
    history = EditHistory()
    text = typed(history, "a", "f()\n", 2, "abc")
    history.record("a", 4, "c", "")  # backspace
    text = text[:4] + text[5:]
    assert [(e.start, e.old, e.new) for e in history.edits("a")] == [(2, "", "ab")]
    history.record("a", 2, "ab", "")
    assert history.edits("a") == []


def test_an_edit_elsewhere_or_after_a_pause_is_a_new_edit() -> None:
    clock = Clock()
    history = EditHistory(clock)
    history.record("a", 0, "", "x")
    history.record("a", 10, "", "y")  # elsewhere
    clock.now = 100.0
    history.record("a", 11, "", "z")  # touches "y" but long after
    assert [(e.start, e.new) for e in history.edits("a")] == [(0, "x"), (10, "y"), (11, "z")]


def test_history_is_bounded_and_dropped_on_close() -> None:
    history = EditHistory()
    for i in range(MAX_EDITS + 5):
        history.record("a", i * 10, "", "x")
    assert len(history.edits("a")) == MAX_EDITS
    for i in range(MAX_DOCUMENTS + 3):
        history.record(f"doc{i}", 0, "", "x")
    assert history.edits("a") == []  # the least recently edited went first
    history.forget(f"doc{MAX_DOCUMENTS + 2}")
    assert history.edits(f"doc{MAX_DOCUMENTS + 2}") == []


def test_elsewhere_lists_other_documents_newest_first() -> None:
    clock = Clock()
    history = EditHistory(clock)
    for uri in ("a", "b", "c"):
        clock.now += 1
        history.record(uri, 0, "", uri)
    assert [uri for uri, _ in history.elsewhere("b")] == ["c", "a"]


def test_merge_matches_applying_both_edits() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        text = "".join(rng.choice("ab\n") for _ in range(rng.randint(0, 12)))
        s1 = rng.randint(0, len(text))
        e1 = rng.randint(s1, len(text))
        first = Edit(s1, text[s1:e1], "".join(rng.choice("xy") for _ in range(rng.randint(0, 4))))
        middle = first.apply(text)
        s2 = rng.randint(0, len(middle))
        e2 = rng.randint(s2, len(middle))
        second = Edit(
            s2, middle[s2:e2], "".join(rng.choice("zw") for _ in range(rng.randint(0, 4)))
        )
        merged = merge(first, second)
        if merged is None:
            assert e2 < first.start or s2 > first.new_end
            continue
        assert merged.apply(text) == second.apply(middle)
        assert text[merged.start : merged.end] == merged.old


def test_snapshots_rebuild_every_earlier_text_from_random_typing() -> None:
    rng = random.Random(3)
    clock = Clock()
    history = EditHistory(clock)
    text = "def f(a, b):\n    return a + b\n"
    texts = [text]
    for _ in range(300):
        clock.now += rng.choice([0.1, 0.1, 20.0])
        start = rng.randint(0, len(text))
        end = min(len(text), start + rng.choice([0, 0, 1, 3]))
        new = rng.choice(["", "x", "é", "🙂", "\n", "name"])
        history.record("a", start, text[start:end], new)
        text = text[:start] + new + text[end:]
        texts.append(text)
    edits = history.edits("a")
    rebuilt = snapshots(text, edits)
    assert rebuilt[-1] == text
    for before, edit, after in zip(rebuilt, edits, rebuilt[1:], strict=False):
        assert edit.apply(before) == after
        assert before in texts  # a text the document really had


def test_edits_between_rebuild_the_old_text_and_put_the_nearest_last() -> None:
    old = "".join(f"line {i}\n" for i in range(30))
    new = old.replace("line 3\n", "line three\n").replace("line 20\n", "")
    new = new.replace("line 25\n", "line 25\nadded\n")
    for near, last_new in ((2, "three"), (27, "added\n"), (None, "added\n")):
        chain = edits_between(old, new, near)
        assert len(chain) == 3
        assert snapshots(new, chain)[0] == old
        assert last_new in chain[-1].new
    assert edits_between(old, old) == []


def test_spans_now_find_each_edits_text_after_the_later_ones() -> None:
    text = "x = 1\ny = 2\n"
    first = Edit(0, "x", "total")  # "total = 1\ny = 2\n"
    second = Edit(10, "y", "count")  # after it, below
    third = Edit(0, "", "# note\n")  # above both
    now = third.apply(second.apply(first.apply(text)))
    spans = spans_now([first, second, third])
    assert [now[a:b] for a, b in spans] == ["total", "count", "# note\n"]


def test_spans_now_hold_what_survives_of_each_edit_from_random_edits() -> None:
    rng = random.Random(5)
    text, edits = "a" * 60, []
    for i in range(40):
        start = rng.randint(0, len(text))
        end = min(len(text), start + rng.choice([0, 1, 2, 5]))
        edit = Edit(start, text[start:end], chr(0x4E00 + i) * rng.randint(0, 3))
        edits.append(edit)
        text = edit.apply(text)
    for i, (a, b) in enumerate(spans_now(edits)):
        kept = [at for at, char in enumerate(text) if char == chr(0x4E00 + i)]
        assert all(a <= at < b for at in kept), (i, kept, (a, b))
