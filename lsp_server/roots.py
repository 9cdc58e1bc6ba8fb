"""Which workspace roots the index may scan: the client names one in `initialize`,
but the server decides.

An index reads every file under its root into prompts, so a root of `/`, the home
folder itself or a system folder is never indexed, whoever asks. A client the
server did not start with (LSP over TCP) is further confined to the folder the
server was started in and the roots its config file lists (`workspaceRoots`,
read from the file only: a client cannot widen it).
"""

from __future__ import annotations

from pathlib import Path

# Folders that hold the system, never a project (nor does anything under them).
SYSTEM_FOLDERS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/System",
    "/Library",
    "/private/etc",
)
# Folders that hold many projects or users' things: never a root themselves, though a
# project may live under them (/var/www/site, /tmp/scratch, macOS's /private/var/folders).
SHARED_FOLDERS = (
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/private",
    "/private/tmp",
    "/private/var",
    "/srv",
    "/tmp",
    "/Users",
    "/var",
    "/var/lib",
    "/var/log",
)


class RootPolicy:
    """The roots allowed: `confined` to `allowed` (and below), or anywhere but the
    system's own folders."""

    def __init__(self, allowed: list[str] | None = None, *, confined: bool = False) -> None:
        self.confined = confined
        self.allowed = [_real(p) for p in allowed or []]

    def problem(self, root: str, home: str | None = None) -> str | None:
        """Why `root` may not be indexed, in a sentence for the user; None if it may."""
        path = _real(root)
        home_path = _real(home or str(Path.home()))
        if path == Path(path.anchor):
            return f"the workspace root {root} is the whole file system"
        if path == home_path:
            return f"the workspace root {root} is the home folder itself, not a project"
        for system in SYSTEM_FOLDERS:
            if _is_within(path, Path(system)):
                return f"the workspace root {root} is a system folder ({system})"
        if str(path) in SHARED_FOLDERS:
            return f"the workspace root {root} holds other users' or programs' files"
        if self.confined and not any(_is_within(path, base) for base in self.allowed):
            where = ", ".join(str(p) for p in self.allowed) or "none"
            return (
                f"the workspace root {root} is outside the folders this server may index "
                f"({where}: the folder it was started in and the config file's "
                "workspaceRoots)"
            )
        return None


def _real(path: str) -> Path:
    return Path(path).expanduser().resolve()


def _is_within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents
