"""A Go function's results grown by an error reach its returns: `, err` where the
return handles an error, `, nil` elsewhere (speculator/next_edit/results.py)."""

from __future__ import annotations

from test_next_edit_line_edits import proposed
from test_next_edit_occurrences import renamed

from speculator.edits import EditHistory
from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.results import _package_names, short_assignment_lines, short_return_lines
from speculator.next_edit.trees import syntax_root

LOAD_GO = """package store

import "os"

func LoadItems(path string) ([]Item, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	parse := func(b []byte) []Item { return nil }
	if len(data) == 0 {
		return []Item{}
	}
	return parse(data)
}

func Save(path string, items []Item) error {
	if writeErr := write(path, items); writeErr != nil {
		return
	}
	return
}

func Count(items []Item) (n int, err error) {
	n = len(items)
	return
}
"""


def test_each_return_gets_the_error_value_it_lacks() -> None:
    rewrites = short_return_lines(LOAD_GO, (4, 5), "go")
    assert rewrites == {
        7: "\t\treturn nil, err",  # inside `if err != nil`
        11: "\t\treturn []Item{}, nil",
        13: "\treturn parse(data), nil",
    }
    # The function literal's `return nil` is its own: one result, no error.


def test_a_bare_return_gets_the_checked_name_or_nil() -> None:
    rewrites = short_return_lines(LOAD_GO, (16, 17), "go")
    assert rewrites == {18: "\t\treturn writeErr", 20: "\treturn nil"}


def test_a_return_of_a_call_that_may_return_the_error_too_is_left_alone() -> None:
    calls = LOAD_GO.replace("\treturn parse(data)\n", "\treturn os.ReadFile(path)\n")
    assert 13 not in short_return_lines(calls, (4, 5), "go")  # two results, maybe
    two = LOAD_GO.replace("func(b []byte) []Item {", "func(b []byte) ([]Item, error) {")
    assert 13 not in short_return_lines(two, (4, 5), "go")
    # `parse` (above) returns one value: the return gets the error's.


def test_named_results_and_other_languages_are_left_alone() -> None:
    assert short_return_lines(LOAD_GO, (24, 25), "go") == {}  # a bare return is valid
    assert short_return_lines(LOAD_GO, (0, 1), "go") == {}  # outside any function
    assert short_return_lines(LOAD_GO, (4, 5), "rust") == {}


def test_a_return_already_whole_and_the_users_own_line_are_left_alone() -> None:
    whole = LOAD_GO.replace("\t\treturn nil\n", "\t\treturn nil, err\n")
    assert 7 not in short_return_lines(whole, (4, 5), "go")
    assert 7 not in short_return_lines(LOAD_GO, (7, 8), "go")


def test_results_grown_by_an_error_draft_the_first_return_then_the_next() -> None:
    before = LOAD_GO.replace("([]Item, error) {", "[]Item {", 1)
    request = renamed(before, 4, "[]Item {", "([]Item, error) {", language_id="go")
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    first = plan.draft_change.edit
    assert first.new_text == ", err"
    assert request.text[: first.start].endswith("\t\treturn nil")

    # The user takes it: the next return is the next edit.
    history = EditHistory()
    for edit in request.edits:
        history.record("u", edit.start, edit.old, edit.new)
    history.record("u", first.start, "", first.new_text)
    text = first.apply(request.text)
    after = NextEditRequest(
        text=text,
        cursor=first.start + len(first.new_text),
        edits=history.edits("u"),
        path="m.go",
        language_id="go",
        draft_only=False,
    )
    plan = prepare(after)
    assert plan is not None and plan.draft_change is not None
    assert plan.draft_change.edit.new_text == ", nil"
    assert text[: plan.draft_change.edit.start].endswith("return []Item{}")


CALLERS_GO = """package store

import (
	"example.com/disk"
	yaml "gopkg.in/yaml.v3"
)

func LoadItems(path string) ([]Item, error) {
	return nil, nil
}

func (s *Store) Count() (int, error) {
	return 0, nil
}

func Sync(s *Store) error {
	items := LoadItems("a.json")
	n := s.Count()
	other := disk.LoadItems("b.json")
	a, err := LoadItems("c.json")
	m := disk.Count()
	y := yaml.Count()
	_, _, _, _, _, _ = items, n, other, a, m, y
	return err
}
"""


def test_a_call_assigned_one_value_short_of_an_error_result_gets_err() -> None:
    assert short_assignment_lines(CALLERS_GO, (7, 8), "go") == {
        16: '\titems, err := LoadItems("a.json")',
        17: "\tn, err := s.Count()",
    }
    # `disk.LoadItems`, `disk.Count` and `yaml.Count` are another package's;
    # `a, err :=` is whole already.
    assert short_assignment_lines(CALLERS_GO, (7, 8), "python") == {}
    assert short_assignment_lines(CALLERS_GO, (0, 1), "go") == {}  # an edit of no error


def test_a_function_made_fallible_has_its_callers_assign_the_error() -> None:
    before = CALLERS_GO.replace("([]Item, error) {", "[]Item {", 1)
    request = renamed(before, 7, "[]Item {", "([]Item, error) {", False, "go")
    assert '\titems, err := LoadItems("a.json")\n' in proposed(request)


def test_a_go_import_binds_its_alias_else_its_path_without_the_major_version() -> None:
    imports = '\n\t"gopkg.in/yaml.v3"\n\tcfg "example.com/config/v2"\n\t"example.com/dev2"\n'
    root = syntax_root("go", f'package p\n\nimport ({imports}\t"example.com/store/v4"\n)\n')
    assert root is not None
    assert _package_names(root) == {"yaml", "cfg", "dev2", "store"}
