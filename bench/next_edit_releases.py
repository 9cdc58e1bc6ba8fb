"""Next-edit tasks from other projects: their releases, mined as commits.

    python -m bench.next_edit_releases OUT.jsonl [--split dev|test] [--releases 25]
                                       [--max 10]

shared/nes/dev.jsonl comes from one project (pluggy) and the report's held-out
tasks from this repository, so neither says how the rules of
speculator/next_edit/ fare on code written elsewhere. This builds such tasks from
the package registry, the one place this machine reaches: the pure-Python wheels
of each package's last `--releases` releases up to a pinned version, unpacked
into a git history with one commit per release and changed .py file, then mined
by shared/nes/mine.py (`--max` edit tasks per package, and a third as many
no-op ones). A release's change to a file gathers the commits of a release
cycle, so a task's next edit is sometimes another commit's: the figures are a
lower bound beside commit-mined ones.

The packages are split in two: tune on `dev` (the packages whose proposals have
been read to make the rules), report `test` (never read). Wheels are cached
beside the models (provision.beside_models), so a second build downloads nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from speculator import provision

from .next_edit import DEV_TASKS

log = logging.getLogger(__name__)

MINER = DEV_TASKS.parent / "mine.py"
# Each package with its newest release used: the set stays the same as packages
# release more.
SPLITS = {
    "dev": {
        "alembic": "1.20.1", "anyio": "4.16.0", "apscheduler": "3.11.3", "arrow": "1.4.0",
        "astroid": "4.4.0", "attrs": "26.1.0", "azure-core": "1.41.0", "beautifulsoup4": "4.15.0",
        "blinker": "1.9.0", "bottle": "0.13.5", "build": "1.6.1", "cattrs": "26.2.1",
        "click": "8.5.1", "cmd2": "4.3.1", "djangorestframework": "3.18.3", "dnspython": "2.9.2",
        "docker": "7.2.0", "docutils": "0.23.1", "dramatiq": "2.2.1", "fabric": "3.2.3",
        "factory-boy": "3.3.3", "fastapi": "0.165.0", "filelock": "4.3.2", "flake8": "7.5.0",
        "flask": "3.1.3", "google-auth": "2.63.1", "gunicorn": "27.0.1", "h2": "4.4.1",
        "hatchling": "1.33.0", "httpcore": "1.0.9", "httpx": "0.29.0", "idna": "3.21",
        "invoke": "3.0.3", "ipykernel": "7.4.0", "ipython": "9.19.1", "isort": "9.0.2",
        "itsdangerous": "2.2.0", "jedi": "0.20.1", "jinja2": "3.1.6", "jupyter-client": "8.10.0",
        "loguru": "0.7.3", "mako": "1.4.3", "markdown-it-py": "4.3.0", "mkdocs": "1.6.1",
        "more-itertools": "11.2.1", "nbformat": "5.11.1", "nox": "2026.10.20", "oauthlib": "4.0.1",
        "openpyxl": "3.1.5", "packaging": "26.4", "paramiko": "5.1.0", "parso": "0.8.7",
        "pip": "26.3", "platformdirs": "4.14.9", "pre-commit": "4.7.0", "prompt-toolkit": "3.0.53",
        "pycodestyle": "2.15.0", "pydantic": "2.14.4", "pyflakes": "4.1.0", "pygments": "2.21.0",
        "pyjwt": "2.15.1", "pylint": "4.1.5", "pypdf": "7.1.1", "pyramid": "2.1",
        "pytest": "9.2.0", "pytest-mock": "3.17.0", "python-dateutil": "4.0.0",
        "questionary": "2.1.1", "redis": "8.2.0", "requests": "2.34.2", "rich": "15.0.0",
        "rq": "3.0.0", "rsa": "4.9.1", "scrapy": "2.19.0", "sentry-sdk": "3.0.0",
        "soupsieve": "2.10", "sphinx": "9.0.4", "tabulate": "0.10.0", "tomlkit": "0.15.3",
        "toolz": "1.2.0", "tox": "4.67.17", "tqdm": "4.70.1", "traitlets": "5.16.1",
        "trio": "0.35.0", "typeguard": "4.6.1", "typer": "0.29.2", "urllib3": "2.8.0",
        "uvicorn": "0.55.0", "virtualenv": "21.15.14", "w3lib": "2.5.0", "waitress": "3.0.2",
        "websocket-client": "1.9.2", "werkzeug": "3.1.9", "wheel": "0.48.0",
    },
    "test": {
        "asgiref": "3.13.0", "boltons": "26.2.0", "cachetools": "8.0.2", "celery": "5.7.0",
        "freezegun": "1.5.5", "fsspec": "2026.9.0", "gitpython": "3.2.1", "h11": "0.16.0",
        "humanize": "4.17.0", "jsonpointer": "3.12", "jsonschema": "4.26.0", "kombu": "5.7.0",
        "lark": "1.3.1", "markdown": "3.11.3", "marshmallow": "4.4.0", "mistune": "3.4.0",
        "networkx": "3.6.1", "pathspec": "1.1.1", "poetry-core": "2.5.0",
        "prettytable": "3.19.0", "pyparsing": "3.3.3", "pytest-xdist": "3.8.0",
        "python-dotenv": "1.2.4", "responses": "0.26.3", "setuptools-scm": "10.3.4",
        "sqlparse": "0.6.1", "starlette": "1.10.0", "structlog": "26.1.0", "tenacity": "9.2.1",
        "textual": "8.2.8", "wtforms": "3.3.2",
    },
}  # fmt: skip
PURE_PYTHON = ["--python-version", "3.11", "--implementation", "py", "--abi", "none"]
FINAL_RELEASE = re.compile(r"\d+(\.\d+)*")


class BuildError(Exception):
    """The registry could not be read, or nothing could be mined."""


def build(split: str, out: Path, releases: int = 25, per_package: int = 10) -> Path:
    """Write the split's tasks to `out` (JSON lines, as shared/nes/dev.jsonl)."""
    if not MINER.exists():
        raise BuildError(f"no task miner: {MINER} is not beside this checkout")
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for package, repo in histories(split, Path(scratch), releases):
            mined = Path(scratch) / f"{package}.jsonl"
            miner = [sys.executable, str(MINER), str(repo / ".git"), str(mined)]
            subprocess.run([*miner, "--max", str(per_package)], check=True, capture_output=True)
            lines += mined.read_text(encoding="utf-8").splitlines()
            log.info("%s: %d tasks so far", package, len(lines))
    if not lines:
        raise BuildError("no task could be mined")
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return out


