"""A member (a field, a method) renamed where it is declared is carried to the
attributes that read it, not to plain names spelled the same
(speculator/next_edit/members.py)."""

from __future__ import annotations

from test_next_edit_occurrences import renamed

from speculator.next_edit.core import NextEditRequest, prepare
from speculator.next_edit.members import renamed_members

ITEM_PY = """from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float


def total(items):
    return sum(item.price for item in items)


def add(items, name, price):
    items.append(Item(name, price))
"""

ITEM_TS = """export interface Item {
  name: string;
  price: number;
}

export function total(items: Item[]): number {
  let sum = 0;
  for (const item of items) {
    sum += item.price;
  }
  return sum;
}
"""

ITEM_GO = """package shop

type Item struct {
	Name  string
	Price float64
}

func Total(items []Item) float64 {
	sum := 0.0
	for _, it := range items {
		sum += it.Price
	}
	return sum
}
"""


def renamed_at(text: str, line: int, old: str, new: str, language: str) -> NextEditRequest:
    """`old` renamed to `new` on `line`, as the default (scoring) format asks."""
    return renamed(text, line, old, new, draft_only=None, language_id=language)


def drafted(request: NextEditRequest) -> str:
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    return plan.job.draft


def test_a_dataclass_field_renamed_is_renamed_where_it_is_read() -> None:
    draft = drafted(renamed_at(ITEM_PY, 6, "price", "cost", "python"))
    assert "sum(item.cost for item in items)" in draft


def test_a_plain_name_spelled_as_the_field_is_another_variable() -> None:
    request = renamed_at(ITEM_PY, 6, "price", "cost", "python")
    plan = prepare(request)
    assert plan is not None
    text = request.text
    # The window reaches the attribute; the parameter `price` below stays.
    assert "def add(items, name, price)" in text
    assert "Item(name, cost)" not in plan.job.draft


def test_a_typescript_property_and_a_go_field_renamed_too() -> None:
    ts = drafted(renamed_at(ITEM_TS, 2, "price", "cost", "typescript"))
    assert "sum += item.cost;" in ts
    go = drafted(renamed_at(ITEM_GO, 4, "Price", "Cost", "go"))
    assert "sum += it.Cost" in go


def test_only_a_declaration_in_a_class_body_is_a_field() -> None:
    local = "class Cart:\n    def total(self):\n        price = 0\n        return price\n"
    request = renamed_at(local, 2, "price", "cost", "python")
    last = request.edits[-1]
    assert renamed_members(request.text, "python", last, [("price", "cost")]) == frozenset()
    assert "return cost" in drafted(request)  # a local: renamed as a plain name
    attribute = "class Color:\n    RED = 1\n\n\nprint(Color.RED)\n"
    request = renamed_at(attribute, 1, "RED", "CRIMSON", "python")
    assert renamed_members(request.text, "python", request.edits[-1], [("RED", "CRIMSON")]) == {
        "RED"
    }
    assert "print(Color.CRIMSON)" in drafted(request)


CART_PY = """class Cart:
    def __init__(self):
        self.items = []

    @property
    def cheapest(self):
        return min(self.items)


def cheapest(carts):
    return min(cart.cheapest for cart in carts)
"""

CART_RS = """struct Cart {
    items: Vec<u32>,
}

impl Cart {
    fn cheapest(&self) -> u32 {
        0
    }
}

fn cheapest(carts: &[Cart]) -> u32 {
    carts.iter().map(|c| c.cheapest()).min().unwrap_or(0)
}
"""


def test_a_method_renamed_is_renamed_where_it_is_called_not_as_a_function() -> None:
    draft = drafted(renamed_at(CART_PY, 5, "cheapest", "lowest", "python"))
    assert "min(cart.lowest for cart in carts)" in draft
    assert "def cheapest(carts)" in draft  # the module's function is another name
    rust = drafted(renamed_at(CART_RS, 5, "cheapest", "lowest", "rust"))
    assert "c.lowest()" in rust and "fn cheapest(carts" in rust
    module = "def cheapest(carts):\n    return min(carts)\n\n\nprint(cheapest([]))\n"
    request = renamed_at(module, 0, "cheapest", "lowest", "python")
    assert renamed_members(request.text, "python", request.edits[-1], [("cheapest", "lowest")]) == (
        frozenset()
    )
    assert "print(lowest([]))" in drafted(request)


def test_the_base_class_method_a_renamed_override_calls_keeps_its_name() -> None:
    code = "class Timer(Base):\n    def shutdown(self, wait=True):\n"
    code += "        super().shutdown(wait)\n        self.shutdown_timer()\n\n\n"
    code += "def stop(timer):\n    timer.shutdown()\n"
    request = renamed_at(code, 1, "shutdown", "_shutdown", "python")
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    edit = plan.draft_change.edit  # the first change is the call in `stop`, below
    assert request.text[: edit.start].endswith("timer.") and edit.new_text == "_"
    assert "super()._shutdown" not in plan.job.draft
