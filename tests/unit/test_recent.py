from collections import OrderedDict

from speculator.recent import remember


def test_the_oldest_entry_goes_when_the_limit_is_passed() -> None:
    entries: OrderedDict[str, int] = OrderedDict()
    for i, key in enumerate("abcd"):
        remember(entries, key, i, limit=3)
    assert list(entries.items()) == [("b", 1), ("c", 2), ("d", 3)]


def test_storing_a_key_again_makes_it_the_newest_with_its_new_value() -> None:
    entries: OrderedDict[str, int] = OrderedDict()
    for key in "abc":
        remember(entries, key, 0, limit=3)
    remember(entries, "a", 9, limit=3)
    remember(entries, "d", 0, limit=3)
    assert list(entries.items()) == [("c", 0), ("a", 9), ("d", 0)]


def test_a_zero_limit_keeps_nothing() -> None:
    entries: OrderedDict[str, int] = OrderedDict()
    remember(entries, "a", 1, limit=0)
    assert not entries
