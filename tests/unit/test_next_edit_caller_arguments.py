"""A required parameter added to a function is passed by the callers that have a
value of that name (speculator/next_edit/caller_arguments.py)."""

from __future__ import annotations

from test_next_edit_line_edits import inserted, proposed

from speculator.next_edit.caller_arguments import caller_argument_lines

STORE_GO = """package store

func Load(ctx context.Context, path string) ([]Item, error) {
	return nil, nil
}

func (s *Store) Save(ctx context.Context, items []Item) error {
	return nil
}

func Sync(ctx context.Context, s *Store) error {
	items, err := Load("a.json")
	if err != nil {
		return err
	}
	go func() { s.Save(items) }()
	return s.Save(items)
}

func Main() {
	Load("b.json")
}
"""

CLIENT_PY = """class Client:
    def fetch(self, session, url, timeout=5):
        return session.get(url, timeout=timeout)

    def fetch_all(self, session, urls):
        return [self.fetch(url) for url in urls]

    def one(self, url):
        return self.fetch(url)


def load(session, path):
    return session.get(path)


def main(session):
    load("x")
    load(path="y")
    load(*paths)
"""


def test_go_callers_that_have_the_new_parameter_pass_it() -> None:
    old = ["func Load(path string) ([]Item, error) {"]
    assert caller_argument_lines(STORE_GO, (2, 3), old, "go") == {
        11: '\titems, err := Load(ctx, "a.json")',
    }
    # `Main` has no ctx: what to pass is the user's choice.


def test_a_go_method_is_called_on_any_value_and_a_closure_sees_its_outer_names() -> None:
    old = ["func (s *Store) Save(items []Item) error {"]
    assert caller_argument_lines(STORE_GO, (6, 7), old, "go") == {
        15: "\tgo func() { s.Save(ctx, items) }()",
        16: "\treturn s.Save(ctx, items)",
    }


def test_python_callers_that_have_the_new_parameter_pass_it_by_position() -> None:
    method = caller_argument_lines(
        CLIENT_PY, (1, 2), ["    def fetch(self, url, timeout=5):"], "python"
    )
    assert method == {5: "        return [self.fetch(session, url) for url in urls]"}
    function = caller_argument_lines(CLIENT_PY, (11, 12), ["def load(path):"], "python")
    assert function == {16: '    load(session, "x")'}
    # Not `load(path="y")` or `load(*paths)`: where the value goes is not known.


def test_nothing_is_passed_without_one_new_required_parameter() -> None:
    # A parameter renamed, not added: the old line named... nothing new here.
    same = ["def load(session, path):"]
    assert caller_argument_lines(CLIENT_PY, (11, 12), same, "python") == {}
    # Two added at once: which value goes where is a guess.
    assert caller_argument_lines(CLIENT_PY, (11, 12), ["def load():"], "python") == {}
    # After `*paths: str`, parameters are passed by name: `load("x")` is not short.
    starred = CLIENT_PY.replace("def load(session, path):", "def load(path, *more: str, session):")
    assert caller_argument_lines(starred, (11, 12), ["def load(path):"], "python") == {}
    assert caller_argument_lines(STORE_GO, (11, 12), [], "go") == {}  # not a signature
    assert caller_argument_lines(STORE_GO, (2, 3), [], "rust") == {}


def test_a_parameter_typed_into_a_signature_is_proposed_at_the_call() -> None:
    before = STORE_GO.replace("ctx context.Context, path string", "path string")
    at = before.index("path string")
    request = inserted(before, at, "ctx context.Context, ", "store.go", "go")
    assert 'items, err := Load(ctx, "a.json")' in proposed(request)


def test_a_parameter_added_to_a_nested_function_is_passed_by_its_callers() -> None:
    nested = """def outer(items, key):
    def pick(item, key):
        return item[key]

    return [pick(item) for item in items]
"""
    rewrites = caller_argument_lines(nested, (1, 2), ["    def pick(item):"], "python")
    assert rewrites == {4: "    return [pick(item, key) for item in items]"}


def test_typescript_callers_that_have_the_new_parameter_pass_it() -> None:
    code = """function load(signal: AbortSignal, path: string) {
  return fetch(path, { signal });
}

async function sync(signal: AbortSignal) {
  const items = await load("a.json");
  return items;
}

export const main = () => load("b.json");
"""
    rewrites = caller_argument_lines(code, (0, 1), ["function load(path: string) {"], "typescript")
    assert rewrites == {5: '  const items = await load(signal, "a.json");'}
    # After `...more`, a call's count of arguments does not say which is which.
    rest = code.replace("path: string)", "path: string, ...more: string[])")
    assert (
        caller_argument_lines(rest, (0, 1), ["function load(path: string) {"], "typescript") == {}
    )


def test_a_constructor_parameter_added_is_passed_where_the_class_is_called() -> None:
    code = """class Store:
    def __init__(self, session, path):
        self.path = path


def open_store(session, path):
    return Store(path)
"""
    rewrites = caller_argument_lines(code, (1, 2), ["    def __init__(self, path):"], "python")
    assert rewrites == {6: "    return Store(session, path)"}
