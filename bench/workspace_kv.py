"""The KV cache in a real workspace (issue 63): file switches, a clean restart
and a restart after `kill -9`, through the LSP server as an editor starts it.

    python -m bench.workspace_kv [--files 24] [--visit 3] [--rounds 4] [--load]
                                 [--output FILE]

A temporary folder holds `--files` standard-library modules; `groundspec
serve` runs in it on stdio with the default options (workspace index on) and
an empty KV slot folder. `--visit` of them are opened; each round visits them
in turn, and each visit is an edit: a new line typed inside a function, one
character per didChange, `x = ` then an inline completion. The prompt tokens
each completion evaluated come from the server's `request done` log lines.
Then the single-file typing replay the switching latency is compared with:
the same completions (same files, edits and positions) with no switch, each
file set back to its text after the first round, warmed, and its later visits
made in a row, so both make the same prompts and answers; then 3 s
idle, `shutdown` and `exit`, a new server, the last file reopened unchanged
and completed at the same place (a clean restart); then a few more edits,
`kill -9`, a new server and the same (a crash). `--load` keeps one more core
busy for the whole run (bench/load.py). Latencies are given whole and less the
request's generation (its `decodeMs`): how many tokens the model writes differs
from visit to visit, while the part before it is what the KV cache decides.
Each visit also reports what the server logged for entering a document's KV:
saving the live one and restoring the visited one, apart.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from speculator.totals import percentile

from .cold import Server, inline, keystroke, position, warm_events
from .load import CpuLoad

KEY_GAP_S = 0.05  # between two typed characters
TYPED = "x = "
QUICK_MAX_PROMPT = 300  # a prompt this short is the quick window's (192 tokens by default)
CACHE_ENTRIES = 16  # the cacheEntries option's default
# speculator/kv_slots.py's line for entering a document's KV.
ENTERED = re.compile(
    r"entered the completion KV of .*: live KV saved in ([\d.]+) ms, restored in ([\d.]+) ms"
)


@dataclass
class Sample:
    label: str
    ms: float
    prompt: int
    evaluated: int
    text: str
    decode_ms: float = 0.0  # the model's generation: its length depends on what it writes
    file: str = ""
    save_ms: float = 0.0  # entering the file's KV during the visit: the live KV saved
    restore_ms: float = 0.0  # and the file's restored

    @property
    def before_decode_ms(self) -> float:
        """The request's latency less its generation: the part the KV cache decides."""
        return self.ms - self.decode_ms


@dataclass
class OpenFile:
    """An open document; `line` is where the next `x = ` line is typed."""

    path: Path
    text: str
    line_start: int  # offset of the line the new line is typed before
    indent: str
    version: int = 1
    cursor: int = 0

    @property
    def uri(self) -> str:
        return self.path.as_uri()


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)
        print(line, flush=True)


def make_workspace(root: Path, count: int) -> list[Path]:
    """`count` standard-library modules of 8-60 KB, copied into `root`."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    picked = [
        p
        for p in sorted(stdlib.glob("*.py"))
        if not p.name.startswith("_") and 8_000 <= p.stat().st_size <= 60_000
    ][:count]
    root.mkdir(parents=True, exist_ok=True)
    for path in picked:
        shutil.copy(path, root / path.name)
    return [root / p.name for p in picked]


def edit_point(text: str) -> tuple[int, str] | None:
    """(offset of a body line, its indentation) inside a function two thirds down."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for i in range(len(lines) * 2 // 3, len(lines) - 2):
        match = re.match(r"( *)def \w+\(.*\):\s*$", lines[i])
        if match is None:
            continue
        body = lines[i + 1]
        indent = body[: len(body) - len(body.lstrip())]
        if len(indent) > len(match.group(1)) and not body.lstrip().startswith(('"', "'")):
            return offsets[i + 1], indent
    return None


def open_file(server: Server, path: Path) -> OpenFile:
    text = path.read_text()
    found = edit_point(text)
    if found is None:
        raise ValueError(f"no function body to edit in {path.name}")
    doc = OpenFile(path, text, found[0], found[1])
    item = {"uri": doc.uri, "languageId": "python", "version": 1, "text": text}
    server.notify("textDocument/didOpen", {"textDocument": item})
    return doc


