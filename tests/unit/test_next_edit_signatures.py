"""Functions as their calls see them: parameters, and a Go function's results."""

from __future__ import annotations

import pytest

from speculator.next_edit.signatures import (
    GO_FUNCTIONS,
    go_results,
    parameter_name,
    signature_at,
)
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


@pytest.mark.parametrize(
    ("source", "names", "required", "open_ended"),
    [
        ("function load(path, encoding = 'utf-8') {}", ["path", "encoding"], 1, False),
        (
            "function load(path: string, strict?: boolean, ...rest: T[]) {}",
            ["path", "strict"],
            1,
            True,
        ),
        ("function load(path, ...rest) {}", ["path"], 1, True),
    ],
)
def test_a_script_signature_reads_optional_and_rest_parameters(
    source: str, names: list[str], required: int, open_ended: bool
) -> None:
    root = syntax_root("typescript", source)
    assert root is not None
    signature = signature_at(root, 0, "typescript")
    assert signature is not None
    assert (signature.names, signature.required, signature.open_ended) == (
        names,
        required,
        open_ended,
    )


def test_a_destructured_parameter_has_no_name_and_leaves_the_signature_unread() -> None:
    root = syntax_root("typescript", "function load({ path }, strict) {}")
    assert root is not None
    assert signature_at(root, 0, "typescript") is None
    python = syntax_root("python", "def f(a, b: int, *rest, c=1, **more):\n    pass\n")
    assert python is not None
    parameters = next(iter(descendants(python, frozenset({"parameters"}))))
    named = [parameter_name(p) for p in parameters.named_children]
    assert [node_text(n) if n is not None else None for n in named] == [
        "a",
        "b",
        None,
        "c",
        None,
    ]
