"""Which files the few programs commands.py knows read and write, from their arguments alone.

Each parser accepts the options it understands and refuses (``None``) any other: an option we
do not know may change what the program does with its files (``tail -f``, ``sed -f``,
``cat --show-all``), and a guess is worse than nothing. Arguments are words already unquoted;
resolving them to paths is the caller's job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .lex import Word

Files = tuple[list[Word], list[Word]]
"""(words naming files read, words naming files written)."""

_SED_PRINT_RANGE = re.compile(r"^\s*(?:\d+|\$)\s*(?:,\s*(?:\d+|\$)\s*)?p\s*$")
_COUNT = re.compile(r"^[+-]?\d+$")
_HEAD_TAIL_OPTION = re.compile(
    r"^(?:-[nc][+-]?\d+|--(?:lines|bytes)=[+-]?\d+|-\d+|-[qv]|--(?:quiet|silent|verbose))$"
)


def files_of(name: str, args: Sequence[Word]) -> Files | None:
    """The files ``name args`` reads and writes, or ``None`` when it is not a plain form.

    Known: ``cat``, ``head``, ``tail``, ``nl``, ``sed -n 'X,Yp'`` (reads), ``sed -i`` and ``tee``
    (writes), and ``grep PATTERN``, ``wc``, ``sort``, ``uniq`` as filters of their input (no
    files). A known program without files filters its input: ``([], [])``.
    """
    if any(a.dynamic for a in args):
        return None
    parsed: Files | None
    if name == "cat":
        files = _files_after_options(args, flags="nbsvETAetu")
        parsed = None if files is None else (files, [])
    elif name == "head":
        parsed = _head_tail(args, plus_ok=False)
    elif name == "tail":
        parsed = _head_tail(args, plus_ok=True)
    elif name == "nl":
        parsed = _nl(args)
    elif name == "sed":
        parsed = _sed(args)
    elif name == "tee":
        files = _files_after_options(args, flags="aip", long_ok=("--append",))
        parsed = None if files is None else ([], files)
    elif name == "grep":
        parsed = ([], []) if _grep_filter(args) else None
    elif name in ("wc", "sort", "uniq"):
        parsed = ([], []) if all(a.text.startswith("-") for a in args) else None
    else:
        return None
    if parsed is None or any(w.text in ("", "-") for w in (*parsed[0], *parsed[1])):
        return None  # stdin ('-') or an empty name: not a file
    return parsed


Lines = tuple[int, int | None]
"""Lines ``[low, high)``, from 1; ``None`` high: to the end."""

_SED_LINES = re.compile(r"^\s*(\d+)\s*(?:,\s*(\d+|\$)\s*)?p\s*$")
_ONE_TO_ONE_CAT = frozenset("nbvETAetu")
"""``cat`` options that keep each line a line of its own (``-s`` squeezes blank ones)."""


def line_range(name: str, args: Sequence[Word]) -> Lines | None:
    """The lines of its input (its one file, or stdin) that ``name args`` prints, when they
    are a range: ``sed -n 'A,Bp'``, ``head -n N``, ``tail -n +N``, and ``cat``/``nl`` (every
    line, numbered or not). ``None`` for anything else: a guess would let a read cover lines
    it never showed."""
    texts = [a.text for a in args if not a.text.startswith("-") or a.text == "-"]
    options = [a.text for a in args if a.text.startswith("-") and a.text != "-"]
    if name == "cat":
        return (1, None) if all(set(o[1:]) <= _ONE_TO_ONE_CAT for o in options) else None
    if name == "nl":
        return (1, None)
    if name == "sed":
        scripts = [t for t in texts if _SED_LINES.match(t)]
        if len(scripts) != 1 or any(o not in ("-n", "--quiet", "--silent") for o in options):
            return None
        match = _SED_LINES.match(scripts[0])
        assert match is not None
        low = int(match.group(1))
        end = match.group(2)
        if end is None:
            return low, low + 1
        return (low, None) if end == "$" else (low, max(low, int(end)) + 1)  # 'B<A': A only
    if name in ("head", "tail"):
        return _count_range(name, [a.text for a in args])
    return None


def _count_range(name: str, words: list[str]) -> Lines | None:
    """``head -n N`` (lines 1 to N), ``tail -n +N`` (line N on); a count from the end (``tail
    -n N``, ``head -n -N``) or of bytes is no range of lines from the start."""
    count: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-n" and i + 1 < len(words):
            count = words[i + 1]
            i += 2
            continue
        if word.startswith("--lines="):
            count = word.split("=", 1)[1]
        elif word.startswith("-n") and len(word) > 2:
            count = word[2:]
        elif re.match(r"^-\d+$", word) or (name == "tail" and re.match(r"^\+\d+$", word)):
            count = word[1:] if word.startswith("-") else word
        elif word.startswith("-"):
            return None  # -c, -q, -f…
        i += 1
    if name == "head":
        if count is None:
            return 1, 11
        return (1, int(count) + 1) if count.isdigit() else None
    if count is not None and count.startswith("+") and count[1:].isdigit():
        return max(1, int(count[1:])), None
    return None


def _files_after_options(
    args: Sequence[Word], flags: str, long_ok: tuple[str, ...] = ()
) -> list[Word] | None:
    """Operands of a command whose only options are the single letters ``flags`` (clustered
    or not) and the long options ``long_ok``; ``None`` for any other option."""
    files: list[Word] = []
    options_done = False
    for word in args:
        text = word.text
        if options_done or not text.startswith("-") or text == "-":
            files.append(word)
        elif text == "--":
            options_done = True
        elif text.startswith("--"):
            if text not in long_ok:
                return None
        elif any(letter not in flags for letter in text[1:]):
            return None
    return files


def _head_tail(args: Sequence[Word], plus_ok: bool) -> tuple[list[Word], list[Word]] | None:
    """``head``/``tail`` with line or byte counts; ``-f`` and friends are not a plain read."""
    files: list[Word] = []
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-n", "-c"):
            if i + 1 >= len(args) or not _COUNT.match(args[i + 1].text):
                return None
            if args[i + 1].text.startswith("+") and not plus_ok:
                return None
            i += 2
            continue
        if _HEAD_TAIL_OPTION.match(text) or (plus_ok and re.match(r"^\+\d+$", text)):
            if "+" in text and not plus_ok:
                return None
        elif text.startswith("-") and text != "-":
            return None  # -f, --follow and everything else: not a plain read
        else:
            files.append(args[i])
        i += 1
    return files, []


def _nl(args: Sequence[Word]) -> tuple[list[Word], list[Word]] | None:
    files: list[Word] = []
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-b", "-n", "-w", "-v", "-i", "-s"):
            if i + 1 >= len(args):
                return None
            i += 2
            continue
        if re.match(r"^-(b[atn]|n(ln|rn|rz)|w\d+|v\d+|i\d+)$", text):
            pass
        elif text.startswith("-") and text != "-":
            return None
        else:
            files.append(args[i])
        i += 1
    return files, []


def _sed(args: Sequence[Word]) -> tuple[list[Word], list[Word]] | None:
    """``sed -n 'X,Yp' FILE…`` reads; ``sed -i … FILE…`` writes (and the backup, if any)."""
    quiet = False
    in_place: str | None = None  # the backup suffix ('' for none) when -i was given
    scripts: list[str] = []
    operands: list[Word] = []
    i = 0
    while i < len(args):
        word = args[i]
        text = word.text
        if text in ("-e", "--expression"):
            if i + 1 >= len(args):
                return None
            scripts.append(args[i + 1].text)
            i += 2
            continue
        if text.startswith("--expression="):
            scripts.append(text.split("=", 1)[1])
        elif text in ("-n", "--quiet", "--silent"):
            quiet = True
        elif text == "-i" or text == "--in-place":
            in_place = ""
            # BSD sed takes the suffix as the next word; '' is how macOS users spell "none".
            if i + 1 < len(args) and args[i + 1].text == "":
                i += 1
        elif text.startswith("--in-place="):
            in_place = text.split("=", 1)[1]
        elif text in ("-E", "-r", "-s", "-u", "-z", "--posix", "--regexp-extended"):
            pass
        elif re.match(r"^-[nErsuz]+$", text):
            quiet = quiet or "n" in text
        elif re.match(r"^-[nErsuz]*i", text):
            in_place = text[text.index("i") + 1 :]
            quiet = quiet or "n" in text[: text.index("i")]
        elif re.match(r"^-[nErsuz]*e$", text):
            quiet = quiet or "n" in text
            if i + 1 >= len(args):
                return None
            scripts.append(args[i + 1].text)
            i += 2
            continue
        elif text.startswith("-") and text != "-":
            return None  # -f script files, -l, unknown options: not a plain form
        else:
            operands.append(word)
        i += 1
    if not scripts:
        if not operands:
            return None
        scripts.append(operands.pop(0).text)
    if in_place is not None:
        if not operands or "*" in in_place or "/" in in_place:
            return None
        backups = [Word(w.text + in_place) for w in operands] if in_place else []
        return list(operands), [*operands, *backups]
    if quiet and len(scripts) == 1 and _SED_PRINT_RANGE.match(scripts[0]):
        return list(operands), []
    return None


def _grep_filter(args: Sequence[Word]) -> bool:
    """``grep [options] PATTERN`` reading stdin only (a file operand or -r makes it a search)."""
    operands = 0
    explicit = False
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-e", "-A", "-B", "-C", "-m"):
            explicit = explicit or text == "-e"
            i += 2
            continue
        if not (
            re.match(r"^-[iEFnvwxochHsPz]+$", text)
            or re.match(r"^-[ABCm]\d+$", text)
            or text.startswith("--color")
        ):
            if text.startswith("-") and text != "-":
                return False
            operands += 1
        i += 1
    return operands == (0 if explicit else 1)