def insert(server: Server, doc: OpenFile, at: int, chars: str) -> None:
    """Type `chars` at `at`, one didChange per character."""
    for i, char in enumerate(chars):
        where = position(doc.text, at + i)
        doc.version += 1
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": doc.uri, "version": doc.version},
                "contentChanges": [{"range": {"start": where, "end": where}, "text": char}],
            },
        )
        doc.text = doc.text[: at + i] + char + doc.text[at + i :]
        time.sleep(KEY_GAP_S)
    doc.cursor = at + len(chars)


def visit(server: Server, doc: OpenFile, label: str) -> Sample:
    """Enter at the end of the line above the edit line, `x = `, a completion; the
    next visit types below this one."""
    started = time.perf_counter()
    insert(server, doc, doc.line_start - 1, "\n" + doc.indent + TYPED)
    doc.line_start = doc.cursor + 1
    sample = complete(server, doc, label)
    entered = [e for e in getattr(server, "entered", []) if e[0] >= started]
    sample.save_ms = sum(e[1] for e in entered)
    sample.restore_ms = sum(e[2] for e in entered)
    return sample


def set_back(server: Server, doc: OpenFile, to: OpenFile) -> None:
    """Delete the lines typed since `to` (one ranged change, so the server's
    cursor stays where they were typed): the document is `to`'s text again."""
    at = to.line_start - 1
    end = at + len(doc.text) - len(to.text)
    assert doc.text[:at] + doc.text[end:] == to.text
    doc.version += 1
    change = {
        "range": {"start": position(doc.text, at), "end": position(doc.text, end)},
        "text": "",
    }
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": doc.uri, "version": doc.version}, "contentChanges": [change]},
    )
    doc.text, doc.line_start, doc.cursor = to.text, to.line_start, to.cursor
    # The typed-ahead cache would answer a replayed completion from the first
    # time it was made: a new cacheEntries value empties it (then the default again).
    for entries in (CACHE_ENTRIES + 1, CACHE_ENTRIES):
        settings = {"groundspec": {"cacheEntries": entries}}
        server.notify("workspace/didChangeConfiguration", {"settings": settings})


def complete(server: Server, doc: OpenFile, label: str) -> Sample:
    ms, text, stats = inline(server, doc.uri, doc.text, doc.cursor)
    key = keystroke(ms, text, stats)
    evaluated = key.evaluated if stats else -1
    return Sample(label, ms, key.prompt_tokens, evaluated, text, key.decode_ms, doc.path.name)


class LoggedServer(Server):
    """The server, its log lines also appended to LOG_FILE (when set)."""

    log_file: Path | None = None

    def __init__(self, env: dict[str, str]) -> None:
        self.entered: list[tuple[float, float, float]] = []  # (when, save ms, restore ms)
        super().__init__(env)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            text = line.decode(errors="replace")
            self.log.put(text)
            if (match := ENTERED.search(text)) is not None:
                self.entered.append((time.perf_counter(), float(match[1]), float(match[2])))
            if self.log_file is not None:
                with self.log_file.open("a") as f:
                    f.write(text)


def start_server(root: Path, kv_dir: Path) -> Server:
    env = dict(os.environ, GROUNDSPEC_KV_DIR=str(kv_dir), GROUNDSPEC_LOG_LEVEL="INFO")
    server = LoggedServer(env)
    server.call(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": {"window": {"workDoneProgress": True}},
        },
    )
    server.notify("initialized", {})
    deadline = time.monotonic() + 300
    while server.call("groundspec/stats", {})["server"]["engineState"] != "ready":
        if time.monotonic() > deadline:
            raise RuntimeError("the models did not load")
        time.sleep(0.2)
    return server


