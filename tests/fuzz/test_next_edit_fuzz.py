"""Next edits on random code-like text and random recent edits, in process on the
fake engine (the real window, draft, prompts and proposal; the rewrite is the
draft). Asserts: no request raises, and every proposed edit lies in the document.

Text mixes code with what real files hold between their newlines (CR, form feed,
U+2028, emoji); edits are typed, deleted and pasted anywhere, up to four per
document. Every prompt format, scoring and rewriting. Fixed seed; a long run:
`GROUNDSPEC_FUZZ_CASES=50000 GROUNDSPEC_FUZZ_SEED=7 pytest tests/fuzz -k next_edit`.
"""

from __future__ import annotations

import os
import random

from speculator.edits import EditHistory
from speculator.fake import FakeEngine
from speculator.next_edit.core import NextEditRequest

CASES = int(os.environ.get("GROUNDSPEC_FUZZ_CASES", "2000"))
SEED = int(os.environ.get("GROUNDSPEC_FUZZ_SEED", "11"))
PIECES = [
    "name",
    "name2",
    "x",
    " = ",
    "f(",
    ")",
    "(name, 1)",
    ", ",
    "\n",
    "    ",
    "def g(a, b):\n",
    "import os\n",
    "from os import path\n",
    "os.path",
    "return name\n",
    "raise E(\n",
    "class C:\n",
    "self.",
    "# c\n",
    "'s'",
    ":",
    "\t",
    "\r",
    "\x0c",
    "\u2028",
    "😀",
    "",
]


def random_request(rng: random.Random) -> NextEditRequest:
    text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 60)))
    history = EditHistory()
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(text) + 1)
        end = min(len(text), at + rng.randrange(6))
        new = "".join(rng.choice(PIECES) for _ in range(rng.randrange(3)))
        history.record("doc", at, text[at:end], new)
        text = text[:at] + new + text[end:]
    return NextEditRequest(
        text=text,
        cursor=rng.randrange(len(text) + 1),
        edits=history.edits("doc"),
        path="doc.py",
        prompt_format=rng.choice(["qwen", "qwen", "zeta2", "sweep"]),
        min_confidence=0.0,  # every candidate that fits is proposed
        draft_only=rng.choice([None, False]),
    )


def test_next_edits_on_random_text_and_edits_never_raise() -> None:
    rng = random.Random(SEED)
    engine = FakeEngine()
    proposed = 0
    for _ in range(CASES):
        request = random_request(rng)
        result = engine.next_edit(request)
        for edit in result.edits:
            assert 0 <= edit.start <= edit.end <= len(request.text), (request, edit)
        proposed += bool(result.edits)
    assert 0 < proposed < CASES  # the cases reach the proposal, and not all of them
