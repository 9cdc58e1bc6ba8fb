"""bench.workspace_kv without a server: the single-file replay sets a file back
to its text after round 1 and pairs each of its completions with the switching one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import workspace_kv
from bench.workspace_kv import OpenFile, Report, Sample, insert, set_back, summarize

TEXT = "def f(a):\n    b = a\n    return b\n\n\ndef g():\n    pass\n"


class Notes:
    """A server that records the notifications it is sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))


def test_set_back_deletes_exactly_the_lines_typed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_kv, "KEY_GAP_S", 0.0)
    server: Any = Notes()
    at = TEXT.index("    return")
    doc = OpenFile(tmp_path / "m.py", TEXT, at, "    ")
    for _ in range(2):  # two visits' lines, as `visit` types them
        insert(server, doc, doc.line_start - 1, "\n    x = ")
        doc.line_start = doc.cursor + 1
    first = replace(doc)
    for _ in range(3):
        insert(server, doc, doc.line_start - 1, "\n    x = ")
        doc.line_start = doc.cursor + 1
    server.sent.clear()
    set_back(server, doc, first)
    assert (doc.text, doc.line_start, doc.cursor) == (first.text, first.line_start, first.cursor)
    (method, params), *settings = server.sent
    # and the typed-ahead cache emptied, so the replay computes its completions
    assert [m for m, _ in settings] == ["workspace/didChangeConfiguration"] * 2
    assert settings[-1][1] == {"settings": {"groundspec": {"cacheEntries": 16}}}
    change = params["contentChanges"][0]
    # One ranged deletion where the lines were typed: the server's cursor stays there.
    assert method == "textDocument/didChange" and change["text"] == ""
    assert change["range"]["start"] == {"line": 3, "character": 8}
    assert change["range"]["end"] == {"line": 6, "character": 8}


def _sample(file: str, ms: float, text: str, save: float = 0.0) -> Sample:
    return Sample(f"{file} {ms}", ms, 1500, 8, text, 100.0, file, save, 2.0)


def test_each_file_is_compared_with_its_own_replay() -> None:
    switching = [
        _sample("a.py", 500, "1"),
        _sample("b.py", 900, "2", 10),
        _sample("a.py", 600, "3"),
    ]
    single = [_sample("a.py", 400, "1"), _sample("a.py", 500, "x"), _sample("b.py", 450, "2")]
    report = Report()
    summarize(report, switching, single)
    text = "\n".join(report.lines)
    assert "2 of 3 answers identical" in text
    assert "a.py (2 vs 2): whole 500 / 600 / 600 vs 400 / 500 / 500 ms (p95 1.20x)" in text
    assert "b.py (1 vs 1): whole 900 / 900 / 900 vs 450 / 450 / 450 ms (p95 2.00x)" in text
    assert "live KV saved in 0 / 10 / 10 ms" in text
