"""What the quick window costs in quality (issue 12): the same corpus
completions from the full prompt and from the short window, first lines compared
with the original text and with each other.

    python -m bench.quick [--tasks N] [--small] [--output FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import msgspec

from speculator import engine as engine_module
from speculator import provision
from speculator.config import EngineConfig
from speculator.engine import SpeculativeEngine
from speculator.types import CompletionRequest

from .replay import _first_line_matches
from .tasks import completion_tasks


def run(model: str | None, n_tasks: int, out: list[str]) -> None:
    config = EngineConfig(target_model=model, use_draft=False, kv_ram_mb=0, kv_disk_mb=0)
    engine = SpeculativeEngine.load(config)
    tasks = [t for t in completion_tasks() if not t.multiline][::2][:n_tasks]  # one per file
    right = {"full": 0, "quick": 0}
    same = 0
    for task in tasks:
        texts = {}
        for variant, threshold in (("full", 0), ("quick", 1)):
            engine.config = msgspec.structs.replace(config, quick_window_tokens=threshold)
            request = CompletionRequest(
                text=task.text,
                cursor=task.start,
                path=f"/{variant}/{task.path}",
                language_id=task.language,
                max_tokens=24,
                speculation="off",
                multiline=False,
            )
            engine.session.trim(0)  # both variants from a cold cache, as on an unseen file
            result = engine.complete(request)
            texts[variant] = result.text
            right[variant] += _first_line_matches(result.text, task.expected)
            out.append(
                f"{task.name} {variant}: {result.stats.prompt_tokens} prompt tokens, "
                f"{result.stats.total_ms:.0f} ms, {result.text.split(chr(10))[0]!r}"
            )
        same += texts["full"].split("\n")[0] == texts["quick"].split("\n")[0]
        print(out[-2], out[-1], sep="\n", flush=True)
    out.append(
        f"{len(tasks)} tasks: first line equals the file: full {right['full']}, "
        f"quick {right['quick']}; quick's first line equals full's in {same}"
    )
    engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--small", action="store_true", help="the draft model as target")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--prefix-chars", type=int, help="the quick window before the cursor")
    parser.add_argument("--suffix-chars", type=int, help="the quick window after the cursor")
    args = parser.parse_args()
    model = str(provision.model_path(provision.DRAFT)) if args.small else None
    if args.prefix_chars:  # try another quick window size
        engine_module.QUICK_PREFIX_CHARS = args.prefix_chars
    if args.suffix_chars:
        engine_module.QUICK_SUFFIX_CHARS = args.suffix_chars
    window = f"{engine_module.QUICK_PREFIX_CHARS}/{engine_module.QUICK_SUFFIX_CHARS} characters"
    name = Path(model).name if model else "default target"
    out = [f"model: {name}; quick window {window}; {time.ctime()}"]
    try:
        run(model, args.tasks, out)
    finally:
        print(out[-1])
        if args.output:
            args.output.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
