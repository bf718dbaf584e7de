"""Which files a shell command reads and writes, for the few forms where that is certain.

Agents without file tools (mini-swe-agent, Codex; any agent between its file tools) read files
with ``cat``, ``head``, ``tail``, ``nl`` and ``sed -n``, and write them with ``sed -i``,
``>``/``>>`` redirections, ``tee`` and here-documents, or Codex's ``apply_patch`` (its patch in
a here-document or its one argument: ``tools/patch.py``). The density engine can prune a stale
shell read exactly like a stale ``read_file``, but only if it knows, rather than guesses, what
a command did: a false write prunes a read the model still needs. So this module recognises
the plain forms and says "nothing known" for everything else: variables and command
substitution, globs, subshells, ``||`` and background jobs, pipes into programs it does not
know, options it does not know. Missing a write only keeps a stale read; inventing one loses a
live read.

A command's writes are the ones that certainly happened when the whole command succeeded:
in ``a && b`` both ran; in ``a; b`` only ``b`` is known to have succeeded, so ``a``'s writes are
left out. Redirections to ``/dev/...`` are not writes.

Paths are resolved against the command's working directory: the workspace root, a ``cwd``-like
parameter, and ``cd DIR &&`` prefixes. :func:`effects_in_order` follows ``cd`` across calls for
agents whose shell keeps its directory (Claude Code's does; mini-swe-agent's does not): a
directory is used only where both kinds of shell agree on it, otherwise relative paths are
unknown. Pure: no I/O, nothing is ever run.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..files import is_absolute, resolve_path
from ..patch import patch_files, patch_writes
from .lex import HEREDOC_OPS, Ambiguous, Op, Token, Word, tokenize
from .programs import Lines, files_of, line_range

# Parameter keys agents use for the command and for its working directory.
COMMAND_KEYS: tuple[str, ...] = ("command", "cmd")
CWD_KEYS: tuple[str, ...] = ("cwd", "workdir", "directory", "working_directory")

_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_WHOLE_READERS = frozenset({"cat", "nl"})
"""Programs that show the whole of each file they read (with line numbers, for ``nl``)."""
_READ_REDIRECTS = frozenset({"<", "<<<", *HEREDOC_OPS})
_DUP_REDIRECTS = frozenset({">&", "<&"})
_CHAIN = frozenset({"&&", ";"})

# Builtins and keywords that change the shell itself or its control flow: a command with one
# of them cannot be read as a plain sequence of programs.
_SHELL_CONTROL = frozenset(
    {
        "pushd",
        "popd",
        "source",
        ".",
        "eval",
        "exec",
        "builtin",
        "command",
        "alias",
        "unalias",
        "function",
        "shopt",
        "enable",
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "select",
        "time",
        "coproc",
        "!",
        "{",
        "}",
        "[[",
        "]]",
    }
)
_CHANGES_DIRECTORY = re.compile(
    r"(?:^|[;&|(`{\n]|\b(?:then|do|else))\s*(?:cd|pushd|popd|source|\.)(?=\s|$|;|&|\|)"
)

_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class ShellEffect:
    """What one shell command does to files, as far as it is certain (slots: the density
    engine keeps one for every shell call of a history)."""

    reads: tuple[str, ...] = ()
    """Resolved files whose content the command showed the model (first stage of a pipeline
    whose other stages only filter it)."""
    writes: tuple[str, ...] = ()
    """Resolved files the command wrote, provided that the whole command succeeded."""
    pure_read: bool = False
    """One read and nothing else (``cd DIR &&`` prefixes and stdin filters allowed): the
    command's whole output is stale once every file in ``reads`` is."""
    full_reads: tuple[str, ...] = ()
    """Files of ``reads`` whose whole content reached the output (``cat``/``nl`` with no
    stage after it): a full view of the file, not a part of it."""
    line_ranges: tuple[tuple[str, int, int | None], ...] = ()
    """For a pure read of one file, the lines ``[low, high)`` of it the output showed, when
    they are a range (``sed -n '1,200p' f``, ``nl -ba f | sed -n '200,400p'``, ``head -n 50
    f``): a later read of a range holding it shows all it showed."""
    whole_writes: tuple[str, ...] = ()
    """Files of ``writes`` whose whole new content is in the command itself (``cat <<EOF >
    FILE``, an ``apply_patch`` Add File or Delete File): the command is a full view of what
    the file holds after it."""
    changes_directory: bool = False
    final_cwd: str | None = None
    """The working directory after the command (``None``: unknown)."""


