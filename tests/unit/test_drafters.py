"""PromptLookupDrafter on plain token arrays."""

import itertools
import random

import pytest

from speculator.drafters import Draft
from speculator.lookup import PromptLookupDrafter
from speculator.lookup_text import SEPARATOR, punctuation_edit, whitespace_edit


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
    drafter = PromptLookupDrafter([source], token_bytes=lambda t: b"+" if t == 99 else b" w")
    first = drafter.propose([10], k=3)
    assert first is not None and first.tokens == [11, 12, 13]
    drafter.feedback(first, accepted=1, correction=99)  # target wrote '+' instead of 12
    second = drafter.propose([10, 11, 99], k=2)  # 99 is nowhere: keep walking the source
    assert second is not None and second.tokens == [13, 14]
    assert second.bucket == "lookup:0"


def test_a_renamed_word_keeps_the_pointer_in_step() -> None:
    drafter = PromptLookupDrafter([[10, 11, 12, 13, 14, 15]])  # opaque words
    first = drafter.propose([10], k=3)
    assert first is not None
    drafter.feedback(first, accepted=1, correction=99)  # 99 written for the word 12
    second = drafter.propose([10, 11, 99], k=2)
    assert second is not None and second.tokens == [13, 14]
    assert second.bucket == "lookup:rename"


def test_tokens_decoded_without_a_draft_move_the_pointer() -> None:
    source = [9, 10, 11, 12, 13, 14, 15, 16]
    drafter = PromptLookupDrafter([source], token_bytes=lambda t: b"+" if t == 99 else b" w")
    first = drafter.propose([9, 10], k=2)
    assert first is not None
    drafter.feedback(first, accepted=0, correction=99)  # '+' in place of 11: an edit
    # Two rounds decoded 12 and 13 plainly (no draft was worth it), then:
    draft = drafter.propose([9, 10, 99, 12, 13], k=2)
    assert draft is not None and draft.tokens == [14, 15]
    assert drafter.expected == source.index(14) and drafter.run == 2


def test_learned_rename_is_applied_and_dropped_when_wrong() -> None:
    source = [0, 1, 50, 2, 50, 3, 50, 4]
    drafter = PromptLookupDrafter([source])
    draft = drafter.propose([0, 1], k=3)
    assert draft is not None and draft.tokens == [50, 2, 50]
    drafter.feedback(draft, accepted=0, correction=60)  # the target renames 50 -> 60
    draft = drafter.propose([0, 1, 60], k=3)
    assert draft is not None and draft.tokens == [2, 60, 3]
    drafter.feedback(Draft([2, 60, 3], "lookup", "lookup:0"), accepted=1, correction=70)
    assert 50 not in drafter.substitutions


def test_a_draft_placed_by_one_chance_token_teaches_no_rename() -> None:
    # source "fsrc, length=0):"; the target first writes "from typing import IO, Optional":
    # its ',' matches the source's, and ' Optional' is new text, not `length` renamed.
    words = {1: b" fsrc", 2: b",", 3: b" length", 4: b"=", 5: b"0", 6: b"):",
             7: b"from", 8: b" IO", 9: b" Optional"}  # fmt: skip
    drafter = PromptLookupDrafter([[1, 2, 3, 4, 5, 6]], token_bytes=words.__getitem__)
    draft = drafter.propose([7, 8, 2], k=3)
    assert draft is not None and draft.tokens == [3, 4, 5] and draft.bucket == "lookup:1"
    drafter.feedback(draft, accepted=0, correction=9)
    assert drafter.substitutions == {} and not drafter.resync
    assert drafter.propose([7, 8, 2, 9], k=3) is None  # nothing to follow: no draft
    # The same rejection where the output follows the source is a rename.
    drafter = PromptLookupDrafter([[1, 2, 3, 4, 5, 6]], token_bytes=words.__getitem__)
    draft = drafter.propose([1, 2], k=3)
    assert draft is not None and draft.bucket == "lookup:2"
    drafter.feedback(draft, accepted=0, correction=9)
    assert drafter.substitutions == {3: 9} and drafter.resync


