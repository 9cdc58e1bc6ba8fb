"""The KV cache in a workspace (issue 63), on the scripted model: a document's
header of other files' snippets stays put while typing, changes only in an idle
warm-up that evaluated it, and comes back with the slot after a restart."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel, ScriptedSession, Synced

from speculator.config import EngineConfig
from speculator.generators.local import LocalGenerator
from speculator.headers import MOVE_LINES
from speculator.pipeline import Pipeline
from speculator.session import Session as RealSession
from speculator.threads import ThreadPolicy
from speculator.tokens import common_prefix
from speculator.totals import Totals
from speculator.types import Cancelled, CancelToken, CompletionRequest, Snippet
from speculator.workspace import WorkspaceIndex

LINES = [f"def f{i}(a, b):\n    return a + b * {i}\n" for i in range(60)]
SOURCE = "".join(LINES)
NEAR = SOURCE.index("return a + b * 3") + len("return ")
FAR = SOURCE.index("return a + b * 55") + len("return ")
OLD = Snippet("old.py", "def old_helper():\n    pass\n")
NEW = Snippet("new.py", "def new_helper():\n    pass\n")


class Index:
    """A workspace index whose best snippets the test sets."""

    def __init__(self, snippets: list[Snippet], ready: bool = True) -> None:
        self.snippets, self.ready = snippets, ready

    def related(self, path: str | None, query: str, limit: int) -> list[Snippet]:
        return list(self.snippets)

    def is_ready(self) -> bool:
        return self.ready


class Session(ScriptedSession):
    """A scripted session whose state saves and restores, and that can cancel
    a warm-up's `cancel_at`-th sync (counting from 1) as a keystroke would."""

    def __init__(self) -> None:
        super().__init__("1\n")
        self.cancel_at: tuple[CancelToken, int] | None = None
        self.evaluated: list[int] = []  # each sync's evaluated tokens

    def sync(
        self, segments: Any, shift_reuse: bool = True, cancel: CancelToken | None = None
    ) -> tuple[Synced, Any]:
        if self.cancel_at is not None and len(self.synced) + 1 == self.cancel_at[1]:
            self.cancel_at[0].cancel()
        synced, logits = super().sync(segments, shift_reuse, cancel)
        self.evaluated.append(synced.evaluated)
        self.segments, at = [], 0
        for segment in segments:  # as Session keeps them: (position, tokens)
            self.segments.append((at, tuple(segment)))  # type: ignore[arg-type]
            at += len(segment)
        return synced, logits

    def save_state(self, spare: Any = None) -> bytes:
        return b"state"

    def restore_state(self, data: Any, cells: list[int], segments: Any) -> bool:
        self.cells, self.segments = list(cells), list(segments)
        return True


def engine(index: Index, kv_dir: Path | None = None) -> tuple[Pipeline[Any], Session]:
    config = EngineConfig(
        kv_ram_mb=64,
        kv_disk_mb=64 if kv_dir else 0,
        kv_dir=str(kv_dir or ""),
        quick_window_tokens=192,
        use_draft=False,
    )
    session = Session()
    generator = LocalGenerator(
        ScriptedModel(),  # type: ignore[arg-type]
        None,
        config,
        (session, None),  # type: ignore[arg-type]
        ThreadPolicy(1, adaptive=False),
        Totals(),
        lambda: ("scripted", None),
    )
    pipeline = Pipeline(generator)
    pipeline.set_context_provider(index)
    return pipeline, session


def request(
    text: str, cursor: int, path: str = "/w/a.py", typing: bool = True
) -> CompletionRequest:
    return CompletionRequest(
        text=text, cursor=cursor, path=path, max_tokens=2, speculation="off", quick_window=typing
    )


def typed(text: str, at: int, chars: str) -> tuple[str, int]:
    return text[:at] + chars + text[at:], at + len(chars)


def last_prompt(session: Session) -> str:
    return "".join(map(chr, session.synced[-1]))


def header_reused(session: Session) -> bool:
    """Whether the last sync evaluated nothing before the document's own text (the
    scripted session reuses a common prefix only: the suffix is evaluated again)."""
    prompt = last_prompt(session)
    return session.evaluated[-1] <= len(prompt) - prompt.index("<|fim_prefix|>")


def test_typing_keeps_the_header_while_the_index_answer_drifts() -> None:
    index = Index([OLD])
    pipeline, session = engine(index)
    pipeline.warm(request(SOURCE, NEAR))  # didOpen
    index.snippets = [NEW]  # each keystroke's query finds other snippets
    text, cursor = SOURCE, NEAR
    for char in "a * ":
        text, cursor = typed(text, cursor, char)
        pipeline.complete(request(text, cursor, typing=False))
        assert "old_helper" in last_prompt(session) and "new_helper" not in last_prompt(session)
        assert header_reused(session)


