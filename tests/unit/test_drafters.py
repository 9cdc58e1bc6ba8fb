"""PromptLookupDrafter on plain token arrays."""

from speculator.drafters import Draft, PromptLookupDrafter


def test_longest_match_continues_the_source() -> None:
    source = [1, 2, 3, 4, 5, 6, 7, 8]
    drafter = PromptLookupDrafter([source])
    draft = drafter.propose([9, 2, 3, 4], k=3)
    assert draft is not None
    assert draft.tokens == [5, 6, 7]
    assert draft.bucket == "lookup:3"


def test_prefers_the_longer_ngram_over_the_more_recent_one() -> None:
    drafter = PromptLookupDrafter([[1, 2, 3, 10, 11], [0, 3, 20, 21]])
    draft = drafter.propose([2, 3], k=2)
    assert draft is not None and draft.tokens == [10, 11]


def test_most_recent_match_wins_among_equal_lengths() -> None:
    drafter = PromptLookupDrafter([[5, 1, 2], [5, 3, 4]])
    draft = drafter.propose([7, 5], k=2)
    assert draft is not None and draft.tokens == [3, 4]


def test_continuation_never_crosses_a_source_boundary() -> None:
    drafter = PromptLookupDrafter([[1, 2, 3], [4, 5]])
    draft = drafter.propose([1, 2], k=5)
    assert draft is not None and draft.tokens == [3]


def test_history_is_part_of_the_corpus() -> None:
    drafter = PromptLookupDrafter([])
    history = [1, 2, 3, 4, 1, 2]
    draft = drafter.propose(history, k=2)
    assert draft is not None and draft.tokens == [3, 4]


def test_no_match_gives_no_draft() -> None:
    drafter = PromptLookupDrafter([[1, 2, 3]])
    assert drafter.propose([9], k=4) is None
    assert drafter.propose([1, 2], k=0) is None


def test_alignment_follows_the_source_after_a_rejection() -> None:
    source = [10, 11, 12, 13, 14, 15]
    drafter = PromptLookupDrafter([source])
    first = drafter.propose([10], k=3)
    assert first is not None and first.tokens == [11, 12, 13]
    drafter.feedback(first, accepted=1, correction=99)  # target wrote 99 instead of 12
    second = drafter.propose([10, 11, 99], k=2)  # 99 is nowhere: keep walking the source
    assert second is not None and second.tokens == [13, 14]
    assert second.bucket == "lookup:0"


def test_learned_rename_is_applied_and_dropped_when_wrong() -> None:
    source = [1, 50, 2, 50, 3, 50, 4]
    drafter = PromptLookupDrafter([source])
    draft = drafter.propose([1], k=3)
    assert draft is not None and draft.tokens == [50, 2, 50]
    drafter.feedback(draft, accepted=0, correction=60)  # the target renames 50 -> 60
    draft = drafter.propose([1, 60], k=3)
    assert draft is not None and draft.tokens == [2, 60, 3]
    drafter.feedback(Draft([2, 60, 3], "lookup", "lookup:0"), accepted=1, correction=70)
    assert 50 not in drafter.substitutions


def test_rewritten_history_is_rebuilt() -> None:
    drafter = PromptLookupDrafter([])
    drafter.propose([1, 2, 3, 1], k=1)
    draft = drafter.propose([7, 8, 7], k=1)  # a new request: the old history is gone
    assert draft is not None and draft.tokens == [8]
