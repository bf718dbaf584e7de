"""The ``hdcontext`` command line: ``compact`` a conversation file, ``convert`` it between
formats, ``serve`` the daemon, run the ``proxy``, see and delete stored ``sessions``
(``sessions.py``), see what the calls cost and saved (``stats``, ``stats.py``).

Whatever it prints or writes is provider-valid (``core.validity``), or it exits non-zero
with one line that says why; its exit codes are in ``EXIT_CODES``, shown by ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import NoReturn

from ..core.compression.factory import STRATEGY_NAMES
from ..core.compression.types import CompressionError, SummarizerError
from ..core.content import IContent
from ..core.prices import FALLBACK
from ..core.session.reply import CompactResult
from ..core.session.session import Session
from ..core.settings import SettingError
from ..core.tokens import ENCODING_NAME, count_text
from ..core.tools.files import is_absolute, resolve_path
from ..core.validity import problems, summary
from ..edges.daemon.retention import DEFAULT_DAYS, Retention
from ..formats.conversation import EXPORT_FORMATS, IMPORT_FORMATS, Conversation, FormatError
from ..formats.exporters import ThinkingMode, export
from ..formats.importers import ALL, AUTO, load, load_threads
from ..formats.importers.jsonl import decode
from .sessions import add_parser as add_sessions
from .sessions import main as sessions_main_with
from .sessions import retention_days
from .stats import add_parser as add_stats
from .stats import main as stats_main_with
from .storage_option import add_storage_option, storage_of

OK = 0
OVER_LIMIT = 1
BAD_INPUT = 2
COMPRESSION_FAILED = 3
NOT_VALID = 4

EXIT_CODES = f"""\
exit status:
  {OK}  done
  {OVER_LIMIT}  compact: the history is still over the context limit after compaction
     (it is printed all the same)
  {BAD_INPUT}  bad usage, or a file that cannot be read or holds no conversation
  {COMPRESSION_FAILED}  compression failed (an LLM strategy needs a summarizer)
  {NOT_VALID}  the history is not provider-valid and cannot be repaired (a tool result
     without its call, a call id used twice…): nothing is written"""

_LLM_HINT = (
    "hint: middle-out and one-shot summarize with an LLM, which the command line does not "
    "have; use --strategy high-density or top-down-truncation here, or run the LLM "
    "strategies through the daemon (hdcontext serve), where the editor's model writes the "
    "summary"
)

_RETENTION = (
    "a session no request has changed for that long is deleted, at start and then daily, "
    "and scrubbed from the database file with its exported transcript; 0 keeps a "
    "conversation only while it is in use (deleted an hour after its last request, the "
    "longest a provider's prompt cache lasts, and when the daemon stops); 'forever' keeps "
    "them all. It applies to every session of the storage folder (an editor's too, when the "
    "daemon and the proxy share it). 'hdcontext sessions' lists and deletes them"
)

_THREAD_HELP = (
    "Claude Code logs: which thread to read, 'main' or a sub-agent's id (agentId){all}; "
    "default: the main thread, else the file's only sub-agent thread"
)


class _Formatter(argparse.HelpFormatter):
    """Wraps a paragraph; keeps text laid out in lines (the exit codes) as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _version() -> str:
    try:
        return metadata.version("hdcontext")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hdcontext",
        description="Keep an AI agent's history dense: prune what a later write made stale, "
        "compress near the context limit.",
        epilog=EXIT_CODES,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"hdcontext {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    compact = sub.add_parser(
        "compact",
        help="run history/compact on a conversation file and report tokens by pass",
        description="Load a conversation file into a fresh session, run what history/compact "
        "runs (density passes, then compression near the limit) and print tokens before and "
        "after each pass, or the CompactResult as JSON.",
        epilog=EXIT_CODES,
        formatter_class=_Formatter,
    )
    compact.add_argument("file", type=Path, help="a conversation file (format detected)")
    compact.add_argument(
        "--format",
        choices=("auto", *IMPORT_FORMATS),
        default="auto",
        help="the file's format (default: detected from its shape)",
    )
    compact.add_argument("--strategy", choices=STRATEGY_NAMES, help="compression.strategy")
    compact.add_argument("--context-limit", type=int, help="contextLimit, in tokens")
    compact.add_argument(
        "--workspace-root",
        default=None,
        help="the directory relative tool paths resolve against (default: where the "
        "conversation says the agent ran, such as Claude Code's cwd or a trajectory's "
        "working directory; else the current directory)",
    )
    compact.add_argument("--json", action="store_true", help="print the CompactResult as JSON")
    _input_options(compact, allow_all=True)
    convert = sub.add_parser(
        "convert",
        help="convert a conversation file to IContent or a provider's message format",
        description="Write a conversation in another format; what that format cannot carry "
        "is named on stderr.",
        epilog=EXIT_CODES,
        formatter_class=_Formatter,
    )
    convert.add_argument("file", type=Path, help="a conversation file (format detected)")
    convert.add_argument(
        "--from",
        dest="source",
        choices=("auto", *IMPORT_FORMATS),
        default="auto",
        help="the file's format (default: detected from its shape)",
    )
    convert.add_argument("--to", dest="target", choices=EXPORT_FORMATS, required=True)
    convert.add_argument("--output", "-o", type=Path, help="write here instead of standard output")
    convert.add_argument(
        "--reasoning-content",
        action="store_true",
        help="openai: keep thinking in the non-standard 'reasoning_content' field "
        "(DeepSeek, vLLM); by default it is left out",
    )
    _input_options(convert, allow_all=False)
    serve = sub.add_parser(
        "serve",
        help="run the daemon: JSON-RPC with LSP framing on stdio (default) or a TCP socket",
        description="Run the hdcontext daemon: an editor (or any LSP client) opens sessions, "
        "appends the agent's conversation and asks for the history to send before each model "
        "call, with the methods of PROTOCOL.md (history/open, append, compact, get…). It "
        "speaks JSON-RPC with LSP framing on stdio, or on a TCP socket with --tcp (loopback "
        "unless --host says otherwise). It runs until the client "
        "sends 'exit' or goes away; sessions persist in SQLite under the client's storageDir.",
    )
    serve.add_argument("--tcp", action="store_true", help="listen on a TCP socket, not stdio")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind with --tcp (default: loopback)"
    )
    serve.add_argument(
        "--port", type=int, default=2087, help="port for --tcp (default: 2087; 0 picks a free one)"
    )
    add_storage_option(
        serve,
        "a folder is used when initialize names none (with --tcp the daemon locks it at start "
        "and writes its tcp-token there); a database whatever initialize names",
    )
    serve.add_argument(
        "--max-message-bytes",
        type=_positive,
        default=64 * 1024 * 1024,
        help="the largest message the daemon reads; a larger one is answered -32600 "
        "(default: 64 MiB)",
    )
    serve.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="hdcontext's own log level on stderr (pygls stays at WARNING: it logs messages)",
    )
    serve.add_argument(
        "--retention-days",
        type=retention_days,
        default=DEFAULT_DAYS,
        metavar="N|forever",
        help=f"days a session nobody uses is kept in the storage folder (default: "
        f"{DEFAULT_DAYS}; initializationOptions.retentionDays wins): {_RETENTION}",
    )
    proxy = sub.add_parser(
        "proxy",
        help="an Anthropic- and OpenAI-compatible endpoint on loopback that puts hdcontext "
        "in front of any agent",
        description="Serve POST /v1/messages (Anthropic) and POST /v1/chat/completions "
        "(OpenAI) on loopback: each request's conversation goes to an hdcontext session, is "
        "compacted against the provider's prompt cache, and goes upstream with the rest of "
        "the request as sent; the answer comes back unchanged. Any other path of those APIs "
        "and Gemini's goes to its own provider as it came; one of no API the proxy serves is "
        "answered by the proxy. Point an agent at it (ANTHROPIC_BASE_URL=http://127.0.0.1:PORT, "
        "or an OpenAI base URL of http://127.0.0.1:PORT/v1). What hdcontext cannot carry, or "
        "fails at, goes upstream as it came.",
    )
    proxy.add_argument(
        "--port", type=int, default=8787, help="port to listen on (default: 8787; 0 picks one)"
    )
    proxy.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: loopback; another one lets other machines in)",
    )
    proxy.add_argument(
        "--anthropic-upstream",
        default="https://api.anthropic.com",
        help="where Anthropic requests go (default: https://api.anthropic.com). Both upstreams "
        "are reached through the HTTP proxy HTTPS_PROXY (HTTP_PROXY for http://, ALL_PROXY) "
        "names, unless NO_PROXY names the host or it is on loopback, as the agent's SDK would",
    )
    proxy.add_argument(
        "--openai-upstream",
        default="https://api.openai.com/v1",
        help="where OpenAI requests go, as an OpenAI base URL (default: https://api.openai.com/v1)",
    )
    proxy.add_argument(
        "--gemini-upstream",
        default="https://generativelanguage.googleapis.com",
        help="where Gemini requests go (/v1beta/…, /v1/models/{model}:…, /upload/…; default: "
        "https://generativelanguage.googleapis.com). A request of no API the proxy serves, or "
        "one carrying another provider's key, is answered by the proxy and forwarded nowhere",
    )
    add_storage_option(
        proxy,
        f"where sessions persist (the folder: {default_storage()}, as serve's; locked while the "
        "proxy runs; a database is shared by any number of proxies)",
    )
    proxy.add_argument(
        "--bound-seconds",
        type=float,
        default=10.0,
        help="longest time hdcontext may take on a request before it goes upstream as it came "
        "(default: 10)",
    )
    proxy.add_argument(
        "--context-limit",
        type=_positive,
        default=None,
        help="contextLimit of the sessions the proxy opens, in tokens (default: the window of "
        "the model a request names, as the price table knows it: 200,000 for Claude, 272,000 "
        "for GPT-5's, 1,048,576 for Gemini's; the setting's 200,000 for a model it does not "
        "know)",
    )
    proxy.add_argument(
        "--cache-ttl",
        choices=["auto", "5m", "1h"],
        default="auto",
        help="the lifetime the proxy asks for Anthropic's prompt cache entries (cache.ttl): "
        "auto (default) lets each breakpoint live an hour where the session's pauses make "
        "that cheaper than a rewrite, five minutes elsewhere; 5m asks the provider's default; "
        "1h an hour everywhere. A lifetime the agent asked itself is never shortened",
    )
    proxy.add_argument(
        "--keep-warm",
        action="store_true",
        help="make refresh calls (cache.refresh): when a pause goes on and one small call "
        "before the prompt cache expires costs less than rewriting it after, the proxy makes "
        "it, with the key of the session's last request (held in memory only). Off by "
        "default: these are calls you did not make, billed to your key",
    )
    proxy.add_argument(
        "--retention-days",
        type=retention_days,
        default=DEFAULT_DAYS,
        metavar="N|forever",
        help="the proxy keeps every conversation in its storage folder (said at its first "
        f"start there); this is how many days one nobody uses is kept (default: "
        f"{DEFAULT_DAYS}): {_RETENTION}",
    )
    proxy.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the log on stderr: INFO says each request hdcontext compacted, WARNING each it "
        "sent as it came and why; DEBUG adds, per request, its size, the session's sync and "
        "compaction (entries in and out, passes, cache, breakpoints), hdcontext's time and "
        "the upstream's answer (status, time, usage). Never content, headers or keys",
    )
    add_sessions(sub, default_storage(), _Formatter)
    add_stats(sub, default_storage(), _Formatter)
    return parser