def test_an_idle_warm_up_far_away_evaluates_new_snippets_then_typing_uses_them() -> None:
    index = Index([OLD])
    pipeline, session = engine(index)
    pipeline.complete(request(SOURCE, NEAR, typing=False))
    index.snippets = [NEW]
    assert SOURCE.count("\n", NEAR, FAR) > MOVE_LINES
    pipeline.complete(request(SOURCE, FAR, typing=False))  # moved: still the old header
    assert "old_helper" in last_prompt(session)
    pipeline.warm(request(SOURCE, FAR))  # the pause after it
    assert "new_helper" in last_prompt(session)
    text, cursor = typed(SOURCE, FAR, "a")
    pipeline.complete(request(text, cursor, typing=False))
    assert "new_helper" in last_prompt(session) and header_reused(session)


def test_a_cancelled_header_warm_up_leaves_typing_on_the_old_header_and_its_kv() -> None:
    index = Index([OLD])
    pipeline, session = engine(index)
    pipeline.complete(request(SOURCE, FAR, typing=False))
    index.ready = False  # a header chosen before the index was ready is provisional
    pipeline.complete(request(SOURCE, FAR, path="/w/b.py", typing=False))
    pipeline.complete(request(SOURCE, FAR, typing=False))  # back to a.py
    index.snippets, index.ready = [NEW], True
    token = CancelToken()
    session.cancel_at = (token, len(session.synced) + 1)  # the new header's sync
    with pytest.raises(Cancelled):  # a keystroke came
        pipeline.warm(request(SOURCE, FAR, path="/w/b.py"), token)
    session.cancel_at = None
    pipeline.complete(request(SOURCE, FAR, path="/w/b.py"))
    assert "old_helper" in last_prompt(session)  # not adopted
    assert session.evaluated[-1] <= 1  # its KV came back from RAM
    pipeline.warm(request(SOURCE, FAR, path="/w/b.py"))  # an uninterrupted pause
    assert "new_helper" in last_prompt(session)


def test_a_restart_rebuilds_the_saved_prompt_before_the_index_is_ready(tmp_path: Path) -> None:
    pipeline, session = engine(Index([OLD]), tmp_path)
    text, cursor = typed(SOURCE, FAR, "a")
    pipeline.complete(request(text, cursor, typing=False))
    before = last_prompt(session)
    assert pipeline.persist() >= 1
    pipeline.close()
    loading = Index([], ready=False)
    pipeline, session = engine(loading, tmp_path)  # the restart
    # didOpen's warm-up knows no cursor (offset 0): it restores the saved KV as it is.
    pipeline.warm(request(text, 0))
    assert last_prompt(session) == before and session.evaluated == [1]
    pipeline.complete(request(text, cursor))
    assert last_prompt(session) == before  # the same header, the same window
    assert session.evaluated == [1, 1]  # the last token: the rest was restored
    loading.snippets, loading.ready = [OLD], True
    pipeline.warm(request(text, cursor))  # the index agrees: nothing to change
    assert last_prompt(session) == before


def test_a_restart_that_cannot_reuse_the_slot_answers_from_the_quick_window(
    tmp_path: Path,
) -> None:
    pipeline, session = engine(Index([OLD]), tmp_path)
    pipeline.complete(request(SOURCE, FAR, typing=False))
    full = len(session.synced[-1])
    pipeline.persist()
    pipeline.close()
    pipeline, session = engine(Index([OLD]), tmp_path)
    edited = SOURCE.replace("def f50(a, b)", "def f50(a, b, c)")  # before the cursor
    cursor = FAR + len(", c")
    pipeline.complete(request(edited, cursor))  # a keystroke: never the full prompt
    assert len(session.synced[-1]) <= 192 + 64 < full  # 64: the special tokens' characters
    pipeline.warm(request(edited, cursor))  # the full prompt warms in the pause
    pipeline.complete(request(edited, cursor))
    assert len(session.synced[-1]) > 192 and session.evaluated[-1] <= 1


