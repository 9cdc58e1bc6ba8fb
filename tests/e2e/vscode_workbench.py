"""code-server driven by Chromium, for the VS Code extension's tests (test_vscode*.py).

code-server runs VS Code's workbench and extension host behind a web page; `code_server()`
installs the built .vsix into dirs of its own, writes the settings, opens a project and
yields a `Workbench`: the few gestures the tests need, through Selenium.

`.ci/code-server.sh` installs code-server, Chromium and chromedriver, `clients/ci.sh`
builds the .vsix. Screenshots go to $GROUNDSPEC_ARTIFACTS (default /tmp/groundspec-artifacts).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "clients" / "vscode"
SOURCE = "import math\n\n\ndef area(radius):\n    return math.pi * radius ** 2\n\n\nresult = \n"


def ci_cache() -> Path:
    if os.environ.get("GROUNDSPEC_CI_CACHE"):
        return Path(os.environ["GROUNDSPEC_CI_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groundspec-ci"


def find_code_server() -> str | None:
    """$GROUNDSPEC_CODE_SERVER, the launcher .ci/code-server.sh writes, or PATH."""
    if os.environ.get("GROUNDSPEC_CODE_SERVER"):
        return os.environ["GROUNDSPEC_CODE_SERVER"]
    launcher = ci_cache() / "bin" / "code-server"
    return str(launcher) if launcher.exists() else shutil.which("code-server")


def find_vsix() -> Path:
    if os.environ.get("GROUNDSPEC_VSIX"):
        return Path(os.environ["GROUNDSPEC_VSIX"])
    version = json.loads((EXTENSION / "package.json").read_text())["version"]
    return EXTENSION / f"groundspec-{version}.vsix"


def find_groundspec() -> str | None:
    beside_python = Path(sys.executable).parent / "groundspec"
    return str(beside_python) if beside_python.exists() else shutil.which("groundspec")


CODE_SERVER = find_code_server()
GROUNDSPEC = find_groundspec()

# The marks of every code-server test module: `pytestmark = VSCODE_MARKS`.
VSCODE_MARKS = [
    pytest.mark.vscode,
    pytest.mark.skipif(
        CODE_SERVER is None, reason="code-server is not installed (bash .ci/code-server.sh)"
    ),
    pytest.mark.skipif(GROUNDSPEC is None, reason="groundspec is not installed (pip install -e .)"),
]


@pytest.fixture
def announce(capsys: pytest.CaptureFixture[str]) -> Callable[[str], None]:
    """Print to the terminal even when pytest captures output (paths of CI artifacts)."""

    def say(message: str) -> None:
        with capsys.disabled():
            print(f"\n{message}", flush=True)

    return say


def artifacts_dir() -> Path:
    path = Path(os.environ.get("GROUNDSPEC_ARTIFACTS", "/tmp/groundspec-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, check: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):
            if result := check():
                return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


@dataclass
class Workbench:
    """code-server's page in Chromium, with the few gestures the tests need."""

    driver: Any
    folder: Path
    log: Path
    server_log: Path
    announce: Callable[[str], None]

    def find(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def keys(self, *keys: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.driver).send_keys(*keys).perform()

    def chord(self, modifier: str, keys: str) -> None:
        """`keys` pressed while `modifier` is held down."""
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.driver).key_down(modifier).send_keys(keys).key_up(modifier).perform()

    def open_from_explorer(self, name: str) -> None:
        row = wait_for(
            f"{name} in the Explorer",
            lambda: [
                r for r in self.find(".explorer-folders-view .monaco-list-row") if name in r.text
            ],
            60,
        )
        row[0].click()
        wait_for(f"an editor tab for {name}", lambda: self.find(f'.tab[aria-label^="{name}"]'), 30)
        wait_for("the editor", lambda: self.find(".monaco-editor .view-lines"), 30)
        self.find(".monaco-editor .view-lines")[0].click()

    def ghost_text(self, timeout: float) -> str:
        return str(
            wait_for(
                "ghost text (.ghost-text-decoration)",
                lambda: "".join(e.text for e in self.find(".ghost-text-decoration")),
                timeout,
            )
        )

    def run_command(self, title: str) -> None:
        from selenium.webdriver.common.keys import Keys

        self.keys(Keys.F1)
        wait_for("the command palette", lambda: self.find(".quick-input-widget input"), 15)
        self.keys(title)
        time.sleep(0.5)
        self.keys(Keys.ENTER)

    def status_tooltip(self) -> str:
        items = self.find(".statusbar-item[id*='groundspec'] a, .statusbar-item[id*='groundspec']")
        return " ".join(e.get_attribute("aria-label") or "" for e in items)

    def go_to_line(self, line: int) -> None:
        from selenium.webdriver.common.keys import Keys

        self.chord(Keys.CONTROL, "g")
        wait_for("the go-to-line box", lambda: self.find(".quick-input-widget input"), 15)
        self.keys(str(line))
        time.sleep(0.3)
        self.keys(Keys.ENTER)
        wait_for(f"the cursor on line {line}", lambda: self.cursor_line() == line, 15)

    def cursor_line(self) -> int | None:
        """The line in the status bar's "Ln 4, Col 1"."""
        for item in self.find(".statusbar-item"):
            if item.text.startswith("Ln "):
                return int(item.text.split()[1].rstrip(","))
        return None

    def save(self) -> None:
        from selenium.webdriver.common.keys import Keys

        self.chord(Keys.CONTROL, "s")

    def screenshot(self, name: str) -> Path:
        path = artifacts_dir() / name
        self.driver.save_screenshot(str(path))
        self.announce(f"screenshot: {path}")
        return path

    def status_bar(self) -> str:
        """The groundspec status bar item's text (its codicons are not text)."""
        items = self.find(".statusbar-item")
        return " | ".join(e.text for e in items if "groundspec" in (e.get_attribute("id") or ""))

    def status_icon(self, codicon: str) -> bool:
        """Whether the groundspec status bar item shows `codicon` (e.g. "circle-slash")."""
        return bool(self.find(f".statusbar-item[id*='groundspec'] .codicon-{codicon}"))

    def wait_ready(self, timeout: float = 60) -> None:
        """The server answered groundspec/stats: the status bar shows its speed."""
        wait_for(
            "groundspec ready in the status bar", lambda: "tok/s" in self.status_bar(), timeout
        )

    def editor_text(self) -> str:
        """The visible lines of the editors (non-breaking spaces as spaces)."""
        return "\n".join(e.text for e in self.find(".view-lines")).replace("\u00a0", " ")

    def completions_for(self, name: str) -> int:
        """How many completions the fake engine computed for the file `name` (its log line)."""
        if not self.server_log.exists():
            return 0
        lines = self.server_log.read_text().splitlines()
        return sum("fake completion in KV slot" in line and name in line for line in lines)

    def next_edits_for(self, name: str) -> int:
        """How many next edits the server was asked for the file `name` (its log line)."""
        if not self.server_log.exists():
            return 0
        lines = self.server_log.read_text().splitlines()
        return sum("next edit asked for" in line and name in line for line in lines)

    def element_screenshot(self, css: str, path: Path) -> Path:
        """A screenshot of the first element matching `css` (e.g. the editor area)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.find(css)[0].screenshot(str(path))
        self.announce(f"screenshot: {path}")
        return path


def user_settings(server_path: str, server_args: list[str]) -> dict[str, Any]:
    """Settings for a quiet workbench; the server's machine-scoped ones are written to the
    Machine settings too (code-server is a remote window: those come from there)."""
    return {
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        # No chat panel to take the keyboard focus from the editor.
        "chat.disableAIFeatures": True,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "editor.suggestOnTriggerCharacters": False,
        "editor.wordBasedSuggestions": "off",
        "editor.inlineSuggest.enabled": True,
        "files.autoSave": "off",
        "groundspec.serverPath": server_path,
        "groundspec.serverArgs": server_args,
        "groundspec.debounceMs": 0,
    }


@contextlib.contextmanager
def code_server(
    tmp_path: Path,
    announce: Callable[[str], None],
    server_args: list[str],
    env_extra: dict[str, str],
    server_path: str | None = GROUNDSPEC,
    settings: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
) -> Iterator[Workbench]:
    """code-server with the .vsix installed, in dirs of its own, and Chromium on its page.

    `settings` are added to the user settings; `files` (relative path: text) to the
    project, which always has app.py (SOURCE)."""
    assert CODE_SERVER is not None and server_path is not None
    vsix = find_vsix()
    assert vsix.exists(), f"{vsix} is missing: build it with `bash clients/ci.sh`"
    announce(f"vsix: {vsix}")
    data, extensions, folder = tmp_path / "data", tmp_path / "extensions", tmp_path / "project"
    for path in (data / "User", data / "Machine", extensions, folder):
        path.mkdir(parents=True)
    server_log = tmp_path / "groundspec.log"
    user = user_settings(server_path, [*server_args, "--log-file", str(server_log)])
    (data / "User" / "settings.json").write_text(json.dumps({**user, **(settings or {})}))
    machine = {key: user[key] for key in ("groundspec.serverPath", "groundspec.serverArgs")}
    (data / "Machine" / "settings.json").write_text(json.dumps(machine))
    for name, text in {"app.py": SOURCE, **(files or {})}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    env = dict(os.environ)
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "share"),
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        # The fake engine logs each completion with its file (Workbench.completions_for).
        GROUNDSPEC_LOG_LEVEL="INFO",
        **env_extra,
    )
    common = ["--user-data-dir", str(data), "--extensions-dir", str(extensions)]
    subprocess.run(
        [CODE_SERVER, *common, "--install-extension", str(vsix)],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    port = free_port()
    log = tmp_path / "code-server.log"
    args = [
        CODE_SERVER,
        *common,
        "--bind-addr",
        f"127.0.0.1:{port}",
        "--auth",
        "none",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        str(folder),
    ]
    with open(log, "wb") as out:
        server = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    driver = None
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for("code-server /healthz", lambda: urllib.request.urlopen(url + "/healthz"), 60)
        driver = start_chromium()
        driver.get(f"{url}/?folder={folder}")
        yield Workbench(driver, folder, log, server_log, announce)
    except BaseException:
        print(f"code-server log ({log}):\n{log.read_text()[-4000:]}")
        if server_log.exists():
            print(f"groundspec log ({server_log}):\n{server_log.read_text()[-6000:]}")
        if driver is not None:
            with contextlib.suppress(Exception):
                bench = Workbench(driver, folder, log, server_log, announce)
                bench.screenshot("vscode-failure.png")
        raise
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def start_chromium() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,900",
    ):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)