def _input_options(parser: argparse.ArgumentParser, allow_all: bool) -> None:
    every = ", or 'all' (each thread compacted on its own)" if allow_all else ""
    parser.add_argument(
        "--thread",
        default=AUTO,
        metavar="main|ID" + ("|all" if allow_all else ""),
        help=_THREAD_HELP.format(all=every),
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="JSON Lines logs: fail on a line that is not a JSON record (by default it is "
        "skipped with a warning that names the line)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0: {value}")
    return value


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {}
    if args.strategy:
        out["compression.strategy"] = args.strategy
    if args.context_limit is not None:
        out["contextLimit"] = args.context_limit
    return out


async def run_compact(
    entries: Sequence[IContent],
    overrides: dict[str, object],
    workspace_root: str,
    transcript_path: str | None,
    model: str | None = None,
) -> tuple[CompactResult, int, int]:
    """Load the entries into a fresh session and compact once; (result, entries, tokens) before.
    ``model``: what the session is priced as, and whether its thinking is bound
    (``core/history/thinking.py``); ``None`` takes Anthropic's rules, the strictest."""

    async def export(_: Sequence[bytes]) -> str | None:
        return transcript_path

    session = Session("cli", workspace_root=lambda: workspace_root, export_transcript=export)
    session.model = model
    for key, value in overrides.items():
        session.set_override(key, value)
    session.append(entries)
    before_entries = session.history.curated_count
    before_tokens = session.history.total_tokens
    return await session.compact(), before_entries, before_tokens