def test_plain_tokens_follow_a_learned_rename_and_drop_one_not_made() -> None:
    source = [0, 1, 50, 2, 50, 3, 4, 5, 50, 6, 7, 8]
    drafter = PromptLookupDrafter([source])
    draft = drafter.propose([0, 1], k=3)
    assert draft is not None
    drafter.feedback(draft, accepted=0, correction=60)  # the target renames 50 -> 60
    # Decoded plainly, without a draft: the renamed word keeps the pointer in step ...
    drafter.propose([0, 1, 60, 2, 60, 3], k=1)
    assert drafter.expected == source.index(4) and drafter.run == 3
    assert drafter.substitutions == {50: 60}
    # ... and where the target writes the source's own word, the rename is dropped.
    draft = drafter.propose([0, 1, 60, 2, 60, 3, 4, 5, 50], k=2)
    assert 50 not in drafter.substitutions
    assert draft is not None and draft.tokens == [6, 7]


def test_copy_ahead_counts_what_is_left_of_an_aligned_copy_of_the_prompt() -> None:
    selection = list(range(100, 140))
    prompt = [1, 2, *selection, 3]  # 3: the template's end-of-turn marker
    drafter = PromptLookupDrafter([], token_bytes=lambda t: b"" if t == 3 else b" w")
    added = [7, 8, 9]  # text the target adds before it copies the selection
    history = [*prompt, 4, *added, 100]
    assert drafter.copy_ahead(history) is None  # nothing proposed, nothing followed yet
    draft = drafter.propose(history, k=15)
    assert draft is not None and draft.tokens[0] == 101
    drafter.declined(draft)
    for token in range(101, 110):  # followed plainly: aligned from 8 tokens on
        history.append(token)
    assert drafter.copy_ahead(history) == selection[10:]  # 110 ... 139
    history += [140, 141]  # the target leaves the selection: no copy in progress
    assert drafter.copy_ahead(history) is None


def test_a_keyword_written_for_a_word_is_a_rewrite_not_a_rename() -> None:
    words = {10: b" let", 11: b" rpt", 12: b" =", 13: b" return", 14: b" str", 15: b" count"}
    drafter = PromptLookupDrafter([[12, 10, 11, 12, 14]], token_bytes=lambda t: words[t])
    draft = drafter.propose([15], k=3)  # nothing matches 15: nothing to draft
    assert draft is None
    draft = drafter.propose([15, 12, 10], k=2)
    assert draft is not None and draft.tokens == [11, 12]
    drafter.feedback(draft, accepted=0, correction=15)  # `count` for `rpt`: a rename
    assert drafter.substitutions == {11: 15}
    drafter = PromptLookupDrafter([[12, 15, 10, 11, 12, 14]], token_bytes=lambda t: words[t])
    draft = drafter.propose([12, 15], k=2)
    assert draft is not None and draft.tokens == [10, 11]
    drafter.feedback(draft, accepted=0, correction=13)  # `return` for `let`: a rewrite
    assert drafter.substitutions == {} and not drafter.resync


@pytest.mark.parametrize("keyword", [b" using", b" namespace", b" typedef"])
def test_a_word_written_over_a_c_family_keyword_is_no_rename(keyword: bytes) -> None:
    """A C++ header is read as plain text: a line moved above `using details::os::x;`
    puts a name where the source has `using`, which says nothing about renames."""
    words = {10: keyword, 11: b" details", 12: b";", 13: b" filename", 14: b" current", 15: b")"}
    drafter = PromptLookupDrafter([[15, 12, 10, 11, 12, 14]], token_bytes=lambda t: words[t])
    draft = drafter.propose([15, 12], k=2)
    assert draft is not None and draft.tokens == [10, 11]
    drafter.feedback(draft, accepted=0, correction=13)
    assert drafter.substitutions == {} and not drafter.resync


