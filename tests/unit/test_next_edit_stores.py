"""A parameter added to a constructor is stored where the other parameters are
(speculator/next_edit/stores.py)."""

from __future__ import annotations

from test_next_edit_line_edits import proposed

from speculator.edits import EditHistory
from speculator.next_edit.core import NextEditRequest
from speculator.next_edit.stores import stored_parameter_lines

CACHE_PY = """class Cache:
    def __init__(self, size, ttl, *args, clock=None, **options):
        super().__init__()
        self.size = size
        self.clock = clock or time.monotonic
        self.items = {}

    def put(self, key, value):
        self.items[key] = value
"""

CACHE_TS = """export class Cache {
  constructor(size: number, ttl: number, private clock: Clock) {
    this.size = size;
  }
}
"""


def test_a_new_parameter_is_stored_after_the_one_before_it() -> None:
    assert stored_parameter_lines(CACHE_PY, (1, 2), "python") == {
        3: "        self.size = size\n        self.ttl = ttl",
    }
    # Not `args` or `options` (splats); `clock` is stored already, with a default.


def test_a_parameter_before_every_stored_one_goes_before_the_first_store() -> None:
    text = CACHE_PY.replace("(self, size, ttl,", "(self, ttl, size,")
    assert stored_parameter_lines(text, (1, 2), "python") == {
        2: "        super().__init__()\n        self.ttl = ttl",
    }


def test_typescript_stores_on_this_and_parameter_properties_store_themselves() -> None:
    assert stored_parameter_lines(CACHE_TS, (1, 2), "typescript") == {
        2: "    this.size = size;\n    this.ttl = ttl;",
    }


def test_nothing_is_stored_where_the_constructor_stores_no_parameter_or_reads_it() -> None:
    assert stored_parameter_lines(CACHE_PY, (8, 9), "python") == {}  # not the signature
    reads = CACHE_PY.replace("self.items = {}", "self.items = dict.fromkeys(ttl)")
    assert stored_parameter_lines(reads, (1, 2), "python") == {}
    none = CACHE_PY.replace("        self.size = size\n", "").replace(
        "        self.clock = clock or time.monotonic\n", ""
    )
    assert stored_parameter_lines(none, (1, 2), "python") == {}
    assert stored_parameter_lines(CACHE_PY, (1, 2), "go") == {}


def test_a_parameter_typed_into_the_signature_is_proposed_stored() -> None:
    before = CACHE_PY.replace("size, ttl, ", "size, ")
    at = before.index("size, ") + len("size, ")
    history = EditHistory()
    history.record("u", at, "", "ttl, ")
    request = NextEditRequest(
        text=CACHE_PY,
        cursor=at + len("ttl, "),
        edits=history.edits("u"),
        path="cache.py",
        min_confidence=0.0,
    )
    assert "        self.size = size\n        self.ttl = ttl\n" in proposed(request)