def test_a_first_warm_up_with_a_known_cursor_warms_the_prompt_not_the_saved_kv(
    tmp_path: Path,
) -> None:
    pipeline, session = engine(Index([OLD]), tmp_path)
    pipeline.complete(request(SOURCE, FAR, typing=False))
    pipeline.persist()
    pipeline.close()
    pipeline, session = engine(Index([OLD]), tmp_path)
    edited = SOURCE.replace("def f50(a, b)", "def f50(a, b, c)")  # changed while closed
    cursor = FAR + len(", c")
    # A warm-up that knows the cursor (an idle pause, a script's warm) evaluates
    # the prompt for here, reusing what the saved KV shares with it.
    pipeline.warm(request(edited, cursor))
    warmed = last_prompt(session)
    assert "f50(a, b, c)" in warmed
    pipeline.complete(request(edited, cursor))  # so the keystroke costs a token
    assert last_prompt(session) == warmed and session.evaluated[-1] <= 1


class MovingSession(Session):
    """Reuses as speculator.session.Session does: the common prefix, then whole
    old segments moved to their new place (the FIM suffix after typing)."""

    def _reused(self, segments: Any, shift_reuse: bool) -> int:
        prompt = [t for seg in segments for t in seg]
        keep = min(common_prefix(self.cells, prompt), len(prompt) - 1)
        if not shift_reuse:
            return keep
        moves = RealSession._plan_moves(self, segments, keep)  # type: ignore[arg-type]
        return keep + sum(length for _old, _new, length in moves)

    def pending(self, segments: Any, shift_reuse: bool = True) -> int:
        return sum(map(len, segments)) - self._reused(segments, shift_reuse)

    def sync(
        self, segments: Any, shift_reuse: bool = True, cancel: CancelToken | None = None
    ) -> tuple[Synced, Any]:
        reused = self._reused(segments, shift_reuse) if self.cells else 0
        synced, logits = super().sync(segments, shift_reuse, cancel)
        synced.reused, synced.evaluated = reused, synced.prompt_tokens - reused
        self.evaluated[-1] = synced.evaluated
        return synced, logits


def test_switching_files_in_a_real_workspace_evaluates_only_what_was_typed(
    tmp_path: Path,
) -> None:
    """Three of twenty standard-library modules visited in turn through the real
    workspace index, a new `x = ` line typed in each visit: after the first
    visit, nothing before the edit (other files' snippets, the window) and
    nothing after it (moved) is evaluated again."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    modules = sorted(p for p in stdlib.glob("[a-z]*.py") if 8_000 < p.stat().st_size < 40_000)
    root = tmp_path / "src"
    root.mkdir()
    for path in modules[:20]:
        shutil.copy(path, root / path.name)
    with WorkspaceIndex(str(root), watch=False).start() as index:
        assert index.wait_ready(30)
        pipeline, _ = engine(Index([]))
        session = MovingSession()
        pipeline.generator.session = session  # type: ignore[attr-defined]
        pipeline.generator.slots.session = session  # type: ignore[attr-defined]
        pipeline.set_context_provider(index)
        docs: list[tuple[Path, str, int]] = []
        for path in sorted(root.glob("*.py"))[:3]:
            text = path.read_text()
            at = text.index("\n", text.index("\n    def ", len(text) // 2) + 1) + 1
            docs.append((path, text, at))
        evaluated = []
        for round_ in range(3):
            for i, (path, text, at) in enumerate(docs):
                line = "    x = "
                text, cursor = text[:at] + line + "\n" + text[at:], at + len(line)
                docs[i] = (path, text, cursor + 1)
                if round_ == 0:
                    pipeline.warm(request(text, cursor, str(path)))  # the first visit warms
                pipeline.complete(request(text, cursor, str(path)))
                assert "<|repo_name|>" in last_prompt(session)  # other files' snippets
                if round_ > 0:
                    evaluated.append(session.evaluated[-1])
    fim_specials = len("<|fim_suffix|>\n<|fim_middle|>")
    assert max(evaluated) <= len("    x = \n") + fim_specials


def test_a_cold_document_never_saves_another_documents_kv_as_its_own() -> None:
    """Entering a document with nothing to restore leaves the other one's cells
    in the session until its prompt is synced: a quick-window answer in between
    must not save them as the document's KV (a later restore would log a
    restored document and still evaluate it all)."""
    pipeline, session = engine(Index([OLD]))
    pipeline.complete(request(SOURCE, FAR, typing=False))  # a.py, its full prompt
    a_cells = list(session.cells)
    other = SOURCE.replace("def f", "def g")
    pipeline.complete(request(other, FAR, path="/w/b.py"))  # a keystroke on cold b.py
    assert len(session.synced[-1]) <= 192 + 64  # the quick window answered
    slots = pipeline.generator.slots  # type: ignore[attr-defined]
    assert slots.ram.get(("completion", "/w/b.py")) is None
    saved_a = slots.ram.get(("completion", "/w/a.py"))
    assert saved_a is not None and saved_a.target.cells == a_cells
