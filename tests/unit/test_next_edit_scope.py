"""A renamed local is carried only inside the function that binds it
(speculator/next_edit/scope.py); a global renamed is carried as before; a choice
made for one declaration or one handler is carried nowhere."""

from __future__ import annotations

from test_next_edit_occurrences import renamed

from speculator.edits import Edit
from speculator.next_edit.core import prepare
from speculator.next_edit.scope import handler_change, local_scope

SCALE = """def scale(value, factor):
    total = value * factor
    return total

value = scale(3, 2)
print(value)
"""


def scope_at(text: str, word: str, renames: list[tuple[str, str]], lang: str = "python"):
    return local_scope(text, lang, text.index(word), renames)


def test_a_parameter_renamed_is_carried_inside_its_function_only() -> None:
    request = renamed(SCALE, 0, "value", "amount")
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    assert plan.job.draft.count("amount") == 2  # the signature and the body
    assert "amount = scale" not in plan.job.draft and "print(value)" in plan.job.draft
    edit = plan.draft_change.edit
    assert request.text[edit.start : edit.end] == "value" and edit.new_text == "amount"
    # The module-level `value` is another variable: it is not a place to go to.
    assert local_scope(request.text, "python", request.cursor, [("value", "amount")]) == (0, 3)


def test_a_local_named_as_its_function_is_not_renamed_in_the_functions_name() -> None:
    text = "class Cart:\n    def total(self):\n        total = 0\n"
    text += "        for price in self.prices:\n            total += price\n        return total\n"
    plan = prepare(renamed(text, 2, "total", "amount"))
    assert plan is not None and plan.draft_change is not None
    assert "def total(self)" in plan.job.draft and "return amount" in plan.job.draft
    assert plan.draft_change.edit.new_text.startswith("amount += price")


def test_the_same_parameter_in_the_next_function_is_another_variable() -> None:
    text = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
    plan = prepare(renamed(text, 0, "w", "wide"))
    assert plan is not None
    assert "return wide * h" in plan.job.draft and "def perimeter(w, h)" in plan.job.draft


def test_a_global_renamed_inside_a_function_is_carried_everywhere() -> None:
    text = "LIMIT = 3\n\n\ndef check(n):\n    return n < LIMIT\n\n\nprint(LIMIT)\n"
    after = text.replace("n < LIMIT", "n < BOUND")
    assert scope_at(after, "BOUND", [("LIMIT", "BOUND")]) is None
    plan = prepare(renamed(text, 4, "LIMIT", "BOUND"))
    assert plan is not None and "print(BOUND)" in plan.job.draft


def test_only_a_binding_makes_a_name_local() -> None:
    uses = {
        "a type of a parameter": "def f(p: Path):\n    return Path(p)\n",
        "a default value": "def f(p=Path):\n    return Path(p)\n",
        "an attribute assigned": "def f(p):\n    Path.x = p\n    return Path(p)\n",
        "a name declared global": "def f(p):\n    global Path\n    Path = p\n",
    }
    for what, text in uses.items():
        assert scope_at(text, "Path", [("Path", "PurePath")]) is None, what
    binds = {
        "a parameter": "def f(Path):\n    return Path\n",
        "a parameter with a default": "def f(Path=1):\n    return Path\n",
        "a typed parameter": "def f(Path: int):\n    return Path\n",
        "an unpacked assignment": "def f():\n    a, (Path, b) = g()\n    return Path\n",
        "a loop variable": "def f():\n    for Path in g():\n        h(Path)\n",
    }
    for what, text in binds.items():
        assert scope_at(text, "Path", [("Path", "PurePath")]) is not None, what


def test_a_local_used_in_an_inner_function_lives_in_the_outer_one() -> None:
    text = "def outer(items):\n    def inner():\n        return items\n    return inner\n\nitems = []\n"
    assert scope_at(text, "return items", [("items", "rows")]) == (0, 4)


