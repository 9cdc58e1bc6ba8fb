"""CancelToken hooks: how a cancel reaches a llama_decode already running."""

import threading

from speculator.types import CancelToken


def test_a_hook_runs_once_on_cancel_and_not_after_it_is_removed() -> None:
    token, calls = CancelToken(), []
    remove = token.on_cancel(lambda: calls.append("first"))
    remove_second = token.on_cancel(lambda: calls.append("second"))
    remove_second()
    token.cancel()
    assert token.cancelled and calls == ["first"]
    remove()  # removing after the cancel is harmless


def test_a_hook_on_a_cancelled_token_runs_at_once() -> None:
    token, calls = CancelToken(), []
    token.cancel()
    token.on_cancel(lambda: calls.append("late"))()
    assert calls == ["late"]


def test_no_hook_runs_once_its_remover_has_returned() -> None:
    """The session lowers its abort flag after removing its hook: a cancel racing
    with the removal must not raise the flag again afterwards."""
    for _ in range(200):
        token, raised = CancelToken(), threading.Event()
        remove = token.on_cancel(raised.set)
        canceller = threading.Thread(target=token.cancel)
        canceller.start()
        remove()
        raised.clear()  # the session lowers its flag here
        canceller.join()
        assert not raised.is_set()
