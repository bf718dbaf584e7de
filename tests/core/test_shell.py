"""Shell-command read/write recognition (core/tools/shell/): the plain forms, and nothing else."""

from __future__ import annotations

import pytest

from hdcontext.core.tools.shell.commands import (
    ShellCall,
    ShellEffect,
    command_of,
    cwd_of,
    effects_in_order,
    exit_status,
    shell_effect,
)
from hdcontext.core.tools.shell.lex import Op, Word, tokenize

W = "/w"


def effect(command: str, cwd: str | None = W) -> ShellEffect:
    found = shell_effect(command, cwd)
    assert found is not None, command
    return found


def reads(command: str, cwd: str | None = W) -> tuple[str, ...]:
    return effect(command, cwd).reads


def writes(command: str, cwd: str | None = W) -> tuple[str, ...]:
    return effect(command, cwd).writes


def pure_read(command: str) -> tuple[str, ...] | None:
    """The files of a pure read, or None when the command is not one."""
    found = shell_effect(command, W)
    return found.reads if found is not None and found.pure_read else None


# -- the lexer ----------------------------------------------------------------------------


def test_lexer_keeps_quoted_operators_inside_words() -> None:
    assert tokenize("echo '>' \"|\" a\\;b") == [Word("echo"), Word(">"), Word("|"), Word("a;b")]


def test_lexer_reads_fd_redirections_and_line_breaks() -> None:
    assert tokenize("cat a 2>/dev/null\ncat b") == [
        Word("cat"),
        Word("a"),
        Op(">", fd="2"),
        Word("/dev/null"),
        Op(";"),
        Word("cat"),
        Word("b"),
    ]


def test_lexer_a_hash_inside_a_word_is_not_a_comment() -> None:
    assert tokenize("echo a#b # c > f") == [Word("echo"), Word("a#b")]


def test_lexer_skips_heredoc_bodies_even_with_expansions_in_them() -> None:
    tokens = tokenize("cat > f.py << EOF\nx = $HOME `ls` $(pwd)\nEOF\ncat g")
    assert [t.text for t in tokens] == ["cat", ">", "f.py", "<<", "EOF", ";", "cat", "g"]


# -- reads --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "files"),
    [
        ("cat a.py", ("/w/a.py",)),
        ("cat a.py src/b.py", ("/w/a.py", "/w/src/b.py")),
        ("cat -n a.py", ("/w/a.py",)),
        ("cat /abs/a.py", ("/abs/a.py",)),
        ("head a.py", ("/w/a.py",)),
        ("head -n 20 a.py", ("/w/a.py",)),
        ("head -20 a.py", ("/w/a.py",)),
        ("tail a.py", ("/w/a.py",)),
        ("tail -n 5 a.py", ("/w/a.py",)),
        ("tail -n +40 a.py", ("/w/a.py",)),
        ("nl a.py", ("/w/a.py",)),
        ("nl -ba a.py", ("/w/a.py",)),
        ("nl -b a a.py", ("/w/a.py",)),
        ("sed -n '10,20p' a.py", ("/w/a.py",)),
        ("sed -n 12p a.py", ("/w/a.py",)),
        ("sed -n '40,$p' a.py", ("/w/a.py",)),
        ("sed -n -e '1,5p' a.py", ("/w/a.py",)),
        ("cat 'my file.py'", ("/w/my file.py",)),
        ("cat a\\ b.py", ("/w/a b.py",)),
    ],
)
def test_plain_reads_are_pure_reads(command: str, files: tuple[str, ...]) -> None:
    assert pure_read(command) == files


@pytest.mark.parametrize(
    "command",
    [
        "nl -ba a.py | sed -n '10,20p'",
        "cat a.py | head -n 40",
        "cat a.py | grep -n def",
        "cat a.py | tail -5 | wc -l",
        "cat a.py 2>&1",
        "cat a.py 2>/dev/null",
    ],
)
def test_a_read_piped_through_known_filters_is_still_a_pure_read(command: str) -> None:
    assert pure_read(command) == ("/w/a.py",)


