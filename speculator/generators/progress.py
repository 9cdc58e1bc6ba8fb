"""What the local generator reports as tokens come: the text so far, each token's end."""

from __future__ import annotations

from collections.abc import Callable

from ..jobs import StopRule
from ..types import Progress


def token_ends(tokens: list[int], token_bytes: Callable[[int], bytes]) -> list[int]:
    """Where each token ends in the decoded text, in characters (a character split
    over tokens counts at the token that completes it)."""
    ends, data = [], b""
    for token in tokens:
        data += token_bytes(token)
        ends.append(len(data.decode("utf-8", errors="ignore")))
    return ends


def reporting(
    stop: StopRule,
    report: Callable[[Progress], None],
    shown: Callable[[str], str],
    prompt_tokens: int,
) -> StopRule:
    """The stop rule, also reporting the text so far as the caller would get it now
    (`shown`: the job's finishing): the decode loop calls it after every accepted
    token, so streaming costs no change to the loop."""
    generated = 0

    def rule(text: str) -> int | None:
        nonlocal generated
        generated += 1
        cut = stop(text)
        kept = text if cut is None else text[:cut]
        report(Progress(shown(kept), generated, prompt_tokens))
        return cut

    return rule
