"""HTTP slots: the N request slots llama-server lists, and which engine KV slot a
request's document uses.

SlotPool is llama-server's `--parallel N`: a generating request takes a free
slot when it arrives (the lowest free id; when none is free it waits, clients in
rotation) and holds it until its answer is sent, so /slots shows it
`is_processing` the whole time. The one engine still serves the held slots in
turns (http_limits.ClientLimits.turn): N slots let N requests be accepted and
listed at once, not decoded at once.

SlotRouter names the engine KV slot for a request's document. The engine keeps one live KV sequence and saves the others as slots
(speculator/slots.py); a request names its slot. LSP requests name their
document. HTTP clients (llama.vim, llama.vscode) do not say which file they are
in: they send a window of it (`input_prefix`, `prompt`, `input_suffix`). So a
request's document is recognised by its text: the client's recent document
whose distinctive lines the request's window shares most (at least half of
them) is the same one, else it is a new one. This is llama-server's slot choice
by prompt similarity, on lines instead of tokens, and keeps two editors (one
client address) typing in two files from re-evaluating each other's prompt.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import OrderedDict
from collections.abc import AsyncIterator

from msgspec import Struct

from speculator.recent import remember

from .http_limits import Rotation

MAX_DOCUMENTS = 16  # remembered documents, all clients together (least recent go)
SAME_DOCUMENT = 0.5  # share of distinctive lines two windows of one file have in common
MIN_LINE_CHARS = 8  # shorter lines ("}", "return x") are too common to tell files apart


class _Document(Struct):
    client: str
    lines: frozenset[int]


class SlotRouter:
    """Names the engine slot for a request from its client key and its text."""

    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self.max_documents = max_documents
        self._documents: OrderedDict[str, _Document] = OrderedDict()
        self._numbers = itertools.count(1)

    def route(self, client: str, text: str, filename: str | None = None) -> str:
        """The slot name for `client`'s request over `text` (a window of a file)."""
        if filename:
            return self._touch(f"http {client} {filename}", client, frozenset())
        lines = distinctive_lines(text)
        mine = [(name, doc) for name, doc in self._documents.items() if doc.client == client]
        if not lines:  # nothing to recognise it by: the client's latest document
            name = mine[-1][0] if mine else self._new_name(client)
            return self._touch(name, client, self._documents.get(name, _EMPTY).lines)
        best, best_share = "", 0.0
        for name, document in mine:
            if document.lines:
                share = len(lines & document.lines) / min(len(lines), len(document.lines))
                if share > best_share:
                    best, best_share = name, share
        if best_share < SAME_DOCUMENT:
            best = self._new_name(client)
        return self._touch(best, client, lines)

    def forget(self, client: str) -> int:
        """Forget `client`'s documents (its next request starts a new slot); how many."""
        names = [name for name, doc in self._documents.items() if doc.client == client]
        for name in names:
            del self._documents[name]
        return len(names)

    def _new_name(self, client: str) -> str:
        return f"http {client} #{next(self._numbers)}"

    def _touch(self, name: str, client: str, lines: frozenset[int]) -> str:
        remember(self._documents, name, _Document(client, lines), self.max_documents)
        return name


_EMPTY = _Document("", frozenset())


def distinctive_lines(text: str) -> frozenset[int]:
    """Hashes of the lines long enough to tell one file from another."""
    return frozenset(
        hash(stripped)
        for line in text.split("\n")
        if len(stripped := line.strip()) >= MIN_LINE_CHARS
    )


class SlotPool:
    """`n` request slots; a slot is busy from a request's arrival to its answer."""

    def __init__(self, n: int = 1) -> None:
        self.n = n
        self.busy: list[bool] = [False] * n
        self._places = Rotation(n)
        self._tasks = itertools.count()
        self.tasks: list[int] = [-1] * n  # the id of each busy slot's request, else -1

    def free(self) -> int:
        return self.busy.count(False)

    @contextlib.asynccontextmanager
    async def slot(self, client: str) -> AsyncIterator[int]:
        """Wait for a free slot for `client` and hold it (released on every exit:
        an answer, an error, a cancel); yields its id."""
        async with self._places.hold(client):
            index = self.busy.index(False)  # a place held means a slot is free
            self.busy[index], self.tasks[index] = True, next(self._tasks)
            try:
                yield index
            finally:
                self.busy[index], self.tasks[index] = False, -1