def settle(server: Server, since: float, timeout_s: float = 180.0) -> float:
    """Wait for the warm-up of the full prompt to end (the user reads the new
    file); seconds since `since`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # A warm-up that began after `since`: the end of one running before it
        # (cancelled by the change, but it may still say "Cache warm") is not it.
        events = [(kind, m) for _, kind, m in warm_events(server, since)]
        began = next((i for i, (kind, _) in enumerate(events) if kind == "begin"), None)
        if began is not None and ("end", "Cache warm") in events[began:]:
            break
        time.sleep(0.2)
    return time.perf_counter() - since


def stop_server(server: Server) -> None:
    server.call("shutdown", None, timeout=60)
    server.notify("exit", None)
    server.proc.wait(60)


def log_lines(server: Server, pattern: str) -> list[str]:
    """Lines of the server's log (read so far) matching `pattern`."""
    found: list[str] = []
    while not server.log.empty():
        line = server.log.get_nowait()
        if re.search(pattern, line):
            found.append(line.strip())
    return found


def reopen(server: Server, doc: OpenFile) -> OpenFile:
    """The document as it was left, opened in a new server."""
    again = OpenFile(doc.path, doc.text, doc.line_start, doc.indent, 1, doc.cursor)
    item = {"uri": again.uri, "languageId": "python", "version": 1, "text": again.text}
    server.notify("textDocument/didOpen", {"textDocument": item})
    return again


def describe(s: Sample) -> str:
    quick = " (quick window)" if 0 < s.prompt <= QUICK_MAX_PROMPT else ""
    return (
        f"{s.label}: {s.ms:.0f} ms ({s.before_decode_ms:.0f} before decoding), "
        f"evaluated {s.evaluated} of {s.prompt}{quick}"
    )


def run(args: argparse.Namespace, report: Report) -> None:
    root = Path(tempfile.mkdtemp(prefix="groundspec-ws-kv-"))
    kv_dir = root.parent / (root.name + "-slots")
    files = make_workspace(root / "src", args.files)
    chosen = [p for p in files if edit_point(p.read_text()) is not None][: args.visit]
    report.add(
        f"workspace: {len(files)} files; visited: {', '.join(p.name for p in chosen)}; "
        f"load average {os.getloadavg()[0]:.1f}; one core busy: {args.load}"
    )
    server = start_server(root / "src", kv_dir)
    try:
        docs = [open_file(server, p) for p in chosen]
        rounds: list[list[Sample]] = []
        after_round_1: list[OpenFile] = []
        for r in range(args.rounds):
            row = []
            for doc in docs:
                since = time.perf_counter()
                row.append(visit(server, doc, f"round {r + 1} {doc.path.name}"))
                if r == 0 and args.settle:
                    report.add(f"{doc.path.name}: warmed in {settle(server, since):.1f} s")
                time.sleep(args.think)  # reads it, moves to another file
            rounds.append(row)
            after_round_1 = after_round_1 or [replace(doc) for doc in docs]
            report.add("; ".join(describe(s) for s in row))
        single = single_file_replay(server, docs, after_round_1, args, report)
        after_first = [s for row in rounds[1:] for s in row]
        summarize(report, after_first, single)
        time.sleep(3.0)
        last = docs[-1]
        stop_server(server)
        server = start_server(root / "src", kv_dir)
        doc = reopen(server, last)
        first = complete(server, doc, "clean restart, first completion")
        report.add(describe(first) + f"; {first.text.splitlines()[0] if first.text else ''!r}")
        report.add(f"slot warnings: {log_lines(server, 'ignoring KV slot|did not restore')}")
        for _ in range(2):
            report.add(describe(visit(server, doc, "edit after the restart")))
        time.sleep(args.crash_after)
        server.proc.kill()
        server.proc.wait(30)
        server = start_server(root / "src", kv_dir)
        doc = reopen(server, doc)
        crash = complete(server, doc, "after kill -9, first completion")
        report.add(describe(crash) + f"; {crash.text.splitlines()[0] if crash.text else ''!r}")
        report.add(f"slot warnings: {log_lines(server, 'ignoring KV slot|did not restore')}")
        stop_server(server)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(kv_dir, ignore_errors=True)