def _table(result: CompactResult, before_entries: int, before_tokens: int) -> str:
    s = result.status
    lines = [
        f"strategy {s.strategy} · context limit {s.context_limit:,} · threshold {s.threshold:g}"
        f" · tokens counted with {ENCODING_NAME}",
        "",
        f"{'pass':<20}{'tokens before':>15}{'tokens after':>15}{'saved':>10}",
        f"{'(input)':<20}{before_tokens:>15,}{before_tokens:>15,}{0:>10,}",
    ]
    for step in result.steps:
        saved = step.tokens_before - step.tokens_after
        lines.append(
            f"{step.name:<20}{step.tokens_before:>15,}{step.tokens_after:>15,}{saved:>10,}"
        )
    if not result.steps:
        lines.append("(no pass ran: nothing new to optimize and under the threshold)")
    if result.density is not None:
        m = result.density.metadata
        lines.append(
            f"\ndensity: {result.density.removals} entries removed, "
            f"{result.density.replacements} replaced · read→write entries "
            f"{m.read_write_pairs_pruned}, @file dedup {m.file_deduplications_pruned}, "
            f"recency {m.recency_pruned}, masked {m.masked_pruned}"
        )
    lines.append(
        f"entries {before_entries} → {s.entry_count} · tokens {before_tokens:,} → "
        f"{s.total_tokens:,} ({s.percent:.1f}% of the limit) · over limit: "
        f"{'yes' if result.over_limit else 'no'}"
    )
    return "\n".join(lines)


