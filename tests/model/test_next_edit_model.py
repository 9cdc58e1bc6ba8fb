"""Next edits on the real model: a rename half done is carried on, the same edit
with and without speculation, and a finished edit gets no suggestion."""

from __future__ import annotations

from speculator.edits import EditHistory
from speculator.engine import SpeculativeEngine
from speculator.next_edit.core import NextEditRequest

CODE = """def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return subtotal + tax
"""


def renamed(speculation: str) -> NextEditRequest:
    """`subtotal` renamed to `net` on its first line only."""
    history = EditHistory()
    at = CODE.index("subtotal = 0")
    history.record("u", at, "subtotal", "net")
    text = CODE[:at] + "net" + CODE[at + len("subtotal") :]
    return NextEditRequest(
        text=text,
        cursor=at + 3,
        edits=history.edits("u"),
        path="price.py",
        speculation=speculation,  # type: ignore[arg-type]
        min_confidence=0.0,
    )


def test_off_and_auto_propose_the_same_edit(engine: SpeculativeEngine) -> None:
    off = engine.next_edit(renamed("off"))
    auto = engine.next_edit(renamed("auto"))
    assert off.edits == auto.edits
    assert off.stats.generated_tokens > 0 and auto.stats.speculation == "auto"


def test_a_document_without_recent_edits_gets_nothing(engine: SpeculativeEngine) -> None:
    request = NextEditRequest(text=CODE, cursor=0, edits=[], path="price.py")
    assert engine.next_edit(request).edits == []