@dataclass(frozen=True)
class ShellCall:
    """One shell tool call, as :func:`effects_in_order` needs it."""

    command: str
    cwd: str | None = None
    """The call's own working-directory parameter, as given."""
    succeeded: bool = False
    """Answered, without an error and without a failing exit status."""


@dataclass
class _Command:
    """One simple command: its words and its redirections."""

    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[Op, Word]] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        if not self.words or self.words[0].dynamic:
            return None
        return self.words[0].text


@dataclass(frozen=True)
class _Stage:
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    is_read: bool = False  # a recognised read command with files of its own
    is_filter: bool = False  # reads stdin only, writes stdout only
    known: bool = True  # every file it names resolved
    whole: bool = False  # it outputs its files whole (cat, nl)
    whole_writes: tuple[str, ...] = ()  # files whose whole new content the command holds
    lines: Lines | None = None  # the lines of its one file, or of its input, it prints


# -- the parameters of a shell call -------------------------------------------------------


def command_of(parameters: object) -> str | None:
    """The command line of a shell call: a string, or an argv list (``["bash", "-lc", s]``)."""
    if not isinstance(parameters, Mapping):
        return None
    for key in COMMAND_KEYS:
        value = parameters.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            argv: list[str] = value
            shell = argv[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
            if len(argv) == 3 and shell and argv[1] in ("-c", "-lc"):
                return argv[2]
            return shlex.join(argv)
    return None


def cwd_of(parameters: object) -> str | None:
    if not isinstance(parameters, Mapping):
        return None
    for key in CWD_KEYS:
        value = parameters.get(key)
        if isinstance(value, str) and value:
            return value
    return None


_STATUS_PATTERNS = (
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),  # mini-swe-agent
    re.compile(r"(?im)^\s*exit code:?\s*(-?\d+)\b"),  # gemini-cli, llxprt, Claude Code
    re.compile(r"(?i)process exited with code (-?\d+)"),  # Codex, and masking's pointers
)
_STATUS_KEYS = ("returncode", "exit_code", "exitCode", "exit_status", "status_code")
_CODEX_HEADER = re.compile(
    r"(?:Exit code: (?P<status>-?\d+)\n|Chunk ID: [^\n]*\n)"
    r"Wall time: [^\n]*\n"
    r"(?:Process exited with code (?P<exited>-?\d+)\n|Process running with session ID \d+\n)?"
    r"(?:(?:Original token count|Total output lines): \d+\n)*"
    r"Output:\n"
)
"""Codex's ``shell_command`` (``Exit code: N``) and ``exec_command`` (``Chunk ID: …``) headers:
what follows ``Output:`` is the command's own output, whatever it says."""
_CODEX_ENVELOPE = '{"output":'
"""Codex's ``shell`` and ``apply_patch`` output: ``{"output": …, "metadata": {"exit_code": N}}``."""


def exit_status(result: object) -> int | None:
    """The exit status a shell tool reported, when its output says so in a known way.

    Several statuses (a wrapper's and the program's) all count: the first nonzero wins, so a
    status of 0 means every one found was 0. Codex frames its outputs with the status
    (``codex_status``), and the frame says all: a ``cat`` of a log that reads "exit code 1"
    printed, it did not fail.
    """
    if isinstance(result, Mapping):
        for key in _STATUS_KEYS:
            value = result.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        statuses = [_text_status(v) for v in result.values() if isinstance(v, str)]
    elif isinstance(result, str):
        statuses = [_text_status(result)]
    else:
        return None
    nonzero = [s for s in statuses if s]
    if nonzero:
        return nonzero[0]
    return 0 if 0 in statuses else None


def codex_status(text: str) -> tuple[bool, int | None]:
    """(whether ``text`` is one of Codex's framed outputs, the exit status its frame gives):
    a process still running (``exec_command``'s session) has none yet."""
    header = _CODEX_HEADER.match(text)
    if header is not None:
        status = header.group("status") or header.group("exited")
        return True, None if status is None else int(status)
    if text.startswith(_CODEX_ENVELOPE) and text.endswith("}"):
        try:
            data = json.loads(text)
        except ValueError:
            return False, None
        metadata = data.get("metadata") if isinstance(data, Mapping) else None
        if isinstance(metadata, Mapping):
            status = metadata.get("exit_code")
            if isinstance(status, int) and not isinstance(status, bool):
                return True, status
    return False, None


