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


SHOP = """from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float


class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        total = 0
        for item in self.items:
            total += item.price
        return total
"""


def renamed_in_shop(
    old_line: str, old: str, new: str, min_confidence: float = MIN_CONFIDENCE
) -> NextEditRequest:
    """`old` renamed to `new` on the line `old_line` of SHOP."""
    at = SHOP.index(old_line) + old_line.index(old)
    history = EditHistory()
    history.record("u", at, old, new)
    return NextEditRequest(
        text=SHOP[:at] + new + SHOP[at + len(old) :],
        cursor=at + len(new),
        edits=history.edits("u"),
        path="shop.py",
        min_confidence=min_confidence,
    )


def test_a_field_and_a_local_renamed_are_proposed_where_they_are_read(
    engine: SpeculativeEngine,
) -> None:
    field = renamed_in_shop("price: float", "price", "cost")
    [edit] = engine.next_edit(field).edits  # at the default bar (it scores about 0.98)
    assert field.text[edit.start : edit.end] == "price" and edit.new_text == "cost"
    assert field.text[: edit.start].endswith("item.")
    # The local `total` inside `def total`: the function's own name stays. Here the
    # model gives the rename about 0.005, under the rename bar: read what it scored.
    local = renamed_in_shop("total = 0", "total", "amount", min_confidence=0.0)
    [edit] = engine.next_edit(local).edits
    after = local.text[: edit.start] + edit.new_text + local.text[edit.end :]
    assert "def total(self)" in after and "amount += item.price" in after


ITEMS_GO = """package store

import (
	"encoding/json"
	"os"
	"path/filepath"
)

type Item struct {
	Name  string
	Price float64
}

func LoadItems(dir string) []Item {
	data, err := os.ReadFile(filepath.Join(dir, "items.json"))
	if err != nil {
		return nil
	}
	var items []Item
	if err := json.Unmarshal(data, &items); err != nil {
		return nil
	}
	return items
}
"""


def test_a_go_function_made_fallible_gets_its_returns_fixed_in_turn(
    engine: SpeculativeEngine,
) -> None:
    old, new = "[]Item {", "([]Item, error) {"
    at = ITEMS_GO.index(old)
    history = EditHistory()
    history.record("u", at, old, new)
    text = ITEMS_GO[:at] + new + ITEMS_GO[at + len(old) :]
    fixes = []
    for _ in range(2):  # each taken as the user would, then the next asked for
        request = NextEditRequest(
            text=text, cursor=at, edits=history.edits("u"), path="store.go", language_id="go"
        )
        [edit] = engine.next_edit(request).edits  # at the default bar (about 0.93 each)
        fixes.append(text[: edit.start].rsplit("\n", 1)[-1] + edit.new_text)
        history.record("u", edit.start, text[edit.start : edit.end], edit.new_text)
        text = text[: edit.start] + edit.new_text + text[edit.end :]
        at = edit.start + len(edit.new_text)
    assert fixes == ["\t\treturn nil, err", "\t\treturn nil, err"]


CLIENT_PY = """import httpx


class Client:
    def __init__(self, base_url):
        self.base_url = base_url
        self.http = httpx.AsyncClient()

    def get_json(self, path):
        return {"path": path}

    async def user(self, user_id):
        data = self.get_json(f"/users/{user_id}")
        return data["user"]
"""


def test_a_method_made_async_is_awaited_where_async_code_calls_it(
    engine: SpeculativeEngine,
) -> None:
    at = CLIENT_PY.index("def get_json")
    history = EditHistory()
    history.record("u", at, "", "async ")
    text = CLIENT_PY[:at] + "async " + CLIENT_PY[at:]
    request = NextEditRequest(
        text=text, cursor=at + len("async "), edits=history.edits("u"), path="client.py"
    )
    [edit] = engine.next_edit(request).edits  # at the default bar (about 0.87)
    assert edit.new_text == "await " and text[edit.start :].startswith("self.get_json(f")


