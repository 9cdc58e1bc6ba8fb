"""A definition renamed in another file, carried into this one by the draft
(speculator/next_edit/across.py, no model)."""

from __future__ import annotations

from speculator.edits import Edit
from speculator.next_edit.across import (
    carried_across,
    imports_from,
    module_names,
    renamed_definitions,
    renamed_lines,
)
from speculator.next_edit.core import NextEditRequest, Plan, prepare

SHAPES = """\
import math

LIMIT = 10


class Circle:
    def area(self, radius):
        return math.pi * radius * radius


def describe(radius: float = 1.0):
    size = radius * 2
    return f"describe: {size}"
"""

MAIN = """\
from shapes import describe, Circle
import shapes


def main():
    # describe every size
    print(describe(1.0), shapes.describe(2.0), "describe")
    print(Circle().area(3.0), shapes.LIMIT)
    size = 4
    return size
"""


def renaming(old: str, new: str, occurrence: str) -> tuple[str, Edit]:
    """SHAPES and the edit that renames `old` in `occurrence` (its first line holding it)."""
    line_at = SHAPES.index(occurrence)
    at = SHAPES.index(old, line_at)
    return SHAPES, Edit(at, old, new, at=2.0)


def test_a_renamed_function_is_renamed_at_its_import_and_calls_not_in_text() -> None:
    before, edit = renaming("describe", "describe_shape", "def describe")
    lines = renamed_lines(MAIN, "python", before, edit)
    assert lines == {
        0: "from shapes import describe_shape, Circle",
        6: '    print(describe_shape(1.0), shapes.describe_shape(2.0), "describe")',
    }


def test_a_renamed_method_and_a_module_constant_are_followed() -> None:
    before, edit = renaming("area", "surface", "    def area")
    assert renamed_lines(MAIN, "python", before, edit) == {
        7: "    print(Circle().surface(3.0), shapes.LIMIT)"
    }
    before, edit = renaming("LIMIT", "MAX_SIZE", "LIMIT =")
    assert renamed_lines(MAIN, "python", before, edit) == {
        7: "    print(Circle().area(3.0), shapes.MAX_SIZE)"
    }


def test_a_local_variable_or_a_parameter_renamed_elsewhere_is_not_followed() -> None:
    for old, new, occurrence in (("size", "width", "    size ="), ("radius", "r", "def describe")):
        before, edit = renaming(old, new, occurrence)
        assert renamed_definitions("python", before, edit) == {}
        assert renamed_lines(MAIN, "python", before, edit) == {}


def request(edits: list[Edit], elsewhere_path: str = "shapes.py") -> NextEditRequest:
    before, edit = renaming("describe", "describe_shape", "def describe")
    return NextEditRequest(
        text=MAIN,
        cursor=len(MAIN),
        edits=edits,
        path="main.py",
        elsewhere=[(elsewhere_path, before, edit)],
    )


def proposed_line(text: str, plan: Plan | None) -> str:
    """The line the plan's draft change makes, applied to `text`."""
    assert plan is not None and plan.draft_change is not None
    edit = plan.draft_change.edit
    changed = text[: edit.start] + edit.new_text + text[edit.end :]
    return changed[changed.rfind("\n", 0, edit.start) + 1 :].split("\n")[0]


CALLS_RENAMED = '    print(describe_shape(1.0), shapes.describe_shape(2.0), "describe")'


def test_a_file_opened_after_the_rename_gets_it_drafted_at_the_nearest_use() -> None:
    plan = prepare(request([]))
    assert plan is not None
    assert "--- a/shapes.py" in plan.prompt.text  # the rename is shown as the recent edit
    assert proposed_line(MAIN, plan) == CALLS_RENAMED


def test_an_edit_here_newer_than_the_rename_is_the_one_followed() -> None:
    at = MAIN.index("size = 4") + len("size = ")
    newer = Edit(at, "4", "5", at=3.0)
    text = newer.apply(MAIN)
    newest_here = prepare(
        NextEditRequest(
            text=text, cursor=at, edits=[newer], path="main.py", elsewhere=request([]).elsewhere
        )
    )
    assert newest_here is not None and newest_here.draft_change is None
    older = Edit(at, "4", "5", at=1.0)
    rename_newer = prepare(
        NextEditRequest(
            text=text, cursor=at, edits=[older], path="main.py", elsewhere=request([]).elsewhere
        )
    )
    assert proposed_line(text, rename_newer) == CALLS_RENAMED


