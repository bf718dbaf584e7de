"""apply_patch's file list (core/tools/patch.py): which files a Codex patch names, and how."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from hdcontext.core.tools.files import resolve_path
from hdcontext.core.tools.patch import (
    ADD,
    DELETE,
    MOVE,
    UPDATE,
    PatchFile,
    headers_only,
    patch_files,
    patch_text,
    patch_writes,
)
from hdcontext.core.tools.shell.commands import shell_effect

# A patch from a real rollout (MoonLadderStudios__MoonMind, CLI 0.57), cut short.
REAL = (
    "*** Begin Patch\n"
    "*** Update File: specs/003-celery-oauth-volumes/spec.md\n"
    "@@\n"
    "-## User Scenarios & Testing *(mandatory)*\n"
    "+## User Scenarios & Testing *(mandatory)*\n"
    "*** End Patch"
)


def test_a_real_update_names_its_file_as_a_partial_write() -> None:
    files = patch_files(REAL)
    assert files == (PatchFile("update", "specs/003-celery-oauth-volumes/spec.md"),)
    assert patch_writes(files).whole == ()


def test_add_is_whole_update_partial_delete_whole_and_a_move_partial_on_both_names() -> None:
    patch = (
        "*** Begin Patch\n"
        "*** Add File: new.py\n+print(1)\n+\n"
        "*** Update File: old.py\n*** Move to: moved.py\n@@ def f():\n-    a\n+    b\n"
        "*** End of File\n"
        "*** Delete File: gone.py\n"
        "*** Update File: kept.py\n@@\n context\n-x\n+y\n"
        "*** End Patch\n"
    )
    files = patch_files(patch)
    assert files == (
        PatchFile("add", "new.py"),
        PatchFile("update", "old.py", "moved.py"),
        PatchFile("delete", "gone.py"),
        PatchFile("update", "kept.py"),
    )
    writes = patch_writes(files)
    assert writes.paths == ("new.py", "old.py", "moved.py", "gone.py", "kept.py")
    assert writes.whole == ("new.py", "gone.py")


def test_a_file_deleted_then_added_in_one_patch_is_shown_whole() -> None:
    # Quelklef__shell-ws (0.105) rewrites package.json so.
    patch = (
        "*** Begin Patch\n*** Delete File: package.json\n"
        "*** Add File: package.json\n+{}\n*** End Patch"
    )
    assert patch_writes(patch_files(patch) or ()).whole == ("package.json",)


def test_an_add_then_an_update_of_the_same_file_is_not_whole() -> None:
    patch = "*** Begin Patch\n*** Add File: a\n+x\n*** Update File: a\n@@\n-x\n+y\n*** End Patch"
    writes = patch_writes(patch_files(patch) or ())
    assert (writes.paths, writes.whole) == (("a",), ())


def test_what_codex_refuses_names_no_file() -> None:
    # Seen in the rollouts: a blank line after an Add File ("'' is not a valid hunk header").
    blank = "*** Begin Patch\n*** Add File: a.md\n+# A\n\nmore\n*** End Patch"
    assert patch_files(blank) is None
    assert patch_files("*** Begin Patch\n*** Update File: a\n@@\n-x\n") is None  # no end
    assert patch_files("*** Update File: a\n*** End Patch") is None  # no begin
    assert patch_files("*** Begin Patch\n*** End Patch") is None  # no file
    assert patch_files("*** Begin Patch\n*** Add File:   \n*** End Patch") is None  # no path
    assert patch_files("*** Begin Patch\n*** Update File: a\nstray\n*** End Patch") is None
    assert patch_files("diff --git a/x b/x\n--- a/x\n+++ b/x") is None


def test_the_heredoc_wrapper_codex_strips_and_surrounding_blanks_are_allowed() -> None:
    wrapped = "<<'EOF'\n" + REAL + "\nEOF\n"
    assert patch_files(wrapped) == patch_files(REAL)
    assert patch_files("\n  " + REAL.replace("\n", "\r\n") + "  \n") == patch_files(REAL)


def test_an_added_line_that_reads_like_a_header_is_content() -> None:
    patch = "*** Begin Patch\n*** Add File: doc.md\n+*** Delete File: important.py\n*** End Patch"
    assert patch_files(patch) == (PatchFile("add", "doc.md"),)


def test_only_the_input_or_patch_parameter_carries_a_patch() -> None:
    assert patch_text({"input": REAL}) == REAL
    assert patch_text({"patch": REAL}) == REAL
    assert patch_text({"input": "not a patch"}) is None
    assert patch_text({"content": REAL}) is None
    assert patch_text(REAL) is None


def test_headers_only_keeps_the_file_list_and_drops_the_content() -> None:
    headers = headers_only(REAL)
    assert headers == (
        "*** Begin Patch\n*** Update File: specs/003-celery-oauth-volumes/spec.md\n*** End Patch"
    )
    assert patch_files(headers) == patch_files(REAL)


# -- properties ---------------------------------------------------------------------------

_PATH = st.text(
    alphabet=st.characters(categories=("L", "N"), include_characters="/._-"), min_size=1
).filter(lambda p: p.strip() == p)
_LINE = st.text(alphabet=st.characters(exclude_characters="\n\r"), max_size=30)


@st.composite
def _patches(draw: st.DrawFn) -> tuple[str, tuple[PatchFile, ...]]:
    """A patch Codex would apply, and the files it names."""
    files: list[PatchFile] = []
    lines = ["*** Begin Patch"]
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["add", "update", "delete"]))
        path = draw(_PATH)
        if action == "add":
            lines.append(ADD + path)
            lines.extend("+" + line for line in draw(st.lists(_LINE, max_size=4)))
            files.append(PatchFile("add", path))
        elif action == "delete":
            lines.append(DELETE + path)
            files.append(PatchFile("delete", path))
        else:
            lines.append(UPDATE + path)
            move = draw(st.none() | _PATH)
            if move is not None:
                lines.append(MOVE + move)
            lines.append("@@")
            for line in draw(st.lists(_LINE, min_size=1, max_size=4)):
                lines.append(draw(st.sampled_from(" +-")) + line)
            files.append(PatchFile("update", path, move))
    lines.append("*** End Patch")
    return "\n".join(lines), tuple(files)


@given(_patches())
def test_a_patch_names_exactly_the_files_it_was_written_for(
    made: tuple[str, tuple[PatchFile, ...]],
) -> None:
    text, files = made
    assert patch_files(text) == files
    assert patch_files(headers_only(text) or "") == files
    writes = patch_writes(files)
    assert set(writes.whole) <= set(writes.paths)
    named = {f.path for f in files} | {f.move_to for f in files if f.move_to}
    assert set(writes.paths) == named


def _header_paths(text: str) -> set[str]:
    """Every path a header line of ``text`` spells (as a line Codex would read it)."""
    out: set[str] = set()
    for line in text.split("\n"):
        trimmed = line.removesuffix("\r").strip()
        for marker in (ADD, UPDATE, DELETE, MOVE):
            if trimmed.startswith(marker):
                out.add(trimmed[len(marker) :].strip())
    return out


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(
            ["*** Begin Patch", "*** End Patch", ADD + "a", UPDATE + "b", DELETE + "c", "@@"]
        )
        | st.text(max_size=40)
        | _LINE.map(lambda line: "+" + line),
        max_size=12,
    )
)
@example(["*** Begin Patch", ADD + "a", "+x\u2028*** Delete File: evil", "*** End Patch"])
def test_no_input_makes_a_file_the_patch_does_not_name(lines: list[str]) -> None:
    text = "\n".join(lines)
    files = patch_files(text)
    if files is None:
        return
    named = _header_paths(text)
    for f in files:
        assert f.path in named
        assert f.move_to is None or f.move_to in named


@given(_patches(), st.sampled_from(["/repo", "/repo/sub"]))
def test_in_a_shell_call_the_patch_writes_its_files_relative_to_where_it_ran(
    made: tuple[str, tuple[PatchFile, ...]], cwd: str
) -> None:
    text, files = made
    if any(line == "PATCH" for line in text.split("\n")):
        return  # the here-document would end there
    named = {f.path for f in files} | {f.move_to for f in files if f.move_to}
    for command in (f"apply_patch <<'PATCH'\n{text}\nPATCH", f"apply_patch '{_quoted(text)}'"):
        effect = shell_effect(command, cwd)
        assert effect is not None
        assert set(effect.writes) == {resolve_path(p, cwd) for p in named}


def _quoted(text: str) -> str:
    return text.replace("'", "'\"'\"'")
