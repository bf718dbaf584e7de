"""Paths in tool parameters (core/tools/files.py): which are files, which are patterns, and how
they resolve, Windows sessions included."""

from __future__ import annotations

import pytest

from hdcontext.core.tools.files import extract_paths, is_absolute, resolve_path


@pytest.mark.parametrize(
    ("path", "root", "resolved"),
    [
        ("src/a.py", "/w", "/w/src/a.py"),
        ("/w/./src/../a.py", "", "/w/a.py"),
        ("//w/a.py", "", "/w/a.py"),
        ("C:\\Users\\dev\\a.py", "", "C:\\Users\\dev\\a.py"),
        ("C:\\Users\\dev\\a.py", "/w", "C:\\Users\\dev\\a.py"),
        ("C:/Users/dev/src/../a.py", "", "C:\\Users\\dev\\a.py"),
        ("src/a.py", "C:\\Users\\dev\\proj", "C:\\Users\\dev\\proj\\src\\a.py"),
        ("src\\..\\a.py", "C:\\Users\\dev\\proj", "C:\\Users\\dev\\proj\\a.py"),
        ("c:\\users\\dev\\a.py", "", "c:\\users\\dev\\a.py"),  # no case folding
        ("\\\\server\\share\\a.py", "", "\\\\server\\share\\a.py"),
        ("app/[slug]/page.tsx", "/w", "/w/app/[slug]/page.tsx"),
    ],
)
def test_resolve_path(path: str, root: str, resolved: str) -> None:
    assert resolve_path(path, root) == resolved


def test_windows_paths_are_absolute_and_never_joined_to_a_posix_root() -> None:
    assert is_absolute("C:\\x") and is_absolute("d:/x") and is_absolute("\\\\srv\\share\\x")
    assert is_absolute("/x")
    assert not is_absolute("x\\y") and not is_absolute("C:x")
    assert not resolve_path("C:\\Users\\x", "/cwd").startswith("/cwd")


@pytest.mark.parametrize("key", ["file_path", "absolute_path", "path"])
def test_a_single_file_tool_path_is_a_file_whatever_characters_it_has(key: str) -> None:
    for path in ("app/[slug]/page.tsx", "src/{a}.ts", "notes/why?.md", "a*.py"):
        assert extract_paths({key: path}) == ([path], False)


def test_a_many_file_tool_list_keeps_patterns_apart() -> None:
    assert extract_paths({"paths": ["a.py", "app/[slug]/*.tsx", "src/{a,b}.ts"]}) == (
        ["a.py"],
        True,
    )
    assert extract_paths({"file_paths": ["a.py", "b.py"]}) == (["a.py", "b.py"], False)