def test_a_rename_in_a_file_of_another_language_drafts_nothing() -> None:
    plan = prepare(request([], elsewhere_path="shapes.ts"))
    assert plan is not None and plan.draft_change is None and not plan.asks_model


def test_no_edit_anywhere_is_no_plan() -> None:
    assert prepare(NextEditRequest(text=MAIN, cursor=0, edits=[], path="main.py")) is None


def test_only_a_file_that_imports_the_renamed_ones_module_gets_it() -> None:
    # A file with a name of its own that happens to be the same is left alone.
    unrelated = MAIN.replace("from shapes import describe, Circle\nimport shapes\n", "")
    plan = prepare(
        NextEditRequest(unrelated, len(unrelated), [], "main.py", "python", request([]).elsewhere)
    )
    assert plan is not None and plan.draft_change is None
    assert imports_from("from pkg.shapes import describe", "app/main.py", "pkg/shapes.py")
    assert imports_from("from . import shapes", "pkg/main.py", "pkg/shapes.py")
    assert imports_from("from pkg import describe", "main.py", "pkg/__init__.py")
    assert imports_from('import { describe } from "./shapes.js";', "main.ts", "shapes.ts")
    assert imports_from("use crate::shapes::describe;", "src/main.rs", "src/shapes.rs")
    assert imports_from("", "cmd/main.go", "cmd/shapes.go")  # one package: one folder
    assert not imports_from("", "cmd/main.go", "lib/shapes.go")
    assert not imports_from("from shapes_extra import describe", "main.py", "shapes.py")
    assert not imports_from("shapes = describe()", "main.py", "shapes.py")


def test_a_huge_document_or_a_minified_line_is_not_searched() -> None:
    huge = "from shapes import describe\n" + "x = 1\n" * 60_000
    assert not imports_from(huge, "main.py", "shapes.py")
    minified = "import shapes;" + "use(shapes);" * 100
    assert not imports_from(minified, "main.js", "shapes.js")
    assert imports_from(minified + "\nimport shapes", "main.js", "shapes.js")


def test_this_files_own_edit_is_followed_when_the_newer_one_elsewhere_renamed_nothing() -> None:
    at = MAIN.index("size = 4")
    own = Edit(at, "size", "count", at=1.0)  # the `return size` below is still to follow
    text = own.apply(MAIN)
    shapes_at = SHAPES.index("LIMIT = 10") + len("LIMIT = ")
    elsewhere = [("shapes.py", SHAPES, Edit(shapes_at, "10", "20", at=2.0))]
    plan = prepare(NextEditRequest(text, at + 5, [own], "main.py", "python", elsewhere))
    assert "count" in proposed_line(text, plan)  # `size` carried on (first: the comment)


PRICE = """\
def total(items, rate, currency):
    return sum(items) * (1 + rate)
"""

CART = """\
from price import total


def checkout(cart, region):
    net = total(cart, 0.2, "EUR")
    return net, total(cart, 0.0, "USD")
"""


def test_a_parameter_removed_in_another_file_is_dropped_at_the_calls_here() -> None:
    at = PRICE.index(", currency")
    edit = Edit(at, ", currency", "", at=2.0)
    assert carried_across(CART, "cart.py", "python", ("price.py", PRICE, edit)) == {
        4: "    net = total(cart, 0.2)",
        5: "    return net, total(cart, 0.0)",
    }
    # Not into a file that does not import it.
    assert carried_across(CART, "cart.py", "python", ("tax.py", PRICE, edit)) == {}
    plan = prepare(
        NextEditRequest(
            text=CART, cursor=0, edits=[], path="cart.py", elsewhere=[("price.py", PRICE, edit)]
        )
    )
    assert proposed_line(CART, plan) == "    net = total(cart, 0.2)"


def test_a_parameter_added_in_another_file_is_passed_by_the_callers_that_have_it() -> None:
    at = PRICE.index("items, rate")
    edit = Edit(at, "", "region, ", at=2.0)
    assert carried_across(CART, "cart.py", "python", ("price.py", PRICE, edit)) == {
        4: '    net = total(region, cart, 0.2, "EUR")',
        5: '    return net, total(region, cart, 0.0, "USD")',
    }
    # Calls two short, or a caller without a `region`: what to pass is the user's.
    two = CART.replace(', "EUR")', ")").replace("(cart, region)", "(cart)")
    assert carried_across(two, "cart.py", "python", ("price.py", PRICE, edit)) == {}


