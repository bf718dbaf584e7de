"""The house's walls: the core does no I/O and knows no edge; the formats know no daemon;
each room of the edges imports only the rooms below it; no import circle anywhere; and no class
too long for one job.

Read from the sources (not from what happens to be imported at run time), every import
statement, those inside functions too, so a new import that breaks a wall or closes a circle
fails here with the modules and the lines.
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

# layer -> the layers of this package it may import. litellm is the callback LiteLLM's proxy
# loads: it stands on the edges (the proxy's Api modules and compactor, the daemon, stats) as
# `hdcontext proxy` does, and nothing of the package imports it (LiteLLM is an extra).
ALLOWED = {
    "core": {"core"},
    "formats": {"core", "formats"},
    "edges": {"core", "formats", "edges"},
    "cli": {"core", "formats", "edges", "cli"},
    "litellm": {"core", "formats", "edges", "litellm"},
}
LITELLM_ROOMS = {"proxy", "daemon", "stats", "storage"}
"""The rooms of edges/ the LiteLLM callback stands on (not the LSP server)."""
LITELLM_IMPORTER = "hdcontext.litellm.handler"
"""The one module that imports LiteLLM itself."""


# room of edges/ -> the rooms of edges/ it may import: each only the rooms below it. The LSP
# daemon serves the proxy beside it when the editor asks (``initializationOptions.proxy``), so
# lsp sits above proxy; both serve the daemon's sessions; the daemon keeps them in storage.
# stats reads what storage keeps of the calls (the proxy's page, the editor's view show it).
ROOMS = {
    "lsp": {"lsp", "proxy", "daemon", "stats", "storage"},
    "proxy": {"proxy", "daemon", "stats", "storage"},
    "daemon": {"daemon", "stats", "storage"},
    "stats": {"stats", "storage"},
    "storage": {"storage"},
}


# The core's rooms, lowest first: each imports only itself and the rooms before it. At the
# foot, the modules at the top of core/ that the rest stands on (content, tokens, validity,
# prices, settings); the session, at the head, ties them together.
CORE_ROOMS = ("", "tools", "history", "density", "cache", "compression", "stats", "session")
CORE_TOP_MOST = 10
"""At most this many modules lie at the top of core/ (the rest are in rooms)."""


def _name(path: Path) -> str:
    """The module's absolute name (a package's is its folder's)."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
        ".__init__"
    )


NAMES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module of the package; for ``from P
    import m``, ``P.m`` when that is a module of the package."""
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
            found.extend(
                (node.lineno, f"{name}.{alias.name}" if f"{name}.{alias.name}" in NAMES else name)
                for alias in node.names
            )
    return found


def _in_package(name: str) -> str | None:
    """The module of the package an import runs: the longest prefix of ``name`` that is one
    (``import a.b.c`` or ``from a.b import function``)."""
    while name and name not in NAMES:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, dict[str, int]]:
    """module -> {module of the package it imports: the line of the first such import}."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in sorted(NAMES.items()):
        targets = graph.setdefault(module, {})
        for line, name in sorted(_imports(path)):
            target = _in_package(name)
            if target is not None and target != module:
                targets.setdefault(target, line)
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[list[tuple[str, int, str]]]:
    """One circle, as (module, line, module it imports there) steps, for each import that
    leads back to a module whose imports are still being followed (depth first, in order)."""
    state: dict[str, str] = {}  # "open" while its imports are followed, then "done"
    path: list[str] = []
    found: list[list[tuple[str, int, str]]] = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for target in graph.get(module, {}):
            if state.get(target) == "open":
                ring = path[path.index(target) :]
                found.append(
                    [(m, graph[m][n], n) for m, n in zip(ring, [*ring[1:], target], strict=True)]
                )
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def _shown(module: str) -> str:
    return str(NAMES[module].relative_to(PACKAGE)) if module in NAMES else module


def _core_room(name: str) -> str | None:
    """The room of core/ a module is in (``""``: the top of core/), or None outside it."""
    parts = name.split(".")
    if parts[:2] != ["hdcontext", "core"]:
        return None
    return parts[2] if len(parts) > 3 else ""