def _say(*parts: str) -> None:
    print("hdcontext: " + ": ".join(parts), file=sys.stderr)


def _read_text(path: Path) -> str | None:
    """The file as text; a log cut inside a character reads up to the cut (``jsonl.decode``)."""
    try:
        return decode(path.read_bytes())
    except OSError as exc:
        _say(f"cannot read {path}", str(exc.strerror))
    except UnicodeDecodeError as exc:
        _say(f"{path} is not UTF-8 text", str(exc.reason))
    return None


def _refuse(path: Path, fmt: str, exc: FormatError) -> None:
    """One line: what the file is not, and the first reason (with how many more)."""
    reasons = str(exc).split("; ")
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    if fmt == "auto" and path.suffix in (".yaml", ".yml"):
        _say(
            str(path),
            "YAML files (SWE-agent demonstrations) are not supported: give the .traj "
            "trajectory instead, or the same content as JSON",
        )
        return
    what = "a conversation hdcontext reads" if fmt == "auto" else f"a valid {fmt} conversation"
    _say(f"{path} is not {what}", reasons[0] + more)


def _read_threads(
    path: Path, fmt: str, thread: str, strict: bool
) -> tuple[list[tuple[str, Conversation]], str] | int:
    """The conversations ``--thread`` asks for, or the exit code after saying why not."""
    text = _read_text(path)
    if text is None:
        return BAD_INPUT
    try:
        if thread == ALL:
            threads, fmt_read = load_threads(text, fmt, strict=strict)
        else:
            conversation, fmt_read = load(text, fmt, strict=strict, thread=thread)
            threads = [(thread, conversation)]
    except FormatError as exc:
        _refuse(path, fmt, exc)
        return BAD_INPUT
    for name, conversation in threads:
        label = path.name if len(threads) == 1 else f"{path.name} [{name}]"
        for warning in conversation.warnings:
            _say(label, warning)
        if not conversation.entries:
            _say(label, "holds no messages")
            return BAD_INPUT
        found = problems(conversation.entries)
        if found:
            _say(label, f"not provider-valid, and cannot be repaired: {summary(found)}")
            return NOT_VALID
    return threads, fmt_read