def test_calls_on_the_module_as_this_file_imports_it_are_fixed_too() -> None:
    at = PRICE.index(", currency")
    edit = Edit(at, ", currency", "", at=2.0)
    cart = (
        "import shop.price\nimport price as p\n\n\n"
        'def checkout(cart, other):\n    a = p.total(cart, 0.2, "EUR")\n'
        '    b = shop.price.total(cart, 0.1, "EUR")\n    return a + b + other.total(1, 2, 3)\n'
    )
    assert carried_across(cart, "cart.py", "python", ("shop/price.py", PRICE, edit)) == {
        5: "    a = p.total(cart, 0.2)",
        6: "    b = shop.price.total(cart, 0.1)",
    }
    # `other.total` is not the module's: left alone.
    price_ts = "export function total(items: number[], rate: number, currency: string) {}\n"
    at = price_ts.index(", currency: string")
    edit = Edit(at, ", currency: string", "", at=2.0)
    cart_ts = 'import * as price from "./price";\n\nexport const a = price.total(b, 0.2, "EUR");\n'
    assert carried_across(cart_ts, "cart.ts", "typescript", ("price.ts", price_ts, edit)) == {
        2: "export const a = price.total(b, 0.2);"
    }


def test_the_names_a_file_imports_a_module_by() -> None:
    python = (
        "import os, shop.price as sp\nfrom shop import price\nfrom shop.price import total\n"
        "from . import price as local  # here\nimport pricelist\n"
    )
    assert module_names(python, "python", "shop/price.py") == {"sp", "price", "local"}
    assert module_names("import shop.price\n", "python", "shop/price.py") == {"shop.price"}
    wrapped = "if TYPE_CHECKING:\n    from shop import (\n        cart,\n        price as p,  # here\n    )\n"
    assert module_names(wrapped, "python", "shop/price.py") == {"p"}
    script = (
        'import * as price from "./lib/price";\nconst p = require("../price")\n'
        'import { total } from "./price";\nimport * as other from "./prices";\n'
    )
    assert module_names(script, "typescript", "lib/price.ts") == {"price", "p"}
    assert module_names(script, "typescript", "lib/price/index.ts") == {"price", "p"}
    assert module_names("package cart\n", "go", "cart/price.go") == frozenset()


def test_a_method_changed_in_another_file_is_left_to_its_own() -> None:
    code = "class Cart:\n    def total(self, items, rate):\n        return 0\n"
    at = code.index(", rate")
    edit = Edit(at, ", rate", "", at=2.0)
    calling = "from price import Cart\n\n\ndef f(c):\n    return c.total([], 0.2)\n"
    assert carried_across(calling, "cart.py", "python", ("price.py", code, edit)) == {}


API_PY = """\
def fetch_user(user_id):
    return {"id": user_id}
"""

VIEWS_PY = """\
from api import fetch_user


async def show(user_id):
    user = fetch_user(user_id)
    return user["id"]


def plain(user_id):
    return fetch_user(user_id)
"""


def test_a_function_made_async_in_another_file_is_awaited_by_async_callers_here() -> None:
    edit = Edit(0, "", "async ", at=2.0)
    assert carried_across(VIEWS_PY, "views.py", "python", ("api.py", API_PY, edit)) == {
        4: "    user = await fetch_user(user_id)",
    }
    # A file defining its own `fetch_user` calls that one.
    own = VIEWS_PY + "\n\ndef fetch_user(user_id):\n    return None\n"
    assert carried_across(own, "views.py", "python", ("api.py", API_PY, edit)) == {}
    # Called on the module as this file imports it: awaited too; on another value, not.
    on_module = VIEWS_PY.replace("from api import fetch_user", "import api").replace(
        "    user = fetch_user(user_id)", "    user = api.fetch_user(user_id)\n    c.fetch_user(1)"
    )
    assert carried_across(on_module, "views.py", "python", ("api.py", API_PY, edit)) == {
        4: "    user = await api.fetch_user(user_id)",
    }
