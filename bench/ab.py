"""Two commits side by side in one run: the test split's refactor and completion
benchmarks and the keystroke replay, old and new interleaved round by round.

    python -m bench.ab --old c1c41fd --new HEAD --rounds 3 --limit 3 --output FILE

Each commit is checked out once as a detached worktree under --trees and run with
PYTHONPATH pointing at it (the same venv, the same options on both sides). A
round runs one benchmark for both commits back to back, under one hold of the
model lock (/tmp/groundspec-model.lock, released between rounds so other users
get their turn); the order alternates (old first, then new first) so a drifting
host hits both alike. Every run is its own process with its own warm engine.

- refactor, completion: the commit's own `bench --kind K --split test --modes
  off,auto --limit N --json` (`python -m bench`, or `python -m lsp_server.cli
  bench` where the commit has no bench/cli.py); decode tokens/s per task and mode.
- replay: the commit's own `bench.replay.replay` on its two regions, the `shift`
  variant (what an editor gets), N keystrokes each, run by this file as a worker
  in that commit's tree; latency per keystroke and the completion texts.

Ratios are new/old speed (old/new time): above 1 the new commit is faster.
Beside them, old against old across rounds: the noise of the machine.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LOCK = "/tmp/groundspec-model.lock"
KINDS = ("refactor", "completion", "replay")
MODES = "off,auto"
REPO = Path(__file__).resolve().parent.parent


# -- the worker: runs in a commit's tree (PYTHONPATH), with that commit's code ---------


def replay_worker(limit: int) -> None:
    """The keystroke replay's `shift` variant, every keystroke's row on stdout."""
    from bench.replay import REGIONS, keystrokes, replay
    from bench.tasks import CORPUS
    from speculator.config import EngineConfig
    from speculator.engine import SpeculativeEngine

    engine = SpeculativeEngine.load(EngineConfig().with_env())
    rows = []
    for file, line, n in REGIONS:
        base, at, region = keystrokes(CORPUS / file, line, n)
        rows += [{**r, "region": file} for r in replay(engine, "shift", base, at, region, limit)]
    print(json.dumps(rows))


# -- the driver ---------------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()


def worktree(commit: str, trees: Path) -> Path:
    """A detached checkout of `commit` (made once; the main tree is not touched)."""
    sha = git("rev-parse", f"{commit}^{{commit}}")
    path = trees / sha[:12]
    if not (path / ".git").exists():
        trees.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", str(path), sha)
    return path


def command(tree: Path, kind: str, limit: int) -> list[str]:
    if kind == "replay":
        return [sys.executable, str(Path(__file__).resolve()), "--worker", str(limit)]
    # The old commit has no `python -m bench`: its `groundspec bench` is the same runner.
    has_cli = (tree / "bench" / "cli.py").exists()
    entry = ["-m", "bench"] if has_cli else ["-m", "lsp_server.cli", "bench"]
    flags = ["--kind", kind, "--split", "test", "--modes", MODES, "--limit", str(limit)]
    return [sys.executable, *entry, *flags, "--json"]


def run_side(tree: Path, kind: str, limit: int, log: Path) -> Any:
    """One benchmark run of one commit; its JSON (the last line of stdout)."""
    env = os.environ | {"PYTHONPATH": str(tree)}
    started = time.monotonic()
    with log.open("a") as err:
        err.write(f"\n== {tree.name} {kind}\n")
        err.flush()
        done = subprocess.run(
            command(tree, kind, limit), cwd=tree, env=env, stdout=subprocess.PIPE, stderr=err
        )
    if done.returncode != 0:
        raise SystemExit(f"{tree.name} {kind} failed ({done.returncode}); see {log}")
    print(f"{tree.name} {kind}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


@contextmanager
def model_lock() -> Iterator[float]:
    """Hold the shared model lock; yields how long the wait was."""
    started = time.monotonic()
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_average() -> float:
    return os.getloadavg()[0]


def measure(
    trees: dict[str, Path],
    kinds: list[str],
    rounds: int,
    limit: dict[str, int],
    log: Path,
    until: float,
    save: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Round by round, one benchmark per hold of the model lock; no hold starts
    after `until` (a wall-clock deadline), and the raw results are saved after each."""
    data: dict[str, Any] = {"results": {kind: [] for kind in kinds}, "loads": [], "waits": []}
    for r in range(rounds):
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for kind in kinds:
            if time.time() > until:
                print(f"past --until: round {r + 1} {kind} not run", file=sys.stderr)
                return data
            with model_lock() as waited:
                held = time.monotonic()
                entry: dict[str, Any] = {"round": r, "order": order}
                for side in order:
                    data["loads"].append(load_average())
                    entry[side] = run_side(trees[side], kind, limit[kind], log)
                data["waits"].append((waited, time.monotonic() - held))
            data["results"][kind].append(entry)
            save(data)
    return data


# -- what the runs say -----------------------------------------------------------------


