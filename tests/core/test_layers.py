"""The house's walls: the core does no I/O and knows no edge; the formats know no daemon.

Read from the sources (not from what happens to be imported at run time), so a new import
that breaks a wall fails here with the module and the line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "hdcontext"

IO_MODULES = frozenset(
    {
        "asyncio",
        "ctypes",
        "http",
        "io",
        "logging",
        "lsprotocol",
        "os",
        "pathlib",
        "platformdirs",
        "pygls",
        "select",
        "shutil",
        "signal",
        "socket",
        "sqlite3",
        "subprocess",
        "sys",
        "tempfile",
        "threading",
        "urllib",
        "watchfiles",
    }
)

# layer -> the layers of this package it may import
ALLOWED = {
    "core": {"core"},
    "formats": {"core", "formats"},
    "edges": {"core", "formats", "edges"},
    "cli": {"core", "formats", "edges", "cli"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module of the package."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    package = package.removesuffix(".__init__")
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "hdcontext" else None


MODULES = sorted(p for layer in ALLOWED for p in (PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_each_module_imports_only_what_its_layer_may(path: Path) -> None:
    layer = path.relative_to(PACKAGE).parts[0]
    for line, name in _imports(path):
        target = _layer(name)
        if target is not None:
            assert target in ALLOWED[layer], f"{path.name}:{line} imports {name} ({layer})"
        elif layer == "core":
            top = name.split(".")[0]
            assert top not in IO_MODULES, f"{path.name}:{line}: the core imports {name}"


def test_the_walls_are_checked_on_every_layer() -> None:
    layers = {p.relative_to(PACKAGE).parts[0] for p in MODULES}
    assert layers == set(ALLOWED)
    assert len([p for p in MODULES if p.relative_to(PACKAGE).parts[0] == "core"]) > 20
