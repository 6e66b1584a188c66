"""The layout the project keeps to, read from the source with ``ast``.

Small modules and functions, no import circle, few modules at the top of the
package, and only ``store/`` knowing a backend. Work under way that does not
hold yet is an ``xfail(strict=True)`` case: it turns red the moment the
condition holds, so that its marker is removed then.
"""

from __future__ import annotations

import ast
import functools
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memlineage"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100
MAX_TOP_MODULES = 10
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool")
BACKENDS = tuple(
    f"memlineage.store.{name}" for name in ("sqlite", "postgres", "postgres_async", "base", "core")
)


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@functools.cache
def tree(name: str) -> ast.Module:
    return ast.parse(modules()[name].read_text(encoding="utf-8"))


def relative(name: str) -> str:
    return modules()[name].relative_to(PACKAGE).as_posix()


def origin(package: str, node: ast.ImportFrom) -> str:
    """The module ``from ... import`` reads from, a relative one resolved from ``package``."""
    if not node.level:
        return str(node.module)
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported(name: str) -> set[str]:
    """What a module imports anywhere in it (TYPE_CHECKING blocks and functions too):
    ``from a import b`` is module ``a.b`` where that is a module, else ``a``."""
    package = name if modules()[name].name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            source = origin(package, node)
            named = {f"{source}.{alias.name}" for alias in node.names}
            names |= named & modules().keys()
            if named - modules().keys():
                names.add(source)
    return names


def long_modules() -> set[str]:
    return {
        relative(name)
        for name, path in modules().items()
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_MODULE_LINES
    }


def long_functions() -> list[str]:
    return [
        f"{relative(name)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name in modules()
        for node in ast.walk(tree(name))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def backend_imports() -> dict[str, set[str]]:
    """Modules outside ``store/`` by the drivers and backend modules they import."""
    found = {}
    for name in modules():
        if name == "memlineage.store" or name.startswith("memlineage.store."):
            continue
        known = {
            dotted
            for dotted in imported(name)
            if dotted.split(".")[0] in DRIVERS or dotted.startswith(BACKENDS)
        }
        if known:
            found[name] = known
    return found


def test_no_module_is_over_800_lines() -> None:
    assert long_modules() == set()


def test_no_function_is_over_100_lines() -> None:
    assert long_functions() == []


def test_no_import_circle() -> None:
    graph = {name: imported(name) & modules().keys() - {name} for name in modules()}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as circle:
        pytest.fail(f"import circle: {' -> '.join(circle.args[1])}")


def test_at_most_ten_modules_at_the_top() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= MAX_TOP_MODULES


def test_only_the_store_knows_a_backend() -> None:
    assert backend_imports() == {}