def histories(split: str, scratch: Path, releases: int = 25) -> Iterator[tuple[str, Path]]:
    """Each package of the split, with its last `releases` releases as a git work
    tree under `scratch` (built as it is asked for)."""
    cache = provision.beside_models("bench-wheels")
    for package, newest in SPLITS[split].items():
        wheels = _wheels(package, newest, releases, cache / package)
        repo = scratch / package
        _history(wheels, repo)
        log.info("%s: %d releases", package, len(wheels))
        yield package, repo


def _wheels(package: str, newest: str, count: int, folder: Path) -> list[Path]:
    """The package's last `count` pure-Python wheels up to `newest`, oldest first."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = _versions(package, newest)[-count:]
    for version in wanted:
        if not _cached(folder, version):
            _download(package, version, folder)
    return [w for v in wanted if (w := _cached(folder, v)) is not None]


def _versions(package: str, newest: str) -> list[str]:
    """The package's final releases up to `newest`, oldest first."""
    listed = _pip("index", "versions", package, *PURE_PYTHON, "--platform", "any")
    found = re.search(r"Available versions: (.*)", listed)
    if found is None:
        raise BuildError(f"the registry lists no versions of {package}")
    finals = [v for v in found.group(1).replace(" ", "").split(",") if FINAL_RELEASE.fullmatch(v)]
    return sorted((v for v in finals if _order(v) <= _order(newest)), key=_order)


def _order(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _download(package: str, version: str, folder: Path) -> None:
    try:
        _pip("download", "--no-deps", "--only-binary", ":all:", *PURE_PYTHON, "--platform",
             "any", "-d", str(folder), f"{package}=={version}")  # fmt: skip
    except BuildError as exc:
        log.info("%s %s: no pure-Python wheel (%s)", package, version, exc)


def _cached(folder: Path, version: str) -> Path | None:
    return next(iter(sorted(folder.glob(f"*-{version}-*.whl"))), None)


def _pip(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise BuildError(f"pip {args[0]}: {said[-1]}")  # its last line names the error
    return done.stdout


def _history(wheels: list[Path], repo: Path) -> None:
    """A git history of the wheels' .py files: a commit per release and changed file."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            files = {
                name: archive.read(name)
                for name in archive.namelist()
                if name.endswith(".py") and ".dist-info/" not in name
            }
        for name, data in sorted(files.items()):
            path = repo / name
            if path.is_file() and path.read_bytes() == data:
                continue  # unchanged (or back as it was in a release before)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            _git(repo, "add", name)
            _git(repo, "commit", "-q", "-m", f"{wheel.name}: {name}")


# One identity and date for every commit, so that a build's commit hashes, and so
# the task ids and the direction the miner draws for each task (it seeds its choice
# of which change comes first with the commit's hash), are the same at every build.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


def _git(repo: Path, *args: str) -> None:
    env = os.environ | _GIT_ENV
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--releases", type=int, default=25, help="releases per package")
    parser.add_argument("--max", type=int, default=10, help="edit tasks per package")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        build(args.split, args.output, args.releases, args.max)
    except BuildError as exc:
        print(f"next_edit_releases: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
