"""Split a shell command into words and operators, and refuse whatever is not plain.

``shlex`` knows POSIX quoting but not the shell's grammar: it turns a quoted ``'>'`` into the
same token as a redirection, treats ``#`` inside a word as a comment, reads a newline as a
space and knows nothing of here-documents. So this module walks the command once with the
shell's rules for quotes, operators, comments, line breaks and here-document bodies, keeps each
word's raw text, and lets ``shlex`` do the part it does well: unquote the word.

Anything whose meaning depends on the running shell makes the whole command ambiguous
(:class:`Ambiguous`): a ``$`` or a backquote outside single quotes (variables, ``$(...)``,
arithmetic), parentheses (subshells, process substitution), an unterminated quote. Globs,
braces and a leading ``~`` do not: they only make the word they are in ``dynamic``, for the
caller to refuse where it needs a literal path.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TypeAlias


class Ambiguous(ValueError):
    """The command cannot be read without running a shell."""


@dataclass(frozen=True)
class Word:
    text: str
    """The word as the program receives it (quotes removed by shlex)."""
    dynamic: bool = False
    """It has an unquoted glob, brace or tilde: the shell may expand it into other words."""


@dataclass(frozen=True)
class Op:
    text: str
    """``&&``, ``;`` (also for a line break), ``|``, ``>``, ``>>``, ``<<``…"""
    fd: str = ""
    """The file descriptor written before a redirection (``2`` in ``2>``), else empty."""
    body: str | None = None
    """A here-document's body (``<<``, ``<<-``): the program's input, as the lines written
    between the operator's line and its delimiter."""


Token: TypeAlias = Word | Op

# Longest first, so ``>>`` wins over ``>`` and ``<<-`` over ``<<``.
_OPERATORS: tuple[str, ...] = (
    "&>>",
    "<<-",
    "<<<",
    "&&",
    "||",
    ";;",
    ";&",
    "|&",
    ">>",
    ">|",
    ">&",
    "<&",
    "<>",
    "<<",
    "&>",
    ";",
    "&",
    "|",
    ">",
    "<",
    "(",
    ")",
)
_OPERATOR_START = frozenset("|&;()<>")  # the shell's metacharacters, besides blanks
_GLOB = frozenset("*?[]{}")
_QUOTING = frozenset("'\"\\")
HEREDOC_OPS = frozenset({"<<", "<<-"})


def tokenize(command: str) -> list[Token]:
    """Words and operators of ``command``; a here-document's body is not read as words but
    kept on its operator (``Op.body``).

    A line break becomes ``;`` unless it follows an operator that continues the command
    (``&&``, ``||``, ``|``). Raises :class:`Ambiguous`.
    """
    tokens: list[Token] = []
    heredocs: list[tuple[str, bool, int]] = []  # (delimiter, strip leading tabs, op's index)
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c in " \t":
            i += 1
        elif c == "\\" and command.startswith("\\\n", i):
            i += 2
        elif c == "\n":
            i = _read_heredocs(command, i + 1, heredocs, tokens)
            heredocs = []
            if not (tokens and isinstance(tokens[-1], Op) and tokens[-1].text in ("&&", "||", "|")):
                tokens.append(Op(";"))
        elif c == "#":
            end = command.find("\n", i)
            i = n if end < 0 else end
        elif c in _OPERATOR_START:
            op = _operator_at(command, i)
            tokens.append(Op(op))
            i += len(op)
        else:
            raw, dynamic, i = _read_word(command, i)
            if raw.isdigit() and i < n and command[i] in "<>":
                op = _operator_at(command, i)
                tokens.append(Op(op, fd=raw))
                i += len(op)
                continue
            word = Word(_unquote(raw), dynamic)
            if tokens and isinstance(tokens[-1], Op) and tokens[-1].text in HEREDOC_OPS:
                heredocs.append((word.text, tokens[-1].text == "<<-", len(tokens) - 1))
            tokens.append(word)
    return tokens


def _operator_at(command: str, i: int) -> str:
    for op in _OPERATORS:
        if command.startswith(op, i):
            return op
    raise Ambiguous(f"unexpected {command[i]!r}")  # pragma: no cover - _OPERATOR_START guards


def _read_word(command: str, i: int) -> tuple[str, bool, int]:
    """The raw text of the word starting at ``i``, whether it is dynamic, and its end."""
    start, n = i, len(command)
    dynamic = False
    while i < n:
        c = command[i]
        if c in " \t\n" or c in _OPERATOR_START:
            break
        if c == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise Ambiguous("unterminated single quote")
            i = end + 1
        elif c == '"':
            i = _end_of_double_quotes(command, i + 1)
        elif c == "\\":
            if i + 1 >= n:
                raise Ambiguous("trailing backslash")
            i += 2
        elif c in "$`":
            raise Ambiguous("expansion")
        else:
            if c in _GLOB or (c == "~" and i == start):
                dynamic = True
            i += 1
    return command[start:i], dynamic, i


def _end_of_double_quotes(command: str, i: int) -> int:
    n = len(command)
    while i < n:
        c = command[i]
        if c == '"':
            return i + 1
        if c == "\\":
            i += 2
            continue
        if c in "$`":
            raise Ambiguous("expansion inside double quotes")
        i += 1
    raise Ambiguous("unterminated double quote")


def _unquote(raw: str) -> str:
    if not _QUOTING.intersection(raw):
        return raw  # nothing for shlex to undo
    try:
        parts = shlex.split(raw, comments=False, posix=True)
    except ValueError as exc:  # pragma: no cover - _read_word already checked the quotes
        raise Ambiguous(str(exc)) from None
    if len(parts) != 1:
        raise Ambiguous(f"{raw!r} is not one word")
    return parts[0]


def _read_heredocs(
    command: str, i: int, heredocs: list[tuple[str, bool, int]], tokens: list[Token]
) -> int:
    """Read the bodies of the here-documents opened on the line that just ended onto their
    operators, and go past them.

    A body runs to a line that is exactly its delimiter (after leading tabs, for ``<<-``, whose
    body loses them too). Its content is the program's input, never a file name, so it is not
    read as words: an unquoted delimiter's ``$`` expansions change what is written, not where.
    """
    n = len(command)
    for delimiter, strip_tabs, index in heredocs:
        lines: list[str] = []
        while i < n:
            end = command.find("\n", i)
            line = command[i:] if end < 0 else command[i:end]
            i = n if end < 0 else end + 1
            if strip_tabs:
                line = line.lstrip("\t")
            if line == delimiter:
                break
            lines.append(line)
        op = tokens[index]
        assert isinstance(op, Op)
        tokens[index] = Op(op.text, op.fd, "\n".join(lines))
    return i