def _workspace_root(args: argparse.Namespace, conversation: Conversation) -> str:
    root: str = args.workspace_root or conversation.workspace_root or os.getcwd()
    return resolve_path(root, "") if is_absolute(root) else os.path.abspath(root)


def _model(conversation: Conversation) -> str | None:
    """The model the conversation names; else, when its format says whose API it spoke, that
    provider's stand-in for a model it does not know (``prices.FALLBACK``): an old Codex
    rollout names no model, but its thinking is OpenAI's, which no prefix check binds."""
    if conversation.model is not None:
        return conversation.model
    return FALLBACK.get(conversation.provider or "")


def compact_main(args: argparse.Namespace) -> int:
    read = _read_threads(args.file, args.format, args.thread, args.strict)
    if isinstance(read, int):
        return read
    threads, fmt = read
    outcome = OK
    results: dict[str, object] = {}
    for name, conversation in threads:
        label = args.file.name if len(threads) == 1 else f"{args.file.name} [{name}]"
        code, result = _compact_one(args, label, conversation, fmt)
        if result is None:
            return code
        outcome = max(outcome, code)
        results[name] = result
    if args.json:
        payload = next(iter(results.values())) if len(results) == 1 else results
        json.dump(payload, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    return outcome


def _compact_one(
    args: argparse.Namespace, label: str, conversation: Conversation, fmt: str
) -> tuple[int, object | None]:
    """(exit code, the result as JSON) of one conversation; the table is printed here."""
    root = _workspace_root(args, conversation)
    try:
        result, n_before, t_before = asyncio.run(
            run_compact(
                conversation.entries,
                _overrides(args),
                root,
                str(args.file.resolve()),
                _model(conversation),
            )
        )
    except SettingError as exc:
        _say(str(exc))
        return BAD_INPUT, None
    except (SummarizerError, CompressionError) as exc:
        _say(str(exc))
        if isinstance(exc, SummarizerError):
            print(f"hdcontext: {_LLM_HINT}", file=sys.stderr)
        return COMPRESSION_FAILED, None
    found = problems(result.history)
    if found:  # a bug in a pass, never the input's fault: say so rather than print it
        _say(label, f"compaction left the history not provider-valid: {summary(found)}")
        return NOT_VALID, None
    if not args.json:
        named = f" · model {conversation.model}" if conversation.model else ""
        print(f"{label}: {fmt} · workspace root {root}{named}")
        if conversation.incomplete is not None:
            print(
                f"incomplete input: {conversation.incomplete} skipped, not JSON records; "
                "the figures below count what could be read"
            )
        if conversation.system is not None:
            tokens = count_text(conversation.system)
            print(f"system prompt: {tokens:,} tokens, kept aside (not part of the history)")
        print(_table(result, n_before, t_before))
    if result.over_limit:
        s = result.status
        _say(
            label,
            f"still over the context limit after compaction: {s.total_tokens:,} tokens "
            f"of {s.context_limit:,} (strategy {s.strategy})",
        )
        return OVER_LIMIT, result.to_wire()
    return OK, result.to_wire()


def convert_main(args: argparse.Namespace) -> int:
    if args.thread == ALL:
        _say("convert writes one conversation: --thread main or a sub-agent's id, not all")
        return BAD_INPUT
    read = _read_threads(args.file, args.source, args.thread, args.strict)
    if isinstance(read, int):
        return read
    threads, _ = read
    _, conversation = threads[0]
    thinking: ThinkingMode = "reasoning_content" if args.reasoning_content else "drop"
    exported = export(conversation, args.target, thinking=thinking)
    if exported.problems:
        noun = "entry" if args.target == "icontent" else "message"
        _say(
            args.file.name,
            f"the {args.target} output would not be provider-valid, nothing written: "
            f"{summary(exported.problems, noun)}",
        )
        return NOT_VALID
    text = json.dumps(exported.payload, ensure_ascii=False) + "\n"
    if args.output is not None:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            _say(f"cannot write {args.output}", str(exc.strerror))
            return BAD_INPUT
    else:
        sys.stdout.write(text)
    if exported.dropped:
        shown = ", ".join(f"{kind} ×{n}" for kind, n in exported.dropped.items())
        _say(f"{args.target} cannot carry", shown)
    return OK


def serve_main(args: argparse.Namespace) -> int:
    """``hdcontext serve``: the daemon, until the client sends ``exit`` or goes away (stdio),
    or until interrupted (TCP, which prints ``hdcontext listening on HOST:PORT`` first)."""
    from ..edges.lsp.logs import configure_logging
    from ..edges.lsp.tcp import serve_tcp
    from ..edges.lsp.transport import serve_stdio

    configure_logging(getattr(logging, args.log_level))
    given = storage_of(args.storage, default_storage())
    if isinstance(given, str):
        print(f"hdcontext: {given}", file=sys.stderr)
        return 2
    named = args.storage is not None or given.url is not None
    retention = Retention(args.retention_days)
    if args.tcp:
        code = serve_tcp(
            args.host,
            args.port,
            storage=given,
            max_body=args.max_message_bytes,
            retention=retention,
            token_folder=default_storage(),
        )
    else:  # initialize's storageDir wins over a folder only said by default
        code = serve_stdio(given if named else None, args.max_message_bytes, retention)
    _leave(code)


def _leave(code: int) -> NoReturn:
    """End the daemon now that its work is done (its store closed, its watcher stopped, its
    answers written): flush what is buffered and exit without the interpreter's teardown.

    Tearing down the thousands of objects of the protocol's types took 0.3-0.4 s after ``exit``
    on every stop, time an editor waits for before it closes (and every test that starts a
    daemon paid it). Nothing is left to run at that point: no thread of ours, no atexit hook."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def proxy_main(args: argparse.Namespace) -> int:
    """``hdcontext proxy``: until interrupted (exit 3 when another daemon has the folder)."""
    from ..edges.lsp.logs import configure_logging
    from ..edges.proxy.run import serve_proxy

    configure_logging(getattr(logging, args.log_level))
    given = storage_of(args.storage, default_storage())
    if isinstance(given, str):
        print(f"hdcontext: {given}", file=sys.stderr)
        return 2
    return serve_proxy(
        host=args.host,
        port=args.port,
        storage=given,
        anthropic=args.anthropic_upstream,
        openai=args.openai_upstream,
        gemini=args.gemini_upstream,
        bound_s=args.bound_seconds,
        context_limit=args.context_limit,
        retention=Retention(args.retention_days),
        cache_ttl=args.cache_ttl,
        keep_warm=args.keep_warm,
    )


def default_storage() -> Path:
    """The storage folder the daemon and the proxy use when none is named."""
    import platformdirs

    return Path(platformdirs.user_data_dir("hdcontext", appauthor=False))


def sessions_main(args: argparse.Namespace) -> int:
    """``hdcontext sessions``: list, show, delete, prune (sessions.py)."""
    return sessions_main_with(args, default_storage())


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "compact":
        return compact_main(args)
    if args.command == "convert":
        return convert_main(args)
    if args.command == "serve":
        return serve_main(args)
    if args.command == "proxy":
        return proxy_main(args)
    if args.command == "sessions":
        return sessions_main(args)
    if args.command == "stats":
        return stats_main_with(args, default_storage())
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
