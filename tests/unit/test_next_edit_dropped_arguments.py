"""A parameter removed from a function: its callers stop passing the argument
(speculator/next_edit/dropped_arguments.py)."""

from __future__ import annotations

from test_next_edit_line_edits import proposed

from speculator.edits import EditHistory
from speculator.next_edit.core import NextEditRequest
from speculator.next_edit.dropped_arguments import dropped_argument_lines
from speculator.next_edit.window import lines_with_replacements

LOADER_PY = """def load(path, encoding, strict):
    with open(path, encoding=encoding) as f:
        return f.read()


def main(paths):
    a = load("a.txt", "utf-8", True)
    b = load("b.txt", "latin-1", strict=False)
    c = load(*paths)
    d = load(
        "d.txt",
        "utf-8",
        False,
    )
    e = reader.load("e.txt", "utf-8", True)
    return a + b + c + d + e
"""

STORE_GO = """package store

func Load(path string, strict bool) ([]byte, error) {
	return nil, nil
}

func (s *Store) Save(name string, data []byte, mode int) error {
	return nil
}

func run(s *Store) {
	a, _ := Load("a.json", true)
	b, _ := Load("b.json", false)
	s.Save("a", a, 0644)
	_ = b
}
"""


def removed(text: str, old: str, new: str) -> tuple[str, str]:
    """The text before the edit, and after it: `old` made `new`, first place."""
    return text, text.replace(old, new, 1)


def test_a_python_parameter_removed_is_dropped_by_position_and_by_name() -> None:
    before, after = removed(LOADER_PY, "encoding, strict):", "encoding):")
    assert dropped_argument_lines(after, before, (0, 1), "python") == {
        6: '    a = load("a.txt", "utf-8")',
        7: '    b = load("b.txt", "latin-1")',
        # A call on several lines: its line deleted, the comma before kept.
        11: '        "utf-8",',
        12: None,
    }
    # Not `load(*paths)` (where its values go is not known) or `reader.load`.


def test_a_parameter_the_body_still_reads_is_left_to_the_body_first() -> None:
    before, after = removed(LOADER_PY, "def load(path, encoding,", "def load(path,")
    assert dropped_argument_lines(after, before, (0, 1), "python") == {}


def test_a_parameter_removed_from_the_middle_is_dropped_from_the_middle() -> None:
    unread = LOADER_PY.replace("encoding=encoding", 'encoding="utf-8"')
    before, after = removed(unread, "def load(path, encoding,", "def load(path,")
    rewrites = dropped_argument_lines(after, before, (0, 1), "python")
    assert rewrites[6] == '    a = load("a.txt", True)'
    assert rewrites[7] == '    b = load("b.txt", strict=False)'
    assert rewrites[11] == "        False," and rewrites[12] is None


def test_a_kwargs_that_takes_the_name_keeps_the_argument_passed_by_name() -> None:
    before, after = removed(LOADER_PY, "encoding, strict):", "encoding, **options):")
    rewrites = dropped_argument_lines(after, before, (0, 1), "python")
    assert 6 in rewrites and 7 not in rewrites


def test_a_go_parameter_removed_is_dropped_at_function_and_method_calls() -> None:
    before, after = removed(STORE_GO, "path string, strict bool", "path string")
    assert dropped_argument_lines(after, before, (2, 3), "go") == {
        11: '\ta, _ := Load("a.json")',
        12: '\tb, _ := Load("b.json")',
    }
    before, after = removed(STORE_GO, "data []byte, mode int", "data []byte")
    assert dropped_argument_lines(after, before, (6, 7), "go") == {13: '\ts.Save("a", a)'}


def test_an_argument_dropped_from_a_call_is_dropped_from_its_twins() -> None:
    # The signature was changed already; the user fixed the first call.
    signature_done = STORE_GO.replace("path string, strict bool", "path string")
    before, after = removed(signature_done, '"a.json", true', '"a.json"')
    assert dropped_argument_lines(after, before, (11, 12), "go") == {
        12: '\tb, _ := Load("b.json")',
    }
    python = LOADER_PY.replace("encoding, strict):", "encoding):")
    before, after = removed(python, '"utf-8", True)', '"utf-8")')
    assert dropped_argument_lines(after, before, (6, 7), "python") == {
        11: '        "utf-8",',
        12: None,
    }
    before, after = removed(python, ", strict=False", "")
    assert dropped_argument_lines(after, before, (7, 8), "python") == {}  # none passes it


