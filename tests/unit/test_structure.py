"""The product's shape: no import cycles, no lab in the product, short modules.

Read from the source with `ast` (nothing is imported), so the checks hold
without the models or llama_cpp. Imports inside functions count (they are
real dependencies, only later); imports under `if TYPE_CHECKING:` count too:
a cycle of type names still ties two modules together.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import setuptools

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("speculator", "lsp_server")
MAX_LINES = 500

# Modules still over MAX_LINES, each owned by someone bringing it under (issue 60
# and its siblings). This list only shrinks: remove a name once its module fits.
OVER_LIMIT_FOR_NOW: set[str] = set()

# Product modules that still import the bench; this list only shrinks.
IMPORTS_BENCH_FOR_NOW: set[str] = set()


def product_modules() -> dict[str, Path]:
    modules = {}
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(name: str, path: Path) -> set[str]:
    """Every module `path` imports, absolute names, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = product_modules()
    return {
        name: {m for m in imported_names(name, path) if m in modules and m != name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_find_cycle_sees_a_cycle_and_a_clean_graph() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_in_the_product() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_product_never_imports_the_bench() -> None:
    offenders = sorted(
        name
        for name, path in product_modules().items()
        if any(m == "bench" or m.startswith("bench.") for m in imported_names(name, path))
    )
    assert set(offenders) - IMPORTS_BENCH_FOR_NOW == set()
    assert IMPORTS_BENCH_FOR_NOW - set(offenders) == set(), "remove it from the list"


def test_the_wheel_packages_leave_the_bench_out() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = setuptools.find_packages(str(ROOT), include=include)
    assert "speculator" in packages and "lsp_server" in packages
    assert not [p for p in packages if p == "bench" or p.startswith("bench.")]


def test_no_module_over_the_line_limit() -> None:
    over = {
        str(path.relative_to(ROOT))
        for path in product_modules().values()
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES
    }
    assert over - OVER_LIMIT_FOR_NOW == set(), f"over {MAX_LINES} lines"
    assert OVER_LIMIT_FOR_NOW - over == set(), "fits now: remove it from OVER_LIMIT_FOR_NOW"