def _text_status(text: str) -> int | None:
    # Not cached: a cache keyed by the output would keep every tool output of every session
    # alive. The density index reads each response once, when it arrives (stale_index.py).
    framed, status = codex_status(text)
    if framed:
        return status
    found = [int(m) for pattern in _STATUS_PATTERNS for m in pattern.findall(text)]
    nonzero = [s for s in found if s != 0]
    if nonzero:
        return nonzero[0]
    return 0 if found else None


# -- one command --------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def shell_effect(command: str, cwd: str | None) -> ShellEffect | None:
    """The effect of ``command`` run in ``cwd`` (``None``: unknown), or ``None`` if ambiguous.

    Cached: optimize reads every shell call of the history again after each turn, and the
    answer depends on nothing but the command and the directory.
    """
    try:
        chain = _split_chain(tokenize(command))
    except Ambiguous:
        return None
    reads: list[str] = []
    writes: list[str] = []
    full_reads: list[str] = []
    whole_writes: list[str] = []
    changes = False
    non_cd: list[tuple[int, list[_Stage]]] = []
    for index, (joiner_after, pipeline) in enumerate(chain):
        if len(pipeline) == 1 and pipeline[0].name == "cd":
            changes = True
            cwd = _cd(pipeline[0], cwd, joiner_after)
            continue
        if any(cmd.name == "cd" for cmd in pipeline):
            return None  # cd inside a pipeline runs in a subshell: not a plain form
        stages = [_stage(cmd, cwd) for cmd in pipeline]
        non_cd.append((index, stages))
        reads.extend(_pipeline_reads(stages))
        if len(stages) == 1 and stages[0].whole and stages[0].is_read:
            full_reads.extend(stages[0].reads)
        guaranteed = all(j == "&&" for j, _ in chain[index:-1])
        if guaranteed:
            writes.extend(stages[-1].writes)  # earlier stages may fail unseen
            if len(stages) == 1:
                whole_writes.extend(stages[0].whole_writes)
    pure = (
        len(non_cd) == 1
        and non_cd[0][0] == len(chain) - 1
        and not writes
        and _is_pure_read(non_cd[0][1])
    )
    lines = _pipeline_lines(non_cd[0][1]) if pure else None
    return ShellEffect(
        reads=tuple(dict.fromkeys(reads)),
        writes=tuple(dict.fromkeys(writes)),
        pure_read=pure,
        full_reads=tuple(dict.fromkeys(full_reads)),
        line_ranges=() if lines is None else ((reads[0], *lines),),
        whole_writes=tuple(dict.fromkeys(whole_writes)),
        changes_directory=changes,
        final_cwd=cwd,
    )


def _split_chain(tokens: list[Token]) -> list[tuple[str, list[_Command]]]:
    """``[(operator after it, pipeline), …]``; only ``&&`` and ``;`` can be split safely."""
    chain: list[tuple[str, list[_Command]]] = []
    pipeline: list[_Command] = [_Command()]
    pending: Op | None = None  # a redirection waiting for its target word

    def close(joiner: str) -> None:
        nonlocal pipeline
        if pending is not None:
            raise Ambiguous("redirection without a target")
        if len(pipeline) == 1 and not pipeline[0].words and not pipeline[0].redirects:
            if joiner == "&&":
                raise Ambiguous("empty command before &&")
            pipeline = [_Command()]
            return  # blank line or trailing ';'
        if any(not c.words for c in pipeline):
            raise Ambiguous("empty command in a pipeline")
        chain.append((joiner, pipeline))
        pipeline = [_Command()]

    for token in tokens:
        current = pipeline[-1]
        if isinstance(token, Word):
            if pending is not None:
                current.redirects.append((pending, token))
                pending = None
            else:
                if not current.words and token.text in _SHELL_CONTROL:
                    raise Ambiguous(f"shell control {token.text!r}")
                current.words.append(token)
        elif token.text in _CHAIN:
            close(token.text)
        elif token.text == "|":
            if pending is not None or not current.words:
                raise Ambiguous("empty pipeline stage")
            pipeline.append(_Command())
        elif token.text in _WRITE_REDIRECTS | _READ_REDIRECTS | _DUP_REDIRECTS:
            if pending is not None:
                raise Ambiguous("redirection without a target")
            pending = token
        else:
            raise Ambiguous(f"operator {token.text!r}")
    close(";")
    if chain and chain[-1][0] == "&&":
        raise Ambiguous("trailing &&")
    if chain:
        chain[-1] = ("", chain[-1][1])
    return chain