def _room(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["hdcontext", "edges"] else None


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


LITELLM_MODULES = sorted((PACKAGE / "litellm").rglob("*.py"))


@pytest.mark.parametrize(
    "path", LITELLM_MODULES, ids=[str(p.relative_to(PACKAGE)) for p in LITELLM_MODULES]
)
def test_the_litellm_callback_stands_on_the_proxy_and_below_and_one_module_imports_litellm(
    path: Path,
) -> None:
    for line, name in _imports(path):
        room = _room(_in_package(name) or "")
        if room is not None:
            assert room in LITELLM_ROOMS, f"{path.name}:{line} imports {name}"
        if name.split(".")[0] == "litellm":
            assert _name(path) == LITELLM_IMPORTER, f"{path.name}:{line} imports {name}"


def test_the_walls_are_checked_on_every_layer() -> None:
    layers = {p.relative_to(PACKAGE).parts[0] for p in MODULES}
    assert layers == set(ALLOWED)
    assert len([p for p in MODULES if p.relative_to(PACKAGE).parts[0] == "core"]) > 20


def test_no_import_circle_anywhere() -> None:
    circles = _circles(_graph())
    assert not circles, "\n".join(
        f"import circle of {len(ring)} modules:\n"
        + "\n".join(f"  {_shown(m)}:{line} imports {_shown(n)}" for m, line, n in ring)
        for ring in circles
    )


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2, "d": 3}, "c": {"a": 4}, "d": {}, "e": {"e2": 5}}
    graph["e2"] = {"e": 6}
    assert _circles(graph) == [
        [("a", 1, "b"), ("b", 2, "c"), ("c", 4, "a")],
        [("e", 5, "e2"), ("e2", 6, "e")],
    ]
    assert _circles({"a": {"b": 1}, "b": {}, "c": {"a": 2, "b": 3}}) == []


EDGE_MODULES = sorted(p for p in (PACKAGE / "edges").rglob("*.py") if _room(_name(p)))


@pytest.mark.parametrize(
    "path", EDGE_MODULES, ids=[str(p.relative_to(PACKAGE)) for p in EDGE_MODULES]
)
def test_each_room_of_the_edges_imports_only_the_rooms_below_it(path: Path) -> None:
    room = _room(_name(path))
    assert room is not None
    for line, name in _imports(path):
        target = _room(_in_package(name) or "")
        if target is not None:
            assert target in ROOMS[room], (
                f"{path.relative_to(PACKAGE)}:{line} imports {name}: {room} may import "
                f"{', '.join(sorted(ROOMS[room]))}"
            )


def test_every_edge_module_is_in_a_room_and_the_rooms_are_stacked() -> None:
    edges = PACKAGE / "edges"
    assert {p.relative_to(edges).parts[0] for p in edges.rglob("*.py")} == {
        "__init__.py",
        *ROOMS,
    }
    assert (edges / "__init__.py").read_text(encoding="utf-8") == ""
    # a room may import only itself and rooms that may import fewer: the walls hold no circle
    for room, below in ROOMS.items():
        assert room in below
        assert all(ROOMS[other] < below for other in below - {room}), room


CORE_MODULES = sorted(p for p in (PACKAGE / "core").rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize(
    "path", CORE_MODULES, ids=[str(p.relative_to(PACKAGE)) for p in CORE_MODULES]
)
def test_each_room_of_the_core_imports_only_the_rooms_below_it(path: Path) -> None:
    room = _core_room(_name(path))
    assert room in CORE_ROOMS, f"{path.relative_to(PACKAGE)} is in no room CORE_ROOMS names"
    below = CORE_ROOMS[: CORE_ROOMS.index(room) + 1]
    for line, name in _imports(path):
        target = _core_room(_in_package(name) or "")
        if target is not None:
            assert target in below, (
                f"{path.relative_to(PACKAGE)}:{line} imports {name}: the core's {room or 'top'} "
                f"may import {', '.join(r or 'top' for r in below)}"
            )


def test_the_top_of_the_core_holds_few_modules_and_every_room_is_named() -> None:
    core = PACKAGE / "core"
    top = sorted(p.name for p in core.glob("*.py") if p.name != "__init__.py")
    assert len(top) <= CORE_TOP_MOST, top
    rooms = {p.name for p in core.iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(CORE_ROOMS) - {""}


CLASS_MOST_LINES = 500
"""The longest a class of the package may be (``end_lineno - lineno + 1``): one that grows past
it holds more than one job, and its parts go to modules of their own, the class delegating."""


def _classes(path: Path) -> list[tuple[int, str, int]]:
    """(line, name, length in lines) of every class in a module, nested ones too."""
    return [
        (node.lineno, node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    ]


def test_no_class_is_longer_than_its_limit() -> None:
    too_long = [
        f"{_shown(module)}:{line} {name} is {length} lines (at most {CLASS_MOST_LINES})"
        for module, path in sorted(NAMES.items())
        for line, name, length in _classes(path)
        if length > CLASS_MOST_LINES
    ]
    assert not too_long, "\n".join(too_long)


def test_the_class_length_is_measured_from_the_class_to_its_last_line(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("class A:\n    x = 1\n\n    class B:\n        pass\n\n\ny = 2\n")
    assert _classes(module) == [(1, "A", 5), (4, "B", 2)]
