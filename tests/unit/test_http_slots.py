"""The HTTP front door's choice of engine KV slot: one per client and document."""

from __future__ import annotations

from pathlib import Path

from lsp_server.http_slots import SlotRouter

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus"


def window(name: str, line: int, before: int = 60, after: int = 20) -> str:
    """What llama.vim sends of a file: lines around the cursor."""
    lines = (CORPUS / name).read_text().split("\n")
    return "\n".join(lines[max(0, line - before) : line + after])


def test_windows_of_one_file_share_a_slot_and_two_files_do_not() -> None:
    router = SlotRouter()
    a1 = router.route("peer:127.0.0.1", window("graphlib.py", 100))
    b1 = router.route("peer:127.0.0.1", window("shlex.py", 100))
    a2 = router.route("peer:127.0.0.1", window("graphlib.py", 103))  # typed a few lines on
    b2 = router.route("peer:127.0.0.1", window("shlex.py", 130))  # moved 30 lines
    assert a1 == a2 and b1 == b2 and a1 != b1


def test_clients_never_share_a_slot() -> None:
    router = SlotRouter()
    text = window("textwrap.py", 80)
    assert router.route("slot:0", text) != router.route("slot:1", text)


def test_a_named_file_is_its_own_slot() -> None:
    router = SlotRouter()
    text = window("textwrap.py", 80)
    one = router.route("peer:::1", text, filename="a.py")
    assert one == router.route("peer:::1", "other text entirely", filename="a.py")
    assert one != router.route("peer:::1", text, filename="b.py")


def test_a_window_without_distinctive_lines_stays_with_the_clients_latest() -> None:
    router = SlotRouter()
    latest = router.route("c", window("shlex.py", 50))
    assert router.route("c", "x = 1\n") == latest
    assert router.route("d", "") != latest  # another client: a slot of its own


def test_old_documents_are_forgotten() -> None:
    router = SlotRouter(max_documents=2)
    first = router.route("c", window("graphlib.py", 100))
    router.route("c", window("shlex.py", 100))
    router.route("c", window("textwrap.py", 100))
    assert router.route("c", window("graphlib.py", 100)) != first
