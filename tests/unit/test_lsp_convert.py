"""UTF-16 position <-> code-point offset conversion."""

import pytest
from lsprotocol import types

from lsp_server.convert import LineIndex, PositionError, utf16_len, utf16_to_codepoints


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def test_utf16_len_counts_astral_chars_twice() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("a😀b") == 4
    assert utf16_len("é") == 1


def test_column_inside_surrogate_pair_stays_before_the_char() -> None:
    line = "x😀y"
    assert utf16_to_codepoints(line, 1) == 1
    assert utf16_to_codepoints(line, 2) == 1  # middle of the emoji
    assert utf16_to_codepoints(line, 3) == 2
    assert utf16_to_codepoints(line, 4) == 3
    assert utf16_to_codepoints(line, 99) == 3


def test_offsets_round_trip_with_emoji_and_all_line_breaks() -> None:
    text = "a😀b\r\n𝒳 = 1\rlast\nπ😀😀"
    index = LineIndex(text)
    assert index.line_count == 4
    for offset in range(len(text) + 1):
        if text[offset - 1 : offset + 1] == "\r\n":
            continue  # between \r and \n is not a position LSP can name
        assert index.offset(index.position(offset)) == offset


def test_offset_examples() -> None:
    index = LineIndex("a😀b\nπ😀x")
    assert index.offset(pos(0, 3)) == 2  # after the emoji
    assert index.offset(pos(1, 3)) == 6
    assert index.position(len(index.text)) == pos(1, 4)


def test_character_past_line_end_clamps_to_line_end() -> None:
    index = LineIndex("ab\ncd")
    assert index.offset(pos(0, 50)) == 2


def test_line_past_end_is_an_error_when_strict_and_clamps_otherwise() -> None:
    index = LineIndex("ab\ncd")
    with pytest.raises(PositionError):
        index.offset(pos(5, 0))
    assert index.offset(pos(5, 0), strict=False) == 5


def test_range_conversion() -> None:
    index = LineIndex("def f():\n    return 😀\n")
    rng = types.Range(start=pos(1, 4), end=pos(1, 13))  # just after the emoji
    assert index.offsets(rng) == (13, 21)
    assert index.range(13, 21) == rng
    with pytest.raises(PositionError):
        index.offsets(types.Range(start=pos(1, 4), end=pos(0, 0)))


def test_lone_surrogates_count_as_one_utf16_unit() -> None:
    """Issue 11, item 4: a lone surrogate is valid JSON and one unit in the editor."""
    assert utf16_len("a\ud800b") == 3
    index = LineIndex("a\ud800b\n")
    assert index.offset(pos(0, 2)) == 2
    assert index.position(3) == pos(0, 3)


def test_line_index_updated_around_an_edit_equals_a_fresh_one() -> None:
    import random

    rng = random.Random(11)
    pieces = ["\r", "\n", "\r\n", "a", "😀", "\ud800", "", "xy\r"]
    text = "ab\r\ncd\re\nf"
    index = LineIndex(text)
    for _ in range(5000):
        start = rng.randrange(len(text) + 1)
        end = min(len(text), start + rng.randrange(4))
        new = "".join(rng.choice(pieces) for _ in range(rng.randrange(3)))
        edited = text[:start] + new + text[end:]
        index = index.edited(start, end, new, edited)
        text = edited
        assert index.starts == LineIndex(text).starts
        if len(text) > 200:
            text = text[:50]
            index = LineIndex(text)