LOADER_GO = """package store

func Load(path string, strict bool) ([]byte, error) {
	return os.ReadFile(path)
}

func run() {
	a, _ := Load("a.json", true)
	b, _ := Load("b.json", false)
	fmt.Println(a, b)
}
"""


def test_a_parameter_removed_is_dropped_from_the_calls(engine: SpeculativeEngine) -> None:
    at = LOADER_GO.index(", strict bool")
    history = EditHistory()
    history.record("u", at, ", strict bool", "")
    text = LOADER_GO[:at] + LOADER_GO[at + len(", strict bool") :]
    request = NextEditRequest(
        text=text, cursor=at, edits=history.edits("u"), path="store.go", language_id="go"
    )
    edits = engine.next_edit(request).edits  # at the default bar
    for edit in sorted(edits, key=lambda e: -e.start):
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    assert 'a, _ := Load("a.json")\n\tb, _ := Load("b.json")\n' in text


def test_a_parameter_removed_in_another_file_is_dropped_at_the_call_here(
    engine: SpeculativeEngine,
) -> None:
    """`currency` removed from price.py's `total`, then cart.py (which imports it)
    asked: the model scores the call without it, at the shipped bar."""
    price = "def total(items, rate, currency):\n    return sum(items) * (1 + rate)\n"
    cart = 'from price import total\n\n\ndef checkout(cart):\n    return total(cart, 0.2, "EUR")\n'
    after, _ = asked_after_an_edit_in_price_py(engine, price, ", currency", "", cart)
    assert after.splitlines()[-1] == "    return total(cart, 0.2)"
    # Called on the module, as cart.py imports it: the same.
    cart = 'import price\n\n\ndef checkout(cart):\n    return price.total(cart, 0.2, "EUR")\n'
    after, _ = asked_after_an_edit_in_price_py(engine, price, ", currency", "", cart)
    assert after.splitlines()[-1] == "    return price.total(cart, 0.2)"


CONFIG_GO = """package config

import "os"

type Config struct {
	Path string
}

func Load(path string) (*Config, int, error) {
	data := os.ReadFile(path)
	cfg := &Config{Path: string(data)}
	return cfg, len(data), nil
}
"""


def test_an_error_assigned_gets_its_check(engine: SpeculativeEngine) -> None:
    at = CONFIG_GO.index("data := ") + len("data")
    history = EditHistory()
    history.record("u", at, "", ", err")
    text = CONFIG_GO[:at] + ", err" + CONFIG_GO[at:]
    request = NextEditRequest(
        text=text, cursor=at, edits=history.edits("u"), path="config.go", language_id="go"
    )
    [edit] = engine.next_edit(request).edits  # at the default bar (about 0.08)
    assert edit.new_text == "\tif err != nil {\n\t\treturn nil, 0, err\n\t}\n"


SYNC_GO = """package store

import "os"

func LoadItems(path string) ([]Item, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(data), nil
}

func Sync(dst string) error {
	items := LoadItems("a.json")
	return save(dst, items)
}
"""


def test_a_caller_of_a_function_made_fallible_assigns_the_error_then_checks_it(
    engine: SpeculativeEngine,
) -> None:
    old, new = "[]Item {", "([]Item, error) {"
    before = SYNC_GO.replace(new, old, 1)
    at = before.index(old)
    history = EditHistory()
    history.record("u", at, old, new)
    text, fixes = SYNC_GO, []
    for _ in range(2):  # each taken as the user would (about 0.98, then 0.13)
        request = NextEditRequest(
            text=text, cursor=at, edits=history.edits("u"), path="store.go", language_id="go"
        )
        [edit] = engine.next_edit(request).edits
        history.record("u", edit.start, text[edit.start : edit.end], edit.new_text)
        text = text[: edit.start] + edit.new_text + text[edit.end :]
        at = edit.start + len(edit.new_text)
        fixes.append(text)
    assert '\titems, err := LoadItems("a.json")\n\treturn save' in fixes[0]
    assert '\titems, err := LoadItems("a.json")\n\tif err != nil {\n\t\treturn err\n\t}\n' in text
