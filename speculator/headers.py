"""Each document's prompt header (other files' snippets), frozen while it may be.

The FIM prompt starts with snippets of other files (speculator/prompt.py), so
any change to them moves everything after them: the whole prompt is evaluated
again. The workspace index's best snippets drift with every keystroke's query,
and are missing while the index loads after a start. So a document keeps the
header it was given:

- a keystroke's request always uses the frozen header (`current`);
- an idle warm-up may replace it (`candidate`), only when the user moved to
  other code (the cursor is more than MOVE_LINES lines from where the header
  was chosen) or the header is provisional (chosen while the index was not
  ready, or read back from a saved slot after a restart), and only with
  snippets that differ; the warm-up evaluates the new prompt in full, then
  `adopt`s it, so no keystroke ever pays for the change;
- the header is saved with the document's KV slot, so a restart rebuilds the
  very prompt the saved KV holds (`restore`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .types import Snippet

# About the lines of the text the snippets were matched against (the 1,500
# characters before the cursor, speculator/pipeline.py): past this, the query
# shares nothing with the one the header was chosen for.
MOVE_LINES = 40
MAX_DOCUMENTS = 256  # headers kept (a few KB each); the least recently used go first


@dataclass(frozen=True)
class Header:
    snippets: tuple[Snippet, ...]
    line: int  # the cursor's line when they were chosen
    provisional: bool = False  # to be checked against the index once it is ready


class Headers:
    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self.max_documents = max_documents
        self._headers: OrderedDict[str, Header] = OrderedDict()

    def get(self, name: str) -> Header | None:
        header = self._headers.get(name)
        if header is not None:
            self._headers.move_to_end(name)
        return header

    def current(
        self, name: str, line: int, fresh: Callable[[], list[Snippet]], ready: bool
    ) -> Header:
        """The header a request uses: the frozen one, else `fresh()` frozen now
        (provisional while the index is not `ready`)."""
        header = self.get(name)
        if header is None:
            header = Header(tuple(fresh()), line, provisional=not ready)
            self.adopt(name, header)
        return header

    def candidate(
        self, name: str, line: int, fresh: Callable[[], list[Snippet]], ready: bool
    ) -> Header | None:
        """For an idle warm-up: a new header to evaluate and then adopt, or None
        to keep the frozen one. A frozen header found equal to the fresh
        snippets is re-anchored at `line` (and no longer provisional) for free."""
        header = self.get(name)
        if header is None or not ready:
            return None
        if not header.provisional and abs(line - header.line) <= MOVE_LINES:
            return None
        snippets = tuple(fresh())
        if snippets == header.snippets:
            self.adopt(name, Header(snippets, line))
            return None
        return Header(snippets, line)

    def adopt(self, name: str, header: Header) -> None:
        self._headers[name] = header
        self._headers.move_to_end(name)
        while len(self._headers) > self.max_documents:
            self._headers.popitem(last=False)

    def restore(self, name: str, snippets: list[Snippet], line: int) -> None:
        """A header saved with a slot (a restart): used until the index is ready
        and a warm-up has compared it with the index's answer."""
        if name not in self._headers:
            self.adopt(name, Header(tuple(snippets), line, provisional=True))


def cursor_line(text: str, cursor: int) -> int:
    return text.count("\n", 0, cursor)
