"""A parameter added to a constructor is stored where the other parameters are
(speculator.next_edit.new_parameters.py)."""

from __future__ import annotations

from dataclasses import replace

from test_next_edit_line_edits import proposed

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import NextEditRequest
from speculator.next_edit.new_parameters import forwarded_parameter_lines, stored_parameter_lines
from speculator.types import Snippet

CACHE_PY = """class Cache:
    def __init__(self, size, ttl, *args, clock=None, **options):
        super().__init__()
        self.size = size
        self.clock = clock or time.monotonic
        self.items = {}

    def put(self, key, value):
        self.items[key] = value
"""


def typed(text: str, piece: str, path: str) -> NextEditRequest:
    """The request after the user typed `piece` where it first stands in `text`."""
    at = text.index(piece)
    history = EditHistory()
    history.record("u", at, "", piece)
    return NextEditRequest(
        text=text,
        cursor=at + len(piece),
        edits=history.edits("u"),
        path=path,
        min_confidence=0.0,
    )


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
    after = proposed(typed(CACHE_PY, "ttl, ", "cache.py"))
    assert "        self.size = size\n        self.ttl = ttl\n" in after


def test_a_private_store_gets_a_private_store() -> None:
    text = CACHE_PY.replace("self.size = size", "self._size = size")
    assert stored_parameter_lines(text, (1, 2), "python") == {
        3: "        self._size = size\n        self._ttl = ttl",
    }


BUILDER_PY = """class Builder:
    def string_build(self, data, modname="", path=None, is_stub=None):
        module = self._data_build(data, modname, path)
        checked = check(data)
        return self._post_build(module, modname=modname, path=path)
"""


def test_a_wrapper_passes_a_new_parameter_on_where_it_passes_on_the_others() -> None:
    assert forwarded_parameter_lines(BUILDER_PY, (1, 2), "python") == {
        2: "        module = self._data_build(data, modname, path, is_stub=is_stub)",
    }
    # `check(data)` passes on one parameter: a use, not a wrapper's call; and
    # `_post_build` passes `module`, not a parameter.


def test_nothing_is_passed_on_where_the_body_reads_it_or_two_are_new() -> None:
    reads = BUILDER_PY.replace("check(data)", "check(data, is_stub)")
    assert forwarded_parameter_lines(reads, (1, 2), "python") == {}
    two = BUILDER_PY.replace("is_stub=None)", "is_stub=None, strict=False)")
    assert forwarded_parameter_lines(two, (1, 2), "python") == {}
    assert forwarded_parameter_lines(BUILDER_PY, (3, 4), "python") == {}  # not the signature


def test_a_parameter_typed_into_a_wrapper_is_proposed_passed_on() -> None:
    after = proposed(typed(BUILDER_PY, ", is_stub=None", "builder.py"))
    assert "self._data_build(data, modname, path, is_stub=is_stub)" in after


def test_a_new_parameter_whose_default_the_body_uses_replaces_it_instead() -> None:
    text = BUILDER_PY.replace("is_stub=None", "is_stub=STUB").replace(
        "check(data)", "check(data, STUB)"
    )
    after = proposed(typed(text, ", is_stub=STUB", "builder.py"))
    assert "check(data, is_stub)" in after and "self._data_build(data, modname, path)" in after


def test_a_new_parameter_is_stored_and_the_import_its_type_needs_follows() -> None:
    stores = "        self.size = size\n        self.ttl = ttl\n"
    text = "import time\n\n\n" + CACHE_PY.replace("        self.size = size\n", stores)
    piece = ", pool: Pool"
    at = text.index(", *args")
    history = EditHistory(clock=iter(range(0, 1000, 30)).__next__)
    history.record("u", at, "", piece)
    typed_text = text[:at] + piece + text[at:]
    request = NextEditRequest(
        text=typed_text,
        cursor=at + len(piece),
        edits=history.edits("u"),
        path="cache.py",
        min_confidence=0.0,
        import_sources=lambda name: [Snippet("pools.py", "from app.pools import Pool\n")],
    )
    stored = proposed(request)  # the store first: it is in the window
    assert stored == typed_text.replace(stores, f"{stores}        self.pool = pool\n")
    store = next(iter(FakeEngine().next_edit(request).edits))
    history.record("u", store.start, typed_text[store.start : store.end], store.new_text)
    request = replace(request, text=stored, edits=history.edits("u"), cursor=store.end)
    assert len(request.edits) == 2
    # The import the typed parameter needs, though the last edit was the store.
    assert proposed(request) == stored.replace(
        "import time\n", "import time\nfrom app.pools import Pool\n", 1
    )