def _cd(command: _Command, cwd: str | None, joiner_after: str) -> str | None:
    """The directory the rest of the chain runs in after ``cd``.

    After ``cd x; y``, ``y`` runs in ``x`` only if ``cd`` succeeded, which nothing tells:
    the directory is known only when it is the same either way.
    """
    args = command.words[1:]
    plain = (
        len(args) == 1
        and not args[0].dynamic
        and args[0].text not in ("", "-")
        and not args[0].text.startswith("-")
        and not command.redirects
    )
    target = _resolve(args[0].text, cwd) if plain else None
    if joiner_after == ";" and target != cwd:
        return None
    return target


def _resolve(path: str, cwd: str | None) -> str | None:
    if is_absolute(path):
        return resolve_path(path, "")
    if cwd is None:
        return None
    return resolve_path(path, cwd)


def _is_device(path: str) -> bool:
    return path == "/dev" or path.startswith("/dev/")


def _pipeline_reads(stages: Sequence[_Stage]) -> list[str]:
    """Files whose content reached the output: a read stage followed by filters only."""
    out: list[str] = []
    for k, stage in enumerate(stages):
        if stage.is_read and all(s.is_filter for s in stages[k + 1 :]):
            out.extend(stage.reads)
    return out


def _pipeline_lines(stages: Sequence[_Stage]) -> Lines | None:
    """The lines of its one file a read pipeline shows, when every stage keeps a range:
    each filter takes its range of the lines the stage before it printed."""
    first = stages[0]
    if len(first.reads) != 1 or first.lines is None:
        return None
    low, high = first.lines
    for stage in stages[1:]:
        if stage.lines is None:
            return None
        start, end = stage.lines
        shifted = None if end is None else low + end - 1
        low = low + start - 1
        high = shifted if high is None else high if shifted is None else min(high, shifted)
    return low, high


def _is_pure_read(stages: Sequence[_Stage]) -> bool:
    first, rest = stages[0], stages[1:]
    return (
        first.is_read
        and first.known
        and bool(first.reads)
        and all(s.is_filter for s in rest)
        and not any(s.writes for s in stages)
    )


# -- one simple command -------------------------------------------------------------------


def _stage(command: _Command, cwd: str | None) -> _Stage:
    redirect_writes: list[str] = []
    truncating: list[str] = []  # files a plain ``>`` replaces
    known = True
    stdin_redirected = False
    heredoc: str | None = None  # the here-document's body, when stdin is one
    for op, target in command.redirects:
        if op.text in _READ_REDIRECTS:
            stdin_redirected = True
            if op.text in HEREDOC_OPS:
                heredoc = op.body if op.body is not None else ""
            continue
        if op.text in _DUP_REDIRECTS:
            if target.text.isdigit() or target.text == "-":
                continue  # 2>&1, >&-: descriptors, not files
            if op.text == "<&" or op.fd:
                known = False  # not a plain form
                continue
            # bash reads '>&word' as '&>word'
        path = None if target.dynamic else _resolve(target.text, cwd)
        if path is None:
            known = False
        elif not _is_device(path):
            redirect_writes.append(path)
            if op.text in (">", ">|") and not op.fd:
                truncating.append(path)
    name = command.name
    args = command.words[1:]
    if name == "apply_patch":
        return _apply_patch(args, heredoc, cwd, tuple(redirect_writes), known)
    recognised = None
    if name is not None and not _ENV_ASSIGNMENT.match(name):
        recognised = _recognise(name, args, cwd)
    if recognised is None:
        return _Stage(writes=tuple(redirect_writes), known=False)
    reads, writes, files_known = recognised
    real_reads = tuple(p for p in reads if not _is_device(p))
    real_writes = tuple(p for p in writes if not _is_device(p))
    # tee copies its input to its output: still a filter when it writes files.
    is_filter = not reads and files_known and (not writes or name == "tee")
    # ``cat <<EOF > FILE`` (and nothing else): the command text holds the file's new content.
    whole_writes: tuple[str, ...] = ()
    if (
        name == "cat"
        and heredoc is not None
        and not args
        and len(redirect_writes) == 1
        and truncating == redirect_writes
        and known
    ):
        whole_writes = (truncating[0],)
    return _Stage(
        reads=real_reads,
        writes=tuple(redirect_writes) + real_writes,
        is_read=bool(real_reads) and not writes,
        is_filter=is_filter and not stdin_redirected and not redirect_writes,
        known=known and files_known,
        whole=name in _WHOLE_READERS and not redirect_writes,
        whole_writes=whole_writes,
        lines=line_range(name, args) if name and (len(real_reads) == 1 or is_filter) else None,
    )


