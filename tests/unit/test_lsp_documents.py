"""Incremental document sync: exact text and a tree equal to a fresh parse."""

import random

import pytest
from lsprotocol import types

from lsp_server.convert import LineIndex
from lsp_server.documents import Document, DocumentError, DocumentStore
from speculator.languages import new_parser

SOURCE = '''def greet(name: str) -> str:
    """Say hi 😀 to 𝒳."""
    return f"hi {name} 👋"


class Point:
    def __init__(self, x, y):
        self.x = x  # café
        self.y = y
'''


def edit(doc: Document, start: int, end: int, new: str) -> None:
    """Send the edit the way an editor does: as a UTF-16 range."""
    rng = doc.index.range(start, end)
    change = types.TextDocumentContentChangePartial(range=rng, text=new)
    doc.apply([change], doc.version + 1)


def nodes(tree) -> list[tuple]:
    out = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        out.append((node.type, node.start_byte, node.end_byte, node.start_point, node.end_point))
        stack.extend(reversed(node.children))
    return out


def assert_tree_matches_fresh_parse(doc: Document) -> None:
    parser = new_parser(doc.language_id)
    assert parser is not None and doc.tree is not None
    fresh = parser.parse(doc.text.encode("utf-8"))
    assert nodes(doc.tree) == nodes(fresh)


def test_incremental_edits_match_a_fresh_parse() -> None:
    doc = Document("file:///a.py", "python", 1, SOURCE, max_chars=1_000_000)
    expected = SOURCE
    rng = random.Random(7)
    pieces = ["x", "😀", "\n", "    ", "(", "é", "𝒳 = 1\n", "", "def g():\n    pass\n"]
    for _ in range(200):
        start = rng.randrange(len(expected) + 1)
        end = min(len(expected), start + rng.randrange(4))
        new = rng.choice(pieces)
        edit(doc, start, end, new)
        expected = expected[:start] + new + expected[end:]
        assert doc.text == expected
    assert_tree_matches_fresh_parse(doc)


def test_each_step_of_typing_an_emoji_line_keeps_the_tree_exact() -> None:
    doc = Document("file:///b.py", "python", 1, SOURCE, max_chars=1_000_000)
    cursor = SOURCE.index("class")
    for char in "x = '😀🎉'\n":
        edit(doc, cursor, cursor, char)
        cursor += 1
        assert_tree_matches_fresh_parse(doc)
    assert "x = '😀🎉'\nclass" in doc.text
    assert doc.last_edit == cursor


def test_batch_of_changes_applies_in_order() -> None:
    doc = Document("file:///c.py", "python", 1, "ab\ncd\n", max_chars=100)
    first = types.TextDocumentContentChangePartial(range=LineIndex(doc.text).range(0, 0), text="😀")
    # The second range is relative to the text after the first change.
    second = types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=0, character=2), end=types.Position(line=0, character=3)
        ),
        text="Z",
    )
    doc.apply([first, second], 2)
    assert doc.text == "😀Zb\ncd\n"
    assert doc.version == 2
    assert_tree_matches_fresh_parse(doc)


def test_full_text_change_replaces_everything() -> None:
    doc = Document("file:///d.py", "python", 1, "old", max_chars=100)
    doc.apply([types.TextDocumentContentChangeWholeDocument(text="new = 1\n")], 2)
    assert doc.text == "new = 1\n"
    assert_tree_matches_fresh_parse(doc)


def test_large_and_binary_documents_keep_text_but_refuse_completion() -> None:
    big = Document("file:///big.py", "python", 1, "x = 1\n" * 100, max_chars=300)
    assert big.tree is None
    with pytest.raises(DocumentError, match="too large"):
        big.check_completable()
    edit(big, 0, 0, "# still editable\n")
    assert big.text.startswith("# still editable\n")

    binary = Document("file:///bin.py", "python", 1, "a\x00b", max_chars=300)
    with pytest.raises(DocumentError, match="binary"):
        binary.check_completable()
    edit(binary, 1, 2, "")  # deleting the NUL makes it a normal document again
    binary.check_completable()
    assert binary.tree is not None


def test_unknown_language_has_no_tree_but_works() -> None:
    doc = Document("file:///n.txt", "plaintext", 1, "hello", max_chars=100)
    edit(doc, 5, 5, " world")
    assert doc.text == "hello world" and doc.tree is None
    doc.check_completable()