def test_other_grammars_scope_parameters_too() -> None:
    js = "function f(value) {\n  return value;\n}\nconst value = 1;\n"
    assert scope_at(js, "return value", [("value", "v")], "javascript") == (0, 3)
    go = "package m\n\nfunc f(value int) int {\n\treturn value\n}\n"
    assert scope_at(go, "return value", [("value", "v")], "go") == (2, 5)
    assert scope_at(js, "const value", [("value", "v")], "javascript") is None


SIGNER = """def sign(
    salt: Bytes = b"signer",
    sep: Bytes = b".",
) -> list[float]:
    return [float(x) for x in salt.split(sep)]


def verify(key: Bytes) -> list[float]:
    return sign(key)
"""


def test_a_type_swapped_in_one_annotation_is_carried_nowhere() -> None:
    for line, old, new in ((1, "Bytes", "OptBytes"), (3, "float", "Any")):
        plan = prepare(renamed(SIGNER, line, old, new))
        assert plan is None or plan.draft_change is None, (old, new)
    # Swapped where it is also called (`float(x)`), it is a rename: carried.
    plan = prepare(renamed(SIGNER, 4, "float", "Real"))
    assert plan is not None and "-> list[Real]" in plan.job.draft


def test_a_generic_swapped_with_its_arguments_kept_is_carried() -> None:
    # `Iterator[None]` -> `Generator[None]`: the file's convention for such functions.
    text = (
        "@contextmanager\ndef indent(self) -> Iterator[None]:\n    yield\n\n\n"
        "@contextmanager\ndef section(self, name: str) -> Iterator[None]:\n    yield\n"
    )
    plan = prepare(renamed(text, 1, "Iterator", "Generator"))
    assert plan is not None and plan.draft_change is not None
    assert "def section(self, name: str) -> Generator[None]:" in plan.job.draft


def test_a_renamed_parameter_with_a_type_is_still_a_rename() -> None:
    plan = prepare(renamed(SIGNER, 1, "salt", "pepper"))
    assert plan is not None and "in pepper.split(sep)" in plan.job.draft


def test_a_type_swapped_in_one_alias_is_carried_nowhere_but_an_alias_renamed_is() -> None:
    text = (
        "Headers: TypeAlias = MutableMapping[str, str]\n"
        "Proxies: TypeAlias = MutableMapping[str, str]\n"
        "type Cookies = MutableMapping[str, str]\n"
        "def send(h: Headers, p: Proxies, c: Cookies) -> None: ...\n"
    )
    for line in (0, 2):
        plan = prepare(renamed(text, line, "MutableMapping", "Mapping"))
        assert plan is None or plan.draft_change is None, line
    plan = prepare(renamed(text, 2, "Cookies", "Jar"))
    assert plan is not None and "c: Jar" in plan.job.draft


PARSE = """def parse(payload):
    try:
        iat = int(payload["iat"])
    except ValueError as err:
        raise Invalid("iat") from err
    try:
        nbf = int(payload["nbf"])
    except ValueError as err:
        raise Invalid("nbf") from err
"""


def test_what_one_handler_catches_is_carried_nowhere() -> None:
    # Each handler catches what its own `try` body raises.
    widened = ("ValueError", "(ValueError, TypeError)")
    for line, old, new in ((3, *widened), (3, "ValueError", "LookupError")):
        plan = prepare(renamed(PARSE, line, old, new))
        assert plan is None or plan.draft_change is None, new
    assert handler_change(
        PARSE.replace(*widened, 1), "python", Edit(PARSE.index("ValueError"), *widened)
    )
    # The line's other parts are no handler's choice: the name it binds, a raise.
    plan = prepare(renamed(PARSE, 3, "err", "error"))
    assert plan is not None and 'raise Invalid("iat") from error' in plan.job.draft
    plan = prepare(renamed(PARSE, 4, "Invalid", "Rejected"))
    assert plan is not None and 'raise Rejected("nbf")' in plan.job.draft
