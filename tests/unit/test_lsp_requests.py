"""Request params: an inline text's language, from its languageId or its path."""

from __future__ import annotations

import pytest

from lsp_server.documents import DocumentStore
from lsp_server.requests import CompleteParams, parse, resolve


@pytest.mark.parametrize(
    ("extra", "language_id"),
    [
        ({}, "python"),
        ({"path": "src/app.ts"}, "typescript"),
        ({"languageId": "Go", "path": "main.go"}, "go"),
        ({"languageId": "rust", "path": "a.py"}, "rust"),
        ({"languageId": "lua"}, "lua"),
        ({"path": "notes.txt"}, "python"),
    ],
)
def test_inline_text_is_read_as_its_languageid_else_as_its_path_says(
    extra: dict[str, str], language_id: str
) -> None:
    params = parse(
        {"text": "x = 1\n", "position": {"line": 0, "character": 1}} | extra, CompleteParams
    )
    assert resolve(params, DocumentStore(max_chars=1000)).language_id == language_id