def test_nothing_is_dropped_where_the_function_still_takes_the_argument() -> None:
    # The signature is unchanged: the user chose to pass one less here.
    before, after = removed(STORE_GO, '"a.json", true', '"a.json"')
    assert dropped_argument_lines(after, before, (11, 12), "go") == {}
    before, after = removed(LOADER_PY, "strict=False", "False")  # not a removal
    assert dropped_argument_lines(after, before, (7, 8), "python") == {}
    # A parameter renamed, not removed.
    before, after = removed(LOADER_PY, "encoding, strict):", "encoding, check):")
    assert dropped_argument_lines(after, before, (0, 1), "python") == {}
    # A function not defined here.
    outside = LOADER_PY.replace("def load(", "def read(")
    before, after = removed(outside, '"utf-8", True)', '"utf-8")')
    assert dropped_argument_lines(after, before, (6, 7), "python") == {}
    assert dropped_argument_lines(after, before, (6, 7), "rust") == {}


def test_a_deleted_range_rewrites_its_first_line_and_deletes_the_rest() -> None:
    text = "f(\n    a,\n    b,\n)\ng(x, y)"
    at = text.index("b,")
    assert lines_with_replacements(text, [(text.index("a,"), at, "")]) == {1: "    b,", 2: None}
    y = text.index(", y")
    assert lines_with_replacements(text, [(y, y + 3, "")]) == {4: "g(x)"}


def test_a_parameter_deleted_in_the_editor_is_dropped_at_the_next_call() -> None:
    at = LOADER_PY.index(", strict):")
    history = EditHistory()
    history.record("u", at, ", strict", "")
    after = LOADER_PY.replace(", strict):", "):", 1)
    request = NextEditRequest(
        text=after,
        cursor=at,
        edits=history.edits("u"),
        path="loader.py",
        language_id="python",
        min_confidence=0.0,
    )
    assert 'a = load("a.txt", "utf-8")\n' in proposed(request)


CLIENT_TS = """export class Client {
  fetch(url: string, retries: number, timeout = 5): Promise<Response> {
    return fetch(url);
  }

  all(urls: string[]) {
    return urls.map((url) => this.fetch(url, 3, 10));
  }
}

const parse = (text: string, strict: boolean) => JSON.parse(text);

export function main(client: Client) {
  client.fetch("a", 1);
  return parse("{}", true);
}
"""


def test_a_typescript_parameter_removed_is_dropped_at_this_calls_and_const_functions() -> None:
    before, after = removed(CLIENT_TS, "url: string, retries: number,", "url: string,")
    assert dropped_argument_lines(after, before, (1, 2), "typescript") == {
        6: "    return urls.map((url) => this.fetch(url, 10));",
    }
    # `client.fetch` is on a value whose class is not known here.
    before, after = removed(CLIENT_TS, "text: string, strict: boolean", "text: string")
    assert dropped_argument_lines(after, before, (10, 11), "typescript") == {
        14: '  return parse("{}");',
    }


def test_a_constructor_parameter_removed_is_dropped_where_the_class_is_called() -> None:
    code = """class Cache:
    def __init__(self, size, ttl):
        self.size = size


def make():
    return Cache(10, 60)
"""
    before, after = removed(code, "size, ttl)", "size)")
    assert dropped_argument_lines(after, before, (1, 2), "python") == {6: "    return Cache(10)"}


def test_a_typescript_constructor_parameter_removed_is_dropped_at_new() -> None:
    code = """export class Cache {
  constructor(size: number, ttl: number) {}
}

export const cache = new Cache(10, 60);
"""
    before, after = removed(code, "size: number, ttl: number", "size: number")
    assert dropped_argument_lines(after, before, (1, 2), "typescript") == {
        4: "export const cache = new Cache(10);"
    }


def test_a_document_holding_a_lone_surrogate_gets_its_drop_and_no_error() -> None:
    # Editors can send one (a broken paste); syntax.utf8 passes it through.
    odd = LOADER_PY.replace('"a.txt"', '"a\ud800.txt"')
    before, after = removed(odd, "encoding, strict):", "encoding):")
    assert dropped_argument_lines(after, before, (0, 1), "python")[6] == (
        '    a = load("a\ud800.txt", "utf-8")'
    )
    before, after = removed(odd, '"utf-8", True)', '"utf-8")')
    assert dropped_argument_lines(after, before, (6, 7), "python") == {}