def test_cd_prefix_sets_the_directory_of_the_read() -> None:
    assert pure_read("cd /testbed && sed -n '1,9p' src/m.py") == ("/testbed/src/m.py",)
    assert pure_read("cd src && cat m.py") == ("/w/src/m.py",)
    assert pure_read("cd src && cd .. && cat m.py") == ("/w/m.py",)


def test_relative_paths_are_unknown_without_a_working_directory() -> None:
    assert shell_effect("cat a.py", None) == ShellEffect(reads=(), pure_read=False)
    assert reads("cat /abs/a.py", None) == ("/abs/a.py",)


@pytest.mark.parametrize(
    "command",
    [
        "cat a.py && echo done",
        "echo start; cat a.py",
        "cat a.py; cat b.py",
        "cat a.py > copy.py",
        "cat a.py | tee copy.py",
    ],
)
def test_a_read_that_is_not_the_only_thing_the_command_did_is_not_pure(command: str) -> None:
    found = effect(command)
    assert "/w/a.py" in found.reads
    assert not found.pure_read


def test_cat_a_into_b_reads_a_and_writes_b() -> None:
    assert effect("cat a > b") == ShellEffect(
        reads=("/w/a",), writes=("/w/b",), pure_read=False, final_cwd=W
    )


@pytest.mark.parametrize(
    "command",
    [
        "grep -n foo a.py",  # a search, not one of the plain reads
        "sed 's/a/b/' a.py",  # prints a transformed file
        "sed -n '/def/p' a.py",  # a pattern, not a line range
        "head -c5 --follow a.py",
        "tail -f log.txt",
        "cat --show-all a.py",  # an option we do not know
        "cat - a.py",  # stdin mixed in
        "cat < a.py",
        "python -c 'print(open(\"a.py\").read())'",
        "less a.py",
    ],
)
def test_other_ways_of_showing_a_file_are_not_reads(command: str) -> None:
    found = shell_effect(command, W)
    assert found is None or (not found.reads and not found.pure_read)


# -- writes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "files"),
    [
        ("sed -i 's/a/b/' a.py", ("/w/a.py",)),
        ("sed -i -e 's/a/b/' -e 's/c/d/' a.py b.py", ("/w/a.py", "/w/b.py")),
        ("sed -i.bak 's/a/b/' a.py", ("/w/a.py", "/w/a.py.bak")),
        ("sed -i '' 's/a/b/' a.py", ("/w/a.py",)),  # BSD sed's empty suffix
        ("sed --in-place 's/a/b/' a.py", ("/w/a.py",)),
        ("echo hi > out.txt", ("/w/out.txt",)),
        ("echo hi >> out.txt", ("/w/out.txt",)),
        ("python run.py > out.txt 2>&1", ("/w/out.txt",)),
        ("make &> build.log", ("/w/build.log",)),
        ("echo hi | tee out.txt", ("/w/out.txt",)),
        ("echo hi | tee -a out.txt log.txt", ("/w/out.txt", "/w/log.txt")),
        ("cat <<'EOF' > f.py\nprint($x)\nEOF", ("/w/f.py",)),
        ("cat > f.py << EOF\nprint(1)\nEOF", ("/w/f.py",)),
        ("cat <<-EOF > f.py\n\tprint(1)\n\tEOF", ("/w/f.py",)),
        ("tee f.py <<'EOF'\nprint(1)\nEOF", ("/w/f.py",)),
        ("cd /testbed && sed -i 's/a/b/' src/m.py", ("/testbed/src/m.py",)),
        ("git diff > patch.txt && cat patch.txt", ("/w/patch.txt",)),
    ],
)
def test_plain_writes(command: str, files: tuple[str, ...]) -> None:
    found = effect(command)
    assert found.writes == files
    assert not found.pure_read


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > /dev/null",
        "python run.py 2>/dev/null",
        "python run.py &>/dev/null",
        "cat a.py > /dev/stderr",
        "python run.py >&2",
        "python run.py 2>&1",
    ],
)
def test_redirections_to_dev_null_and_descriptors_are_not_writes(command: str) -> None:
    assert writes(command) == ()