def speed(run: dict[str, Any]) -> float:
    """Decode tokens/s (the stats are as Stats encodes them: camelCase)."""
    stats = run["stats"]
    ms = stats["decodeMs"]
    return stats["generatedTokens"] / ms * 1000 if ms > 0 else 0.0


def task_table(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (task, mode): new/old speed per round, old/old across rounds, and
    whether the texts were identical."""
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    old_speeds: dict[tuple[str, str], list[float]] = defaultdict(list)
    same = total = 0
    for entry in entries:
        old = {(x["task"], x["mode"]): x for x in entry["old"]["runs"]}
        for x in entry["new"]["runs"]:
            key = (x["task"], x["mode"])
            if key not in old:
                continue
            total += 1
            same += x["text"] == old[key]["text"]
            if speed(old[key]) > 0 and speed(x) > 0:
                ratios[key].append(speed(x) / speed(old[key]))
                old_speeds[key].append(speed(old[key]))
    out: dict[str, Any] = {"same": same, "total": total, "modes": {}, "rounds": rounds_of(entries)}
    for mode in MODES.split(","):
        per_task = {k[0]: statistics.median(v) for k, v in ratios.items() if k[1] == mode}
        every = [x for k, v in ratios.items() if k[1] == mode for x in v]
        noise = [
            s / v[0] for k, v in old_speeds.items() if k[1] == mode and len(v) > 1 for s in v[1:]
        ]
        if per_task:
            out["modes"][mode] = {
                "median": statistics.median(per_task.values()),
                "worst": min(per_task.values()),
                "worst_task": min(per_task, key=per_task.__getitem__),
                "best": max(per_task.values()),
                "spread": (min(every), max(every)),
                "noise": (min(noise), max(noise)) if noise else None,
                "tasks": len(per_task),
            }
    return out


def rounds_of(entries: list[dict[str, Any]]) -> list[str]:
    """Each round's median new/old speed over its tasks and modes, with its order."""
    out = []
    for entry in entries:
        old = {(x["task"], x["mode"]): speed(x) for x in entry["old"]["runs"]}
        ratios = [
            speed(x) / old[key]
            for x in entry["new"]["runs"]
            if old.get(key := (x["task"], x["mode"])) and speed(x) > 0
        ]
        if ratios:
            first = entry.get("order", ["old"])[0]
            out.append(f"{statistics.median(ratios):.2f} ({first} first)")
    return out


def replay_table(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """p50 / p95 per round and side, old/new latency, identical completions."""
    rows: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    same = total = 0
    first_line = {"old": 0, "new": 0}
    for entry in entries:
        for side in ("old", "new"):
            ms = sorted(float(x["ms"]) for x in entry[side])
            rows[side].append((percentile(ms, 50), percentile(ms, 95)))
            first_line[side] += sum(bool(x["original"]) for x in entry[side])
        old = {(x["region"], x["keystroke"]): x["text"] for x in entry["old"]}
        for x in entry["new"]:
            if (key := (x["region"], x["keystroke"])) in old:
                total += 1
                same += x["text"] == old[key]
    p50 = [o[0] / n[0] for o, n in zip(rows["old"], rows["new"], strict=True)]
    p95 = [o[1] / n[1] for o, n in zip(rows["old"], rows["new"], strict=True)]
    return {"rows": rows, "p50": p50, "p95": p95, "same": same, "total": total, **first_line}


def percentile(sorted_ms: list[float], q: float) -> float:
    """The nearest-rank percentile (the replay's own summaries use numpy's "nearest")."""
    return sorted_ms[min(len(sorted_ms) - 1, round(q / 100 * (len(sorted_ms) - 1)))]


def markdown(data: dict[str, Any], meta: dict[str, Any]) -> str:
    loads = data["loads"]
    lines = [
        "# Pipeline refactor: old commit against new, side by side",
        "",
        f"Old `{meta['old']}`, new `{meta['new']}`; regenerate with `{meta['command']}`.",
        f"{meta['rounds']} rounds, order alternating; each round runs one benchmark for both "
        "commits back to back under one hold of the model lock. Test split, modes "
        f"`{MODES}`; tasks per run (keystrokes per replay region): {meta['limit']}. "
        "No `--load`: the machine was shared "
        f"({os.cpu_count()} cores, 1-min load average {min(loads):.1f}-{max(loads):.1f} "
        "at the runs' starts), so the spread below is the busy machine's.",
        "",
        "Ratio: new/old decode speed (old/new latency for the replay); above 1 the new "
        "commit is faster. Noise: old against its own first round (same code, same task).",
        "",
        "| benchmark | mode | tasks | median | worst task | best | spread of all runs "
        "| old vs old (noise) | identical texts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rounds: list[str] = []
    for kind in ("refactor", "completion"):
        if not data["results"].get(kind):
            continue
        table = task_table(data["results"][kind])
        for mode, m in table["modes"].items():
            noise = "n/a" if m["noise"] is None else "{:.2f}-{:.2f}".format(*m["noise"])
            lines.append(
                f"| {kind} | {mode} | {m['tasks']} | {m['median']:.2f} | {m['worst']:.2f} "
                f"({m['worst_task']}) | {m['best']:.2f} | "
                f"{m['spread'][0]:.2f}-{m['spread'][1]:.2f} | {noise} | "
                f"{table['same']}/{table['total']} (both modes) |"
            )
        rounds.append(f"{kind}: " + ", ".join(table["rounds"]))
    notes = ["", "Median new/old per round: " + "; ".join(rounds) + "."] if rounds else []
    if data["results"].get("replay"):
        t = replay_table(data["results"]["replay"])
        for q in ("p50", "p95"):
            ratios = t[q]
            lines.append(
                f"| replay, {q} latency | auto | {len(ratios)} rounds | "
                f"{statistics.median(ratios):.2f} | {min(ratios):.2f} (a round) | "
                f"{max(ratios):.2f} | {min(ratios):.2f}-{max(ratios):.2f} | n/a | "
                f"{t['same']}/{t['total']} keystrokes |"
            )
        notes += [
            "",
            "Replay per round, p50 / p95 ms per keystroke, old then new: "
            + "; ".join(
                f"{o[0]:.0f}/{o[1]:.0f} vs {n[0]:.0f}/{n[1]:.0f}"
                for o, n in zip(t["rows"]["old"], t["rows"]["new"], strict=True)
            )
            + f". First line matches the file: old {t['old']}, new {t['new']} keystrokes.",
        ]
    lines += notes
    waits = data.get("waits", [])
    if waits:
        lines += [
            "",
            f"{len(waits)} holds of the model lock, {min(w[1] for w in waits) / 60:.1f}-"
            f"{max(w[1] for w in waits) / 60:.1f} min each; waits for it "
            f"{min(w[0] for w in waits) / 60:.1f}-{max(w[0] for w in waits) / 60:.1f} min.",
        ]
    return "\n".join(lines) + "\n"


def limits(text: str) -> dict[str, int]:
    """--limit: one N for every kind, or kind=N pairs (the rest get 3)."""
    if "=" not in text:
        return dict.fromkeys(KINDS, int(text))
    out = dict.fromkeys(KINDS, 3)
    for pair in text.split(","):
        kind, _, n = pair.partition("=")
        if kind not in KINDS:
            raise argparse.ArgumentTypeError(f"--limit: unknown kind {kind!r}")
        out[kind] = int(n)
    return out


def deadline(until: str | None) -> float:
    if until is None:
        return float("inf")
    hours, minutes = (int(x) for x in until.split(":"))
    now = time.gmtime()
    midnight = time.time() - (now.tm_hour * 3600 + now.tm_min * 60 + now.tm_sec)
    return midnight + hours * 3600 + minutes * 60


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="c1c41fd", help="the commit before (default c1c41fd)")
    parser.add_argument("--new", default="HEAD", help="the commit to compare (default HEAD)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="of refactor,completion,replay")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--limit",
        type=limits,
        default=limits("3"),
        help="tasks (keystrokes per region) per run: N, or per kind: refactor=1,completion=2",
    )
    parser.add_argument("--trees", default="/tmp/groundspec-ab", help="where worktrees go")
    parser.add_argument(
        "--until", metavar="HH:MM", help="start no benchmark after this time (UTC) today"
    )
    parser.add_argument("--output", help="write the markdown here too")
    parser.add_argument("--raw", help="write (or, with --report-only, read) the raw JSON")
    parser.add_argument("--report-only", action="store_true", help="report from --raw")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        replay_worker(args.worker)
        return 0
    kinds = [k for k in args.kinds.split(",") if k]
    if args.report_only:
        saved = json.loads(Path(args.raw).read_text())
        data, meta = saved["data"], saved["meta"]
    else:
        trees = {side: worktree(getattr(args, side), Path(args.trees)) for side in ("old", "new")}
        shown = ",".join(f"{k}={args.limit[k]}" for k in kinds)
        old, new = (git("rev-parse", "--short", getattr(args, side)) for side in ("old", "new"))
        meta = {
            "old": old,
            "new": new,
            "rounds": args.rounds,
            "limit": shown,
            "command": f"python -m bench.ab --old {old} --new {new} --rounds "
            f"{args.rounds} --limit {shown} --kinds {','.join(kinds)}",
        }
        log = Path(args.trees) / "ab.log"

        def save(data: dict[str, Any]) -> None:
            if args.raw:
                Path(args.raw).write_text(json.dumps({"data": data, "meta": meta}))

        data = measure(trees, kinds, args.rounds, args.limit, log, deadline(args.until), save)
    text = markdown(data, meta)
    if args.output:
        Path(args.output).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)  # the worker imports `bench` from the tree under test, not from here
    sys.exit(main())
