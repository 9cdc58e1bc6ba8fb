"""A document's prompt header stays put: keystrokes never change it, an idle
warm-up does only when the user moved or the header is provisional."""

from speculator.headers import MOVE_LINES, Headers
from speculator.types import Snippet

A = [Snippet("a.py", "def a():\n    pass\n")]
B = [Snippet("b.py", "def b():\n    pass\n")]


class Index:
    """The workspace index's answers, counted."""

    def __init__(self, snippets: list[Snippet]) -> None:
        self.snippets = snippets
        self.asked = 0

    def __call__(self) -> list[Snippet]:
        self.asked += 1
        return list(self.snippets)


def test_keystrokes_keep_the_header_the_document_was_first_given() -> None:
    headers, index = Headers(), Index(A)
    assert list(headers.current("doc", 10, index, ready=True).snippets) == A
    index.snippets = B  # the index's best snippets drift with every query
    for line in (10, 11, 10 + MOVE_LINES * 3):
        assert list(headers.current("doc", line, index, ready=True).snippets) == A
    assert index.asked == 1  # the index is not even asked


def test_a_warm_up_near_the_same_code_keeps_the_header() -> None:
    headers, index = Headers(), Index(A)
    headers.current("doc", 100, index, ready=True)
    index.snippets = B
    assert headers.candidate("doc", 100 + MOVE_LINES, index, ready=True) is None
    assert headers.candidate("doc", 100 - MOVE_LINES, index, ready=True) is None


def test_a_warm_up_after_the_user_moved_offers_new_snippets_and_adopting_them_sticks() -> None:
    headers, index = Headers(), Index(A)
    headers.current("doc", 100, index, ready=True)
    index.snippets = B
    new = headers.candidate("doc", 100 + MOVE_LINES + 1, index, ready=True)
    assert new is not None and list(new.snippets) == B and not new.provisional
    # Not adopted yet (the warm-up may be cancelled): keystrokes keep the old one.
    assert list(headers.current("doc", 141, index, ready=True).snippets) == A
    headers.adopt("doc", new)
    assert list(headers.current("doc", 141, index, ready=True).snippets) == B


def test_moving_where_the_same_snippets_fit_reanchors_without_a_change() -> None:
    headers, index = Headers(), Index(A)
    headers.current("doc", 0, index, ready=True)
    assert headers.candidate("doc", 500, index, ready=True) is None
    header = headers.get("doc")
    assert header is not None and header.line == 500 and list(header.snippets) == A


def test_a_header_chosen_while_the_index_loaded_is_replaced_once_it_is_ready() -> None:
    headers, index = Headers(), Index([])
    first = headers.current("doc", 5, index, ready=False)
    assert first.provisional and first.snippets == ()
    index.snippets = A
    assert headers.candidate("doc", 5, index, ready=False) is None  # still loading
    new = headers.candidate("doc", 5, index, ready=True)
    assert new is not None and list(new.snippets) == A


def test_a_restored_header_is_used_until_the_index_says_otherwise() -> None:
    headers, index = Headers(), Index(B)
    headers.restore("doc", A, 30)
    assert list(headers.current("doc", 30, index, ready=False).snippets) == A
    assert index.asked == 0
    index.snippets = A  # the index agrees: kept, no longer provisional
    assert headers.candidate("doc", 30, index, ready=True) is None
    header = headers.get("doc")
    assert header is not None and not header.provisional
    headers.restore("doc", B, 30)  # a header in use is never replaced by a saved one
    assert list(headers.current("doc", 30, index, ready=True).snippets) == A


def test_headers_are_bounded_least_recently_used_first() -> None:
    headers, index = Headers(max_documents=2), Index(A)
    for name in ("a", "b"):
        headers.current(name, 0, index, ready=True)
    headers.get("a")
    headers.current("c", 0, index, ready=True)
    assert headers.get("b") is None
    assert headers.get("a") is not None and headers.get("c") is not None