def test_a_write_not_known_to_have_succeeded_in_a_semicolon_chain_does_not_count() -> None:
    # "a; b" succeeding says nothing about a.
    assert writes("sed -i s/a/b/ a.py; echo done") == ()
    assert writes("echo x > a.txt; false") == ()
    # "a && b" succeeding means a succeeded too.
    assert writes("sed -i s/a/b/ a.py && echo done") == ("/w/a.py",)
    assert writes("echo start; sed -i s/a/b/ a.py") == ("/w/a.py",)


def test_a_write_in_an_earlier_stage_of_a_pipeline_does_not_count() -> None:
    assert writes("sed -i s/a/b/ a.py | head") == ()


def test_sed_without_in_place_writes_nothing() -> None:
    assert writes("sed 's/a/b/' a.py") == ()


# -- ambiguous: neither a read nor a write -------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat $FILE",
        "cat ${FILE}",
        'cat "$FILE"',
        "echo x > $OUT",
        "cat `ls`",
        "cat $(ls *.py)",
        "sed -i s/a/b/ $(git ls-files)",
        "echo $((1 + 2)) > n.txt",
        "cd $D && cat a.py",
    ],
)
def test_variables_backticks_and_command_substitution_are_ambiguous(command: str) -> None:
    assert shell_effect(command, W) is None


@pytest.mark.parametrize(
    "command",
    [
        "cat *.py",
        "cat src/?.py",
        "cat [ab].py",
        "cat {a,b}.py",
        "sed -i s/a/b/ *.py",
        "echo x > *.log",
        "cat ~/notes.md",
    ],
)
def test_globs_braces_and_tilde_are_neither_reads_nor_writes(command: str) -> None:
    found = effect(command)
    assert found.reads == () and found.writes == () and not found.pure_read


@pytest.mark.parametrize(
    "command",
    [
        "cat a.py | python",
        "cat a.py | python -c 'import sys; print(sys.stdin.read())'",
        "cat a.py | xargs echo",
        "cat a.py | sort -k 2",  # an option with a value we do not parse
        "cat a.py | grep foo b.py",  # the filter reads another file
    ],
)
def test_pipes_into_unknown_programs_are_not_reads(command: str) -> None:
    found = effect(command)
    assert found.reads == () and not found.pure_read


@pytest.mark.parametrize(
    "command",
    [
        "cat a.py || echo missing",
        "sed -i s/a/b/ a.py || true",
        "cat a.py &",
        "sed -i s/a/b/ a.py & wait",
        "(cd src && cat a.py)",
        "{ cat a.py; } > out",
        "if true; then cat a.py; fi",
        "for f in a b; do cat $f; done",
        "cat a.py |& head",
        "source env.sh && cat a.py",
        "eval 'cat a.py'",
        "cat a.py && ",
        "cat 'unterminated",
        "echo x > ",
        "cat <(ls)",
    ],
)
def test_chains_that_cannot_be_split_safely_are_ambiguous(command: str) -> None:
    assert shell_effect(command, W) is None


def test_cd_with_a_semicolon_leaves_the_directory_unknown() -> None:
    # If cd fails, cat runs where it was: which file it read is unknown.
    assert reads("cd src; cat a.py") == ()
    assert writes("cd src; sed -i s/a/b/ a.py") == ()
    # Unless the directory is the same either way.
    assert reads("cd /w; cat a.py") == ("/w/a.py",)


def test_cd_to_an_unknown_place_leaves_relative_paths_unknown() -> None:
    assert reads("cd && cat a.py") == ()
    assert reads("cd - && cat a.py") == ()
    assert reads("cd ~ && cat a.py") == ()


def test_an_environment_assignment_prefix_is_not_a_plain_form() -> None:
    assert reads("LC_ALL=C cat a.py") == ()


def test_cd_in_a_pipeline_is_ambiguous() -> None:
    assert shell_effect("cd src | cat a.py", W) is None


