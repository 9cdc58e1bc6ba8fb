"""Functions as their calls see them: parameters, and a Go function's results."""

from __future__ import annotations

import pytest

from speculator.next_edit.signatures import GO_FUNCTIONS, go_results, signature_at
from speculator.next_edit.trees import descendants, node_text, syntax_root


def _go_results(source: str) -> tuple[list[str], bool] | None:
    root = syntax_root("go", f"package p\n\n{source}\n")
    assert root is not None
    function = next(iter(descendants(root, GO_FUNCTIONS)))
    results = go_results(function)
    return None if results is None else ([node_text(t) for t in results.types], results.named)


@pytest.mark.parametrize(
    ("source", "types", "named"),
    [
        ("func f() {}", [], False),
        ("func f() error { return nil }", ["error"], False),
        ("func f() (Config, error) { return Config{}, nil }", ["Config", "error"], False),
        ("func f() (a, b int, err error) { return }", ["int", "int", "error"], True),
        ("func (s *S) f() (*S, error) { return s, nil }", ["*S", "error"], False),
    ],
)
def test_a_go_function_returns_a_value_per_type_and_per_name(
    source: str, types: list[str], named: bool
) -> None:
    assert _go_results(source) == (types, named)


def test_results_that_end_in_an_error_are_told_from_those_that_do_not() -> None:
    root = syntax_root("go", "package p\n\nfunc f() (int, error) {}\n\nfunc g() (error, int) {}\n")
    assert root is not None
    ends = [go_results(f) for f in descendants(root, GO_FUNCTIONS)]
    assert [r.end_in_error if r else None for r in ends] == [True, False]


def test_a_python_signature_leaves_out_the_receiver_and_counts_the_required() -> None:
    text = "class C:\n    def load(self, path, encoding='utf-8', *rest, strict, **more):\n        pass\n"
    root = syntax_root("python", text)
    assert root is not None
    signature = signature_at(root, 2, "python")
    assert signature is not None
    assert (signature.name, signature.is_method, signature.names) == (
        "load",
        True,
        ["path", "encoding"],
    )
    assert signature.required == 1 and signature.open_ended and signature.any_keyword
    assert signature.keywords == {"path", "encoding", "strict"}
