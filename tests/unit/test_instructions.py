"""Reading renames out of a refactor instruction."""

import pytest

from speculator.instructions import rename_pairs

SELECTION = "def f(r, g, b, opts, args, optarg):\n    maxc = minc = result = 0\n"


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        ("Rename the local variable `result` to `matches`.", {"result": "matches"}),
        (
            "Rename the parameters r, g, b to red, green, blue.",
            {"r": "red", "g": "green", "b": "blue"},
        ),
        (
            "Rename `opts` to `pairs`, `optarg` to `value` and `args` to `rest`.",
            {"opts": "pairs", "optarg": "value", "args": "rest"},
        ),
        (
            "Rename the local variables `maxc` and `minc` to `high` and `low`.",
            {"maxc": "high", "minc": "low"},
        ),
        (
            "Rename the parameter `opts` to `options` and the local variable `maxc` to `top`.",
            {"opts": "options", "maxc": "top"},
        ),
        ("rename result -> total", {"result": "total"}),
        ("Rename maxc as highest", {"maxc": "highest"}),
    ],
)
def test_renames_are_read_in_order(instruction: str, expected: dict[str, str]) -> None:
    assert rename_pairs(instruction, SELECTION) == expected


@pytest.mark.parametrize(
    "instruction",
    [
        "Add type hints to the parameters and the return value.",
        "Convert the string concatenations to template literals.",
        "Rename the variable to something clearer.",  # no old name in the selection
        "Rename `missing` to `found`.",  # not a word of the selection
        "Rename `r`, `g` and `b` to `red`.",  # three names for one: ambiguous
    ],
)
def test_anything_else_gives_no_renames(instruction: str) -> None:
    assert rename_pairs(instruction, SELECTION) == {}


def test_a_name_inside_a_longer_word_is_not_the_word() -> None:
    assert rename_pairs("Rename `opt` to `o`.", SELECTION) == {}