# -- the parameters and the output of a shell call ----------------------------------------


def test_command_of_reads_strings_and_argv_lists() -> None:
    assert command_of({"command": "cat a"}) == "cat a"
    assert command_of({"cmd": "cat a"}) == "cat a"
    assert command_of({"command": ["bash", "-lc", "cat a | head"]}) == "cat a | head"
    assert command_of({"command": ["cat", "my file"]}) == "cat 'my file'"
    assert command_of({"command": 3}) is None
    assert command_of("cat a") is None


def test_cwd_of_reads_the_usual_keys() -> None:
    for key in ("cwd", "workdir", "directory"):
        assert cwd_of({"command": "ls", key: "/src"}) == "/src"
    assert cwd_of({"command": "ls"}) is None


@pytest.mark.parametrize(
    ("result", "status"),
    [
        ("<returncode>0</returncode>\n<output>\nx\n</output>", 0),
        ("<returncode>2</returncode>\n<output>\n</output>", 2),
        ("Command: ls\nStdout: x\nExit Code: 1", 1),
        ("Exit code: 0\nWall time: 1s", 0),
        ("Process exited with code 127", 127),
        ({"stdout": "x", "exit_code": 3}, 3),
        ({"output": "<returncode>1</returncode>"}, 1),
        ("plain output", None),
        (None, None),
    ],
)
def test_exit_status_in_known_output_shapes(result: object, status: int | None) -> None:
    assert exit_status(result) == status


def test_any_nonzero_status_in_the_output_wins() -> None:
    assert exit_status("<returncode>0</returncode>\nExit code: 1") == 1


# -- the working directory across calls -----------------------------------------------------


def test_calls_start_in_the_workspace_root_and_cd_prefixes_do_not_leak_when_they_agree() -> None:
    calls = [
        ShellCall("cd /w && cat a.py", succeeded=True),
        ShellCall("cat b.py", succeeded=True),
    ]
    first, second = effects_in_order(calls, W)
    assert first is not None and second is not None
    assert second.reads == ("/w/b.py",)


def test_after_a_cd_elsewhere_relative_paths_are_unknown_until_a_cd_back() -> None:
    # A shell that keeps its directory (Claude Code) runs b.py in /w/sub; one that does not
    # (mini-swe-agent) in /w. Relative paths are used only where both agree.
    calls = [
        ShellCall("cd sub && make", succeeded=True),
        ShellCall("cat b.py", succeeded=True),
        ShellCall("cat /w/c.py", succeeded=True),
        ShellCall("cd /w", succeeded=True),
        ShellCall("cat d.py", succeeded=True),
    ]
    effects = effects_in_order(calls, W)
    assert [e.reads if e else None for e in effects] == [
        (),
        (),
        ("/w/c.py",),
        (),
        ("/w/d.py",),
    ]


def test_a_call_whose_cd_may_have_failed_leaves_the_directory_unknown() -> None:
    calls = [ShellCall("cd sub && make", succeeded=False), ShellCall("cat b.py", succeeded=True)]
    assert effects_in_order(calls, W)[1] == ShellEffect(final_cwd=None)


def test_an_ambiguous_call_that_may_cd_leaves_the_directory_unknown() -> None:
    calls = [ShellCall("cd $X && ls", succeeded=True), ShellCall("cat b.py", succeeded=True)]
    effects = effects_in_order(calls, W)
    assert effects[0] is None
    assert effects[1] is not None and effects[1].reads == ()


def test_a_cwd_parameter_sets_where_a_call_starts() -> None:
    calls = [ShellCall("cat a.py", cwd="sub", succeeded=True)]
    first = effects_in_order(calls, W)[0]
    assert first is not None and first.reads == ("/w/sub/a.py",)


def test_an_empty_workspace_root_keeps_paths_relative_like_file_tools() -> None:
    first = effects_in_order([ShellCall("cat ./src/a.py", succeeded=True)], "")[0]
    assert first is not None and first.reads == ("src/a.py",)