def single_file_replay(
    server: Server,
    docs: list[OpenFile],
    after_round_1: list[OpenFile],
    args: argparse.Namespace,
    report: Report,
) -> list[Sample]:
    """The switching rounds' later visits again, one file at a time: the file set
    back to its text after round 1 and warmed, then its visits in a row."""
    samples = []
    for doc, first in zip(docs, after_round_1, strict=True):
        since = time.perf_counter()
        set_back(server, doc, first)
        warmed = settle(server, since, timeout_s=90.0)
        report.add(f"{doc.path.name}: set back to its text after round 1, warmed in {warmed:.1f} s")
        for r in range(1, args.rounds):
            samples.append(visit(server, doc, f"single {r + 1} {doc.path.name}"))
            time.sleep(args.think)
        report.add("; ".join(describe(s) for s in samples[-(args.rounds - 1) :]))
    return samples


def spread(values: list[float]) -> str:
    """p50 / p95 / worst, in ms."""
    return f"{percentile(values, 50):.0f} / {percentile(values, 95):.0f} / {max(values):.0f}"


def compare(report: Report, name: str, switching: list[Sample], single: list[Sample]) -> None:
    """One line: p50 / p95 / worst, whole and less the generation, both ways."""
    whole = [s.ms for s in switching], [s.ms for s in single]
    pre = [s.before_decode_ms for s in switching], [s.before_decode_ms for s in single]
    ratio = [percentile(a, 95) / max(1.0, percentile(b, 95)) for a, b in (whole, pre)]
    report.add(
        f"  {name} ({len(switching)} vs {len(single)}): whole {spread(whole[0])} vs "
        f"{spread(whole[1])} ms (p95 {ratio[0]:.2f}x); less the generation "
        f"{spread(pre[0])} vs {spread(pre[1])} ms (p95 {ratio[1]:.2f}x)"
    )


def summarize(report: Report, switching: list[Sample], single: list[Sample]) -> None:
    quick = sum(0 < s.prompt <= QUICK_MAX_PROMPT for s in switching + single)
    evaluated = [s.evaluated for s in switching]
    same = sum(a.text == b.text for a, b in zip(switching, _paired(switching, single), strict=True))
    report.add(
        f"after each file's first visit: {len(switching)} completions switching, "
        f"{len(single)} in the single-file replay ({quick} from the quick window); evaluated "
        f"median {statistics.median(evaluated)}, max {max(evaluated)} switching, median "
        f"{statistics.median(s.evaluated for s in single)} single; {same} of {len(switching)} "
        f"answers identical; generation median {statistics.median(s.decode_ms for s in switching):.0f}"
        f" vs {statistics.median(s.decode_ms for s in single):.0f} ms"
    )
    report.add("latency p50 / p95 / worst, switching vs the single-file replay:")
    for name in sorted({s.file for s in switching}):
        compare(
            report,
            name,
            [s for s in switching if s.file == name],
            [s for s in single if s.file == name],
        )
    compare(report, "all", switching, single)
    saves, restores = [s.save_ms for s in switching], [s.restore_ms for s in switching]
    report.add(
        f"entering the visited file's KV (switching): live KV saved in {spread(saves)} ms, "
        f"the file's restored in {spread(restores)} ms (p50 / p95 / worst)"
    )


def _paired(switching: list[Sample], single: list[Sample]) -> list[Sample]:
    """The single-file sample that made the same completion as each switching one."""
    by_file = {name: [s for s in single if s.file == name] for name in {s.file for s in single}}
    seen: dict[str, int] = {}
    paired = []
    for s in switching:
        i = seen[s.file] = seen.get(s.file, -1) + 1
        paired.append(by_file[s.file][i])
    return paired


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=24, help="modules in the workspace")
    parser.add_argument("--visit", type=int, default=3, help="files visited in turn")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--think", type=float, default=2.0, help="seconds between visits")
    parser.add_argument(
        "--no-settle",
        dest="settle",
        action="store_false",
        help="move on after a first visit without waiting for its full prompt to warm",
    )
    parser.add_argument("--crash-after", type=float, default=2.0, help="seconds before kill -9")
    parser.add_argument("--load", action="store_true", help="keep one more core busy")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--log", type=Path, help="append the servers' log lines here")
    args = parser.parse_args(argv)
    LoggedServer.log_file = args.log
    report = Report()
    with CpuLoad(args.load):
        run(args, report)
    if args.output:
        args.output.write_text("\n".join(report.lines) + "\n")


if __name__ == "__main__":
    main()