def _apply_patch(
    args: Sequence[Word],
    heredoc: str | None,
    cwd: str | None,
    redirect_writes: tuple[str, ...],
    known: bool,
) -> _Stage:
    """Codex's ``apply_patch``, its patch the one argument (``["apply_patch", "*** Begin
    Patch…"]``) or a here-document (``apply_patch <<'EOF'``): the files the patch names,
    relative to where it ran. Codex takes the command over and applies the patch itself, so
    a patch it could not read wrote nothing we know of."""
    if len(args) == 1 and heredoc is None:
        text: str | None = args[0].text
    elif not args and heredoc is not None:
        text = heredoc
    else:
        text = None
    files = None if text is None else patch_files(text)
    if files is None:
        return _Stage(writes=redirect_writes, known=False)
    done = patch_writes(files)
    writes = [_resolve(p, cwd) for p in done.paths]
    whole = [_resolve(p, cwd) for p in done.whole]
    return _Stage(
        writes=redirect_writes + tuple(p for p in writes if p),
        known=known and all(p is not None for p in writes),
        whole_writes=tuple(p for p in whole if p) if not redirect_writes else (),
    )


def _recognise(
    name: str, args: Sequence[Word], cwd: str | None
) -> tuple[list[str], list[str], bool] | None:
    """(files read, files written, every file resolved) of a program we know, else ``None``.

    A program we know called without files is a filter of its stdin: ``([], [], True)``.
    """
    parsed = files_of(name, args)
    if parsed is None:
        return None
    read_words, write_words = parsed
    reads = [_resolve(w.text, cwd) for w in read_words]
    writes = [_resolve(w.text, cwd) for w in write_words]
    known = all(p is not None for p in (*reads, *writes))
    return [p for p in reads if p], [p for p in writes if p], known


# -- a sequence of calls ------------------------------------------------------------------


def may_change_directory(command: str) -> bool:
    """Whether a command we could not read might leave a persistent shell elsewhere."""
    return bool(_CHANGES_DIRECTORY.search(command))


def shell_root(workspace_root: str) -> str:
    """Where a shell starts when a call names no directory: the resolved workspace root."""
    return resolve_path(workspace_root, "") if workspace_root else ""


def effects_in_order(calls: Sequence[ShellCall], workspace_root: str) -> list[ShellEffect | None]:
    """The effect of each call, in the order they ran, following ``cd`` across calls.

    A call starts in its ``cwd`` parameter when it has one. Otherwise it starts in the
    workspace root for a shell that forgets its directory, and where the last ``cd`` left it
    for a shell that keeps it; the start is known only when the two agree (nothing has left
    the root, or a later ``cd`` came back to it).
    """
    root = shell_root(workspace_root)
    persistent: str | None = root
    out: list[ShellEffect | None] = []
    for call in calls:
        effect, persistent = next_effect(call, persistent, root)
        out.append(effect)
    return out


def next_effect(
    call: ShellCall, persistent: str | None, root: str
) -> tuple[ShellEffect | None, str | None]:
    """One step of :func:`effects_in_order`: the call's effect, and where a shell that keeps
    its directory is after it (``persistent`` is where it was before; ``None``: unknown).

    A step depends on nothing but its arguments, so a caller that keeps the directory after
    each call can redo the steps from a changed call on and stop where the directory agrees.
    """
    if call.cwd is not None:
        start: str | None = resolve_path(call.cwd, root)
    else:
        start = root if persistent == root else None
    effect = shell_effect(call.command, start)
    if effect is None:
        if may_change_directory(call.command):
            persistent = None
    elif effect.changes_directory:
        if call.succeeded and effect.final_cwd is not None:
            persistent = effect.final_cwd
        elif effect.final_cwd != persistent:
            persistent = None
    return effect, persistent