def test_store_rejects_unknown_documents() -> None:
    store = DocumentStore(max_chars=100)
    with pytest.raises(DocumentError, match="unknown document"):
        store.change("file:///nope.py", 2, [])
    item = types.TextDocumentItem(uri="file:///x.py", language_id="python", version=1, text="")
    store.open(item)
    assert len(store) == 1
    store.close("file:///x.py")
    assert len(store) == 0


def test_enclosing_definition_finds_the_function_around_the_cursor() -> None:
    doc = Document("file:///e.py", "python", 1, SOURCE, max_chars=1_000_000)
    inside = SOURCE.index("self.x = x")
    start, end = doc.enclosing_definition(inside)
    assert doc.text[start:end].startswith("def __init__(self, x, y):")
    assert doc.text[start:end].endswith("self.y = y")
    start, end = doc.enclosing_definition(SOURCE.index("return f"))
    assert doc.text[start:end].startswith("def greet") and doc.text[start:end].endswith('👋"')
    assert doc.enclosing_definition(len(SOURCE)) is None


def test_lone_surrogates_are_stored_as_sent_and_parsed() -> None:
    """Issue 11, item 4: didOpen with "a\\ud800b\\n" was never stored."""
    store = DocumentStore(max_chars=100)
    item = types.TextDocumentItem(
        uri="file:///s.py", language_id="python", version=1, text="a\ud800b\n"
    )
    doc = store.open(item)
    assert doc.text == "a\ud800b\n" and doc.tree is not None
    edit(doc, 1, 1, "\ud83d")
    edit(doc, 0, 0, "x = '😀'\n")
    assert doc.text == "x = '😀'\na\ud83d\ud800b\n"
    assert doc.enclosing_definition(0) is None


def test_a_change_batch_is_all_or_nothing() -> None:
    """Issue 11, item 4: a failing change used to leave the first ones applied."""
    doc = Document("file:///t.py", "python", 1, "ab\ncd\n", max_chars=100)
    good = types.TextDocumentContentChangePartial(range=doc.index.range(0, 0), text="X")
    backwards = types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=1, character=1), end=types.Position(line=0, character=0)
        ),
        text="Y",
    )
    with pytest.raises(DocumentError, match="not applied"):
        doc.apply([good, backwards], 2)
    assert doc.text == "ab\ncd\n" and doc.version == 1
    assert doc.index.starts == LineIndex(doc.text).starts


def test_edits_never_parse_and_the_tree_catches_up_when_asked() -> None:
    """Issue 11, item 5: parsing happens when the tree is asked for, not per edit."""
    doc = Document("file:///u.py", "python", 1, SOURCE, max_chars=1_000_000)
    parser = doc._parser
    calls = []

    class CountingParser:
        def parse(self, *args):
            calls.append(1)
            return parser.parse(*args)

    doc._parser = CountingParser()  # type: ignore[assignment]
    for i in range(20):
        edit(doc, i, i, "😀")
    assert calls == []
    text = doc.text
    assert_tree_matches_fresh_parse(doc)
    assert calls == [1]
    assert doc.syntax_tree(text) is doc.syntax_tree(text)  # no second parse
    edit(doc, 0, 0, "x")
    assert doc.syntax_tree(text) is None  # a stale snapshot gets no tree


@pytest.mark.parametrize(
    ("sent", "uri", "read_as"),
    [
        ("python", "file:///w/a.py", "python"),
        ("Python", "file:///w/a.py", "python"),
        ("plaintext", "file:///w/a.py", "python"),
        ("", "file:///w/app.ts", "typescript"),
        ("javascript", "file:///w/a.py", "javascript"),  # a known languageId is the client's word
        ("lua", "file:///w/init.lua", "lua"),  # no grammar either way: as sent
        ("plaintext", "file:///w/notes.txt", "plaintext"),
    ],
)
def test_a_document_is_read_as_its_languageid_or_else_as_its_name_says(
    sent: str, uri: str, read_as: str
) -> None:
    store = DocumentStore(max_chars=1_000_000)
    doc = store.open(types.TextDocumentItem(uri=uri, language_id=sent, version=1, text=SOURCE))
    assert doc.language_id == read_as
    assert (doc.syntax_tree(doc.text) is not None) == (
        read_as in ("python", "typescript", "javascript")
    )
