"""The syntax layer's offset helpers agree with Python's own encoders."""

from speculator.grounding import Grounding
from speculator.languages import new_parser
from speculator.syntax import byte_offset, char_offset, point, utf8

TEXT = "a😀\nb\ud800é\nc"


def test_byte_and_char_offsets_round_trip_with_lone_surrogates() -> None:
    data = utf8(TEXT)
    for offset in range(len(TEXT) + 1):
        byte = byte_offset(TEXT, offset)
        assert char_offset(data, byte) == offset
    assert point(TEXT, TEXT.index("é")) == (1, 4)  # "b" + 3-byte surrogate


def test_grounding_uses_the_tree_it_is_given() -> None:
    text = "def f():\n    return 1\n"
    parser = new_parser("python")
    assert parser is not None
    tree = parser.parse(utf8(text))
    grounding = Grounding(text, "python", tree)
    assert grounding.tree is tree
    assert grounding.enclosing_scope(text.index("return")) == (0, len(text) - 1)