def test_rewritten_history_is_rebuilt() -> None:
    drafter = PromptLookupDrafter([])
    drafter.propose([1, 2, 3, 1], k=1)
    draft = drafter.propose([7, 8, 7], k=1)  # a new request: the old history is gone
    assert draft is not None and draft.tokens == [8]


def _reference_draft(sources: list[list[int]], history: list[int], k: int) -> list[int] | None:
    """The lookup rule by brute force: the latest occurrence of the longest
    suffix of the history (at most 6 tokens) whose continuation is not empty."""
    corpus = [t for source in sources for t in source + [SEPARATOR]] + history
    for n in range(min(6, len(history)), 0, -1):
        ends = [e for e in range(n, len(corpus)) if corpus[e - n : e] == history[-n:]]
        for end in reversed(ends):
            continuation = list(itertools.takewhile(lambda t: t != SEPARATOR, corpus[end:]))
            if continuation:
                return continuation[:k]
            break  # the latest match of this length ends a source: try a shorter one
    return None


def test_first_drafts_match_a_brute_force_search() -> None:
    """The position index finds what a search over every n-gram finds, on
    small alphabets (many partial matches; in long sources, pairs that occur
    hundreds of times), across source boundaries."""
    rng = random.Random(7)
    for trial in range(300):
        alphabet = rng.choice([2, 4])
        size = 400 if trial % 10 == 0 else 20
        sources = [[rng.randrange(alphabet) for _ in range(rng.randrange(size))] for _ in range(3)]
        history = [rng.randrange(alphabet) for _ in range(rng.randrange(1, 40))]
        drafter = PromptLookupDrafter(sources)
        # The first proposal indexes the prompt; later ones, the output as it grows.
        for end in range(len(history) // 2 + 1, len(history) + 1):
            draft = drafter.propose(history[:end], k=5)
            expected = _reference_draft(sources, history[:end], 5)
            assert (draft.tokens if draft else None) == expected, (sources, history[:end])


def test_a_long_corpus_is_searched_whole() -> None:
    source = list(range(10, 5010))  # the match is at the far end of 5,000 tokens
    draft = PromptLookupDrafter([source]).propose([1, 4998, 4999], k=3)
    assert draft is not None and draft.tokens == [5000, 5001, 5002]


PIECES = {0: b" =", 1: b"h", 2: b"*", 3: b"6", 4: b".", 5: b"0", 6: b")", 7: b" *", 8: b" "}


def test_drafts_grow_with_the_run_of_accepted_tokens() -> None:
    source = list(range(100, 200))
    drafter = PromptLookupDrafter([source])
    history = [100]
    sizes = []
    for _ in range(3):
        draft = drafter.propose(history, k=64)
        assert draft is not None
        sizes.append(len(draft.tokens))
        drafter.feedback(draft, accepted=len(draft.tokens), correction=None)
        history += draft.tokens + [history[-1] + len(draft.tokens) + 1]  # the bonus token
    assert sizes == [15, 30, 52]  # twice the run, until the source ends
    assert draft is not None and draft.bucket == "lookup:aligned"
    drafter.feedback(Draft([0], "lookup", "lookup:aligned"), accepted=0, correction=999)
    assert drafter.run == 0  # a rejection starts small again


def test_a_whitespace_insertion_keeps_the_pointer_on_the_source() -> None:
    # source "h*6.0)" ; the target writes "h * 6.0)": ' *' for '*', then an inserted ' '
    drafter = PromptLookupDrafter([[0, 1, 2, 3, 4, 5, 6]], token_bytes=PIECES.__getitem__)
    draft = drafter.propose([0, 1], k=4)
    assert draft is not None and draft.tokens == [2, 3, 4, 5]
    drafter.feedback(draft, accepted=0, correction=7)  # ' *' in place of '*': respaced
    draft = drafter.propose([0, 1, 7], k=4)
    assert draft is not None and draft.tokens == [3, 4, 5, 6] and draft.bucket == "lookup:resync"
    drafter.feedback(draft, accepted=0, correction=8)  # ' ' inserted before '6'
    draft = drafter.propose([0, 1, 7, 8], k=4)
    assert draft is not None and draft.tokens == [3, 4, 5, 6]  # '6' is still due
    assert 2 not in drafter.substitutions and 3 not in drafter.substitutions


# "``object_hook`` is an optional ... If ``object_hook``\n    is also defined,", renamed:
REWRAP = [b" ``", b"hook", b"``", b" is", b" an", b" optional", b".", b" If", b"``\n", b"   "]
REWRAP += [b" also", b" defined", b","]


def test_plain_tokens_follow_a_line_rewrapped_after_a_rename() -> None:
    # The shorter name fits " is" on the line: "``\n    is" is written "`` is", the
    # second decoded plainly. The pair "`` is" occurs only earlier in the source:
    # a match there would draft " an optional", which the target does not write.
    token = {piece: i for i, piece in enumerate(REWRAP)}
    follows = [token[b" also"], token[b" defined"], token[b","]]
    draft = _draft_after_a_rewrap(PromptLookupDrafter.for_request("refactor", [], _rewrap, None))
    assert draft is not None and draft.tokens[:3] == follows and draft.bucket == "lookup:resync"
    # A completion does not: its extra drafts did not pay on the test split.
    draft = _draft_after_a_rewrap(PromptLookupDrafter.for_request("completion", [], _rewrap, None))
    assert draft is None or draft.tokens[:3] != follows


def _rewrap(token: int) -> bytes:
    return REWRAP[token]


def _draft_after_a_rewrap(drafter: PromptLookupDrafter) -> Draft | None:
    token = {piece: i for i, piece in enumerate(REWRAP)}
    prompt = [token[p] for p in (b" ``", b"hook", b"``", b" is", b" an", b" optional", b".")]
    prompt += [token[p] for p in (b" If", b" ``", b"hook", b"``\n", b"   ", b" is", b" also")]
    prompt += [token[b" defined"], token[b","], token[b"."]]
    history = prompt + [token[b" If"], token[b" ``"]]
    draft = drafter.propose(history, k=8)
    assert draft is not None and draft.tokens[:2] == [token[b"hook"], token[b"``\n"]]
    drafter.feedback(draft, accepted=1, correction=token[b"``"])  # respaced: resync
    history += [token[b"hook"], token[b"``"]]
    draft = drafter.propose(history, k=8)
    assert draft is not None and draft.bucket == "lookup:resync"
    drafter.declined(draft)  # not worth a verify: the next token is decoded plainly
    history.append(token[b" is"])  # the indent skipped, " is" written on the same line
    return drafter.propose(history, k=8)


def test_a_plain_token_off_the_source_ends_the_resync() -> None:
    token = {piece: i for i, piece in enumerate(REWRAP)}
    source = [token[p] for p in (b" If", b" ``", b"hook", b"``\n", b"   ", b" is", b" also")]
    drafter = PromptLookupDrafter([source], token_bytes=REWRAP.__getitem__)
    history = [token[b" If"], token[b" ``"]]
    draft = drafter.propose(history, k=8)
    assert draft is not None
    drafter.feedback(draft, accepted=1, correction=token[b"``"])
    history += [token[b"hook"], token[b"``"]]
    draft = drafter.propose(history, k=8)
    assert draft is not None
    drafter.declined(draft)
    history.append(token[b"."])  # new text, not a change of whitespace
    draft = drafter.propose(history, k=8)
    assert not drafter.resync
    assert draft is not None and draft.bucket == "lookup:0"  # the unsure walk, no resync


def test_whitespace_edit_classification() -> None:
    assert whitespace_edit(b"6", b" ") == "insert"
    assert whitespace_edit(b" ", b"6") == "delete"
    assert whitespace_edit(b"*", b" *") == "respace"
    assert whitespace_edit(b"r", b" red") is None


# A toy vocabulary where the tokenizer merges '(' with the word after it.
VOCAB = ["def", " f", "(r", "(red", ",", " g", "):", "\n", " return", ")", " r", " red"]


def _piece(token: int) -> bytes:
    return VOCAB[token].encode()


def _tokenize(text: str) -> list[int]:
    out = []
    while text:
        token = max(
            (i for i, v in enumerate(VOCAB) if text.startswith(v)), key=lambda i: len(VOCAB[i])
        )
        out.append(token)
        text = text[len(VOCAB[token]) :]
    return out


def _write_red_for_r(drafter: PromptLookupDrafter) -> Draft | None:
    """The target renames `r` to `red` where the prompt has `r`; the draft
    proposed once `red` is a whole word."""
    prompt = _tokenize("def f(r, g):\n return f(r, g)")
    output = _tokenize("def f(red, g):\n return f(red, g)")
    history = prompt + output[:1]
    first = drafter.propose(history, k=8)
    assert first is not None and first.tokens[:2] == _tokenize(" f(r")
    drafter.feedback(first, accepted=1, correction=VOCAB.index("(red"))
    history = prompt + output[:3]  # 'def f(red'
    second = drafter.propose(history, k=3)
    assert second is not None and second.tokens == _tokenize(", g):")
    drafter.feedback(second, accepted=3, correction=None)
    history = prompt + output[:7]  # the bonus token '\n' too: 'red' is a whole word now
    return drafter.propose(history, k=4)


def test_a_rename_is_learned_as_a_word_and_applied_to_merged_tokens() -> None:
    drafter = PromptLookupDrafter([], token_bytes=_piece, tokenize=_tokenize)
    third = _write_red_for_r(drafter)
    assert drafter.renames == {"r": "red"}
    assert third is not None and third.tokens == _tokenize(" return f(red,")


def test_only_a_refactor_learns_whole_word_renames() -> None:
    """A completion's lookup drafter builds no renamed copy."""
    learned = {}
    for kind in ("refactor", "completion"):
        drafter = PromptLookupDrafter.for_request(kind, [], _piece, _tokenize)
        _write_red_for_r(drafter)
        learned[kind] = drafter.renames
    assert learned == {"refactor": {"r": "red"}, "completion": {}}


def _buckets_over_plain_tokens(tell_declines: bool) -> list[str]:
    """Propose each round, never verify (every draft declined), and decode the
    source's own tokens plainly: the buckets the drafter offers along the way."""
    source = list(range(100, 200))
    drafter = PromptLookupDrafter([source])
    history = [5, 100]
    buckets = []
    for next_token in range(101, 113):
        draft = drafter.propose(history, k=15)
        assert draft is not None and draft.tokens[0] == next_token
        buckets.append(draft.bucket)
        if tell_declines:
            drafter.declined(draft)
        history.append(next_token)  # the plain round decodes what the source said
    return buckets


def test_plain_tokens_that_follow_a_declined_draft_make_it_aligned() -> None:
    # Where a verify row costs nearly a step (one thread on a busy machine) only
    # aligned drafts pay; a drafter that never got one verified must still get there.
    buckets = _buckets_over_plain_tokens(tell_declines=True)
    assert buckets[0] == "lookup:1"
    assert "lookup:aligned" not in buckets[:8]
    assert buckets[9:] == ["lookup:aligned"] * 3
    assert "lookup:aligned" not in _buckets_over_plain_tokens(tell_declines=False)


def test_renames_from_the_instruction_are_drafted_from_the_first_token() -> None:
    prompt = _tokenize("def f(r, g):\n return f(r, g)")
    drafter = PromptLookupDrafter([], token_bytes=_piece, tokenize=_tokenize, renames={"r": "red"})
    draft = drafter.propose(prompt + _tokenize("def"), k=10)
    assert draft is not None
    assert draft.tokens == _tokenize(" f(red, g):\n return f(red,")


def test_a_given_rename_the_target_does_not_make_is_dropped() -> None:
    prompt = _tokenize("def f(r, g):\n return f(r, g)")
    output = _tokenize("def f(r, g):\n return f(r, g)")  # the target kept `r`
    drafter = PromptLookupDrafter([], token_bytes=_piece, tokenize=_tokenize, renames={"r": "red"})
    first = drafter.propose(prompt + output[:1], k=8)
    assert first is not None and first.tokens[1] == VOCAB.index("(red")
    drafter.feedback(first, accepted=1, correction=VOCAB.index("(r"))
    second = drafter.propose(prompt + output[:3], k=3)  # 'def f(r'
    assert second is not None
    drafter.feedback(second, accepted=3, correction=None)
    third = drafter.propose(prompt + output[:7], k=4)
    assert drafter.renames == {}
    assert third is not None and third.tokens == _tokenize(" return f(r,")


def test_a_draft_stops_at_a_control_token() -> None:
    # Past the selection a refactor prompt goes on with the chat template's
    # markers, which have no text: a copy of the prompt ends there.
    drafter = PromptLookupDrafter([], token_bytes=lambda t: b"" if t == 0 else b" w%d" % t)
    draft = drafter.propose([1, 2, 3, 0, 4, 5, 1, 2], k=5)
    assert draft is not None and draft.tokens == [3]


def test_the_renamed_copy_keeps_the_markers_that_end_the_selection() -> None:
    marker = 99  # a control token: no text of its own

    def piece(token: int) -> bytes:
        return b"" if token == marker else _piece(token)

    prompt = _tokenize("def f(r, g):\n return f(r, g)") + [marker] + _tokenize("\n return")
    drafter = PromptLookupDrafter([], token_bytes=piece, tokenize=_tokenize, renames={"r": "red"})
    draft = drafter.propose(prompt + _tokenize("def"), k=15)
    assert draft is not None
    assert draft.tokens == _tokenize(" f(red, g):\n return f(red, g)")


# JavaScript: "  f(`x`)\n  return y\n" where the target adds semicolons.
JS = {
    1: b"  f",
    2: b"(`",
    3: b"x",
    4: b"`)\n",
    5: b"  return",
    6: b" y",
    7: b"\n",
    8: b"`);\n",
    9: b"`",
    10: b")\n",
}


def test_an_added_semicolon_keeps_the_pointer_on_the_source() -> None:
    drafter = PromptLookupDrafter([[1, 2, 3, 4, 5, 6, 7]], token_bytes=JS.__getitem__)
    draft = drafter.propose([1, 2], k=5)
    assert draft is not None and draft.tokens == [3, 4, 5, 6, 7]
    drafter.feedback(draft, accepted=1, correction=8)  # '`);\n' where the source has '`)\n'
    draft = drafter.propose([1, 2, 3, 8], k=5)
    assert draft is not None and draft.tokens == [5, 6, 7]
    assert draft.bucket == "lookup:punctuation"


def test_the_same_text_cut_into_other_tokens_is_no_edit() -> None:
    # '}"' where the source has '}' then '"`\n': the target only cut the text
    # elsewhere (its next token is '`;\n'), so '"' is no added character.
    pieces = {1: b"  f", 2: b"(`", 11: b"}", 12: b'"`\n', 13: b'}"'}
    drafter = PromptLookupDrafter([[1, 2, 11, 12]], token_bytes=pieces.__getitem__)
    draft = drafter.propose([1], k=3)
    assert draft is not None and draft.tokens == [2, 11, 12]
    drafter.feedback(draft, accepted=1, correction=13)
    assert not drafter.resync


def test_punctuation_edit_classification() -> None:
    assert punctuation_edit(b"`)\n", b"`);\n")  # added
    assert punctuation_edit(b"x,\n", b"x\n")  # dropped
    assert punctuation_edit(b"}`\n\n", b"}`\n\n")  # the same text, joined
    assert not punctuation_edit(b",", b":")  # changed: a type hint starts here
    assert not punctuation_edit(b")", b": int)")  # new words
    assert not punctuation_edit(b"`)\n", b"`)));\n")  # more than two characters
