"""Synthetic-repository measurement of the workspace index (the lab, not the product).

    python -m bench.index_scale --measure DIR [--generate N]

indexes DIR (with watching on), then times 200 `related(path, 40 lines of that
file, 4)` calls and prints the index's stats, scan time, RSS and latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from speculator.workspace import WorkspaceIndex


def make_synthetic_repo(root: str, n_files: int, seed: int = 0) -> None:
    """Write `n_files` Python modules (20 per package, ~120 lines, half tests)."""
    import random

    rng = random.Random(seed)
    nouns = [
        f"{a}{b}"
        for a in ("user", "order", "item", "cache", "token", "node", "frame")
        for b in ("", "_id", "_map", "_list", "_count", "_name", "_path", "_spec")
    ]
    for i in range(n_files):
        package = os.path.join(root, f"pkg{i // 20:03d}")
        os.makedirs(package, exist_ok=True)
        name = f"mod{i:05d}"
        lines = [f'"""Module {name}."""', "", "import os", ""]
        for j in range(8):
            a, b = rng.sample(nouns, 2)
            lines += [
                f"def {name}_{a}_{j}({a}, {b}=None):",
                f'    """Return the {a} of {b}."""',
                f"    if {b} is None:",
                f"        {b} = {rng.randint(0, 999)}",
                f"    result = [{a}, {b}, {name}_helper_{rng.randint(0, 9999)}]",
                "    for value in result:",
                "        if value:",
                "            return value",
                f"    return os.path.join(str({a}), str({b}))",
                "",
                "",
            ]
        suffix = "_test" if i % 2 else ""
        with open(os.path.join(package, f"{name}{suffix}.py"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines))


def _rss_kib() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(root: str, queries: int = 200) -> dict[str, object]:
    """Index `root`, then time related() on chunks taken from its own files."""
    import gc
    import random

    gc.collect()
    before = _rss_kib()
    started = time.perf_counter()
    index = WorkspaceIndex(root).start()
    index.wait_ready()
    scan_s = time.perf_counter() - started
    gc.collect()
    after = _rss_kib()
    rng = random.Random(1)
    files = index.files()
    timings = []
    for _ in range(queries):
        path = rng.choice(files)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        start = rng.randrange(max(1, len(lines) - 40))
        query = "\n".join(lines[start : start + 40])
        t = time.perf_counter()
        index.related(path, query, 4)
        timings.append((time.perf_counter() - t) * 1000)
    index.stop()
    timings.sort()
    return {
        **index.stats(),
        "scan_s": round(scan_s, 2),
        "rss_delta_mib": round((after - before) / 1024, 1),
        "rss_total_mib": round(after / 1024, 1),
        "related_ms_p50": round(timings[len(timings) // 2], 2),
        "related_ms_p95": round(timings[int(len(timings) * 0.95)], 2),
        "related_ms_max": round(timings[-1], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.index_scale")
    parser.add_argument("--measure", metavar="DIR", required=True, help="index DIR and report")
    parser.add_argument("--generate", type=int, metavar="N", help="first write N synthetic files")
    args = parser.parse_args(argv)
    if args.generate:
        make_synthetic_repo(args.measure, args.generate)
    sys.stdout.write(json.dumps(measure(args.measure), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
