"""Next edits on the real model: a rename half done is carried on (the model scoring
the draft's change, as shipped), the same edit when the model rewrites the window
with and without speculation, and a finished edit gets no suggestion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from speculator.config import EngineConfig
from speculator.edits import EditHistory
from speculator.engine import SpeculativeEngine
from speculator.next_edit.core import NextEditRequest, NextEditResult
from speculator.next_edit.proposal import MIN_CONFIDENCE, TextEdit
from speculator.types import CompletionRequest, Snippet

CODE = """def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return subtotal + tax
"""


def renamed(speculation: str, draft_only: bool | None = None) -> NextEditRequest:
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
        draft_only=draft_only,
    )


def test_the_shipped_model_scores_the_rename_carried_on(engine: SpeculativeEngine) -> None:
    result = engine.next_edit(renamed("auto"))
    [edit] = result.edits
    after = result_text(edit)
    assert "subtotal" not in after and after.count("net") == 4
    # The model wrote nothing: it scored the draft's change in one batch.
    assert result.stats.generated_tokens == 0 and result.stats.prompt_tokens > 0
    assert result.confidence is not None and result.confidence >= MIN_CONFIDENCE


def test_off_and_auto_rewrites_propose_the_same_edit(engine: SpeculativeEngine) -> None:
    off = engine.next_edit(renamed("off", draft_only=False))
    auto = engine.next_edit(renamed("auto", draft_only=False))
    assert off.edits == auto.edits
    assert off.stats.generated_tokens > 0 and auto.stats.speculation == "auto"


def test_the_first_ask_in_another_file_reuses_the_instructions(engine: SpeculativeEngine) -> None:
    engine.next_edit(renamed("auto"))
    # A completion in between leaves the cache holding its own prompt.
    engine.complete(CompletionRequest(text=CODE, cursor=len(CODE), max_tokens=4, path="c.py"))
    other = engine.next_edit(replace(renamed("auto"), path="other.py"))
    # The system prompt and the head of the edits' diff (about 120 tokens) come
    # back from the shared next-edit slot, not evaluated again.
    assert other.stats.reused_prompt_tokens >= 100


def test_the_instructions_warmed_with_the_models_are_what_the_first_ask_reuses() -> None:
    fresh = SpeculativeEngine.load(EngineConfig(kv_disk_mb=0))
    try:
        warmed = fresh.warm_next_edit("qwen")
        assert warmed >= 100  # the system prompt and the diff's head
        assert fresh.warm_next_edit("qwen") == 0  # the slot holds them already
        # A completion in between leaves the cache holding its own prompt.
        fresh.complete(CompletionRequest(text=CODE, cursor=len(CODE), max_tokens=4, path="c.py"))
        first = fresh.next_edit(renamed("auto"))
        assert first.stats.reused_prompt_tokens >= warmed
        [edit] = first.edits
        assert result_text(edit).count("net") == 4
    finally:
        fresh.close()


def test_instructions_kept_on_disk_are_left_there_at_load(tmp_path: Path) -> None:
    """A start finds the instructions in the slot file's header and restores
    nothing; the first ask restores them."""
    first = SpeculativeEngine.load(EngineConfig(kv_dir=str(tmp_path)))
    assert first.warm_next_edit("qwen") >= 100
    first.persist()
    first.close()
    again = SpeculativeEngine.load(EngineConfig(kv_dir=str(tmp_path)))
    try:
        assert again.warm_next_edit("qwen") == 0
        assert again.generator.slots.live_key is None  # type: ignore[attr-defined]
        assert again.next_edit(renamed("auto")).stats.reused_prompt_tokens >= 100
    finally:
        again.close()


def test_the_same_ask_again_is_answered_without_scoring_again(engine: SpeculativeEngine) -> None:
    first = engine.next_edit(renamed("auto"))
    scorer = engine.generator.scorer  # type: ignore[attr-defined]
    repeats = scorer.repeats
    again = engine.next_edit(renamed("auto"))
    assert scorer.repeats == repeats + 1
    assert (again.edits, again.confidence) == (first.edits, first.confidence)
    assert again.stats.reused_prompt_tokens == again.stats.prompt_tokens > 0
    # Another cursor in the scored lines is another prompt: scored anew.
    moved = engine.next_edit(replace(renamed("auto"), cursor=renamed("auto").cursor - 1))
    assert scorer.repeats == repeats + 1 and moved.edits


def test_a_document_without_recent_edits_gets_nothing(engine: SpeculativeEngine) -> None:
    request = NextEditRequest(text=CODE, cursor=0, edits=[], path="price.py")
    assert engine.next_edit(request).edits == []


def result_text(edit: TextEdit) -> str:
    """The document once the edit is applied to the half-renamed text."""
    text = renamed("auto").text
    return text[: edit.start] + edit.new_text + text[edit.end :]


def asked_after_an_edit_in_price_py(
    engine: SpeculativeEngine, price: str, old: str, new: str, cart: str
) -> tuple[str, NextEditResult]:
    """`old` made `new` (first place) in price.py, then cart.py asked: cart.py with
    the one edit proposed applied, and the result."""
    history = EditHistory()
    history.record("file:///price.py", price.index(old), old, new)
    [(_, edit)] = history.elsewhere("file:///cart.py")
    request = NextEditRequest(
        text=cart, cursor=0, edits=[], path="cart.py", elsewhere=[("price.py", price, edit)]
    )
    result = engine.next_edit(request)
    [proposed] = result.edits
    return cart[: proposed.start] + proposed.new_text + cart[proposed.end :], result


def test_a_function_renamed_in_another_file_is_proposed_at_the_import(
    engine: SpeculativeEngine,
) -> None:
    """`total_price` renamed in price.py, then cart.py (which imports it) asked: the
    model scores the import renamed, at the shipped bar."""
    cart = "from price import total_price\n\n\ndef checkout(cart):\n    return total_price(cart, 0.2)\n"
    after, result = asked_after_an_edit_in_price_py(
        engine, CODE, "total_price", "order_total", cart
    )
    assert after.splitlines()[0] == "from price import order_total"
    assert result.confidence is not None and result.confidence >= MIN_CONFIDENCE


def test_a_name_imported_in_another_file_gets_its_import_here(engine: SpeculativeEngine) -> None:
    """`Path` typed where nothing imports it; another file imports it from pathlib:
    the model scores that import added, at the shipped bar."""
    code = '"""Settings."""\nimport json\n\n\ndef load(name):\n    with open(name) as f:\n        return json.load(f)\n'
    at = code.index("    with open")
    line = "    name = Path(name).expanduser()\n"
    history = EditHistory()
    history.record("u", at, "", line)
    text = code[:at] + line + code[at:]
    loader = Snippet(
        "loader.py", "from pathlib import Path\n\n\ndef read(p):\n    return Path(p)\n"
    )
    request = NextEditRequest(
        text=text,
        cursor=at + len(line) - 1,
        edits=history.edits("u"),
        path="settings.py",
        import_sources=lambda name: [loader],
    )
    result = engine.next_edit(request)
    [proposed] = result.edits
    after = text[: proposed.start] + proposed.new_text + text[proposed.end :]
    assert after == text.replace("import json\n", "import json\nfrom pathlib import Path\n")
    assert result.confidence is not None and result.confidence >= MIN_CONFIDENCE


def test_the_import_stays_due_after_an_edit_elsewhere(engine: SpeculativeEngine) -> None:
    """`Path` typed, then the next line edited before asking: the import the
    earlier edit needs is still proposed, at the shipped bar."""
    code = '"""Settings."""\nimport json\n\n\ndef load(name):\n    with open(name) as f:\n        return json.load(f)\n'
    at = code.index("    with open")
    line = "    name = Path(name).expanduser()\n"
    history = EditHistory(clock=iter(range(0, 100, 30)).__next__)
    history.record("u", at, "", line)
    text = code[:at] + line + code[at:]
    later = text.index("json.load(f)")
    history.record("u", later, "json.load(f)", "json.loads(f.read())")
    text = text.replace("json.load(f)", "json.loads(f.read())")
    loader = Snippet(
        "loader.py", "from pathlib import Path\n\n\ndef read(p):\n    return Path(p)\n"
    )
    request = NextEditRequest(
        text=text,
        cursor=len(text) - 2,
        edits=history.edits("u"),
        path="settings.py",
        import_sources=lambda name: [loader],
    )
    assert len(request.edits) == 2
    result = engine.next_edit(request)
    [proposed] = result.edits
    after = text[: proposed.start] + proposed.new_text + text[proposed.end :]
    assert after == text.replace("import json\n", "import json\nfrom pathlib import Path\n")


def test_a_new_parameter_is_stored_then_its_types_import_added(
    engine: SpeculativeEngine,
) -> None:
    """`root: Path` added to `__init__`: the model proposes the store, and once it
    is taken, the import of the type, each at the shipped bar."""
    code = (
        "import time\n\n\nclass Cache:\n    def __init__(self, size, ttl):\n"
        "        self.size = size\n        self.ttl = ttl\n        self.items = {}\n"
    )
    at = code.index("):\n        self.size")
    history = EditHistory(clock=iter(range(0, 100, 30)).__next__)
    typed = ", root: Path"
    history.record("u", at, "", typed)
    text = code[:at] + typed + code[at:]
    paths = Snippet("files.py", "from pathlib import Path\n")
    request = NextEditRequest(
        text=text,
        cursor=at + len(typed),
        edits=history.edits("u"),
        path="cache.py",
        import_sources=lambda name: [paths],
    )
    [store] = engine.next_edit(request).edits
    stored = text[: store.start] + store.new_text + text[store.end :]
    assert "        self.ttl = ttl\n        self.root = root\n" in stored
    history.record("u", store.start, text[store.start : store.end], store.new_text)
    request = replace(request, text=stored, cursor=store.end, edits=history.edits("u"))
    [imported] = engine.next_edit(request).edits
    after = stored[: imported.start] + imported.new_text + stored[imported.end :]
    imported_line = "from pathlib import Path\n"
    assert after == stored.replace("import time\n", f"import time\n{imported_line}")


def test_a_cli_call_keeps_the_prompt_for_the_next_one(tmp_path: Path) -> None:
    """`groundspec next-edit` saves its KV slots at exit: the next call (another
    process) restores the instructions instead of evaluating them."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "price.py").write_text(CODE)
    for args in (["init", "-q"], ["add", "price.py"], ["commit", "-q", "-m", "first"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    (repo / "price.py").write_text(renamed("auto").text)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "GROUNDSPEC_KV_DIR": str(tmp_path / "kv"), "PYTHONPATH": root}
    command = [sys.executable, "-m", "lsp_server.cli", "next-edit", "price.py:2:8", "--json"]
    runs = [
        subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    first, second = (json.loads(run.stdout) for run in runs)
    assert first["stats"]["reusedPromptTokens"] == 0  # an empty KV folder
    assert second["stats"]["reusedPromptTokens"] >= 100
    assert second["edits"] == first["edits"] != []
