"""The ``hdcontext`` command line: ``compact`` a conversation file, ``convert`` it between
formats, ``serve`` the daemon."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.compression.factory import STRATEGY_NAMES
from ..core.compression.types import CompressionError, SummarizerError
from ..core.content import IContent
from ..core.session import CompactResult, Session
from ..core.settings import SettingError
from ..core.tokens import ENCODING_NAME, count_text
from ..formats.conversation import EXPORT_FORMATS, IMPORT_FORMATS, Conversation, FormatError
from ..formats.exporters import ThinkingMode, export
from ..formats.importers import load


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hdcontext",
        description="Keep an AI agent's history dense: prune what a later write made stale, "
        "compress near the context limit.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    compact = sub.add_parser(
        "compact",
        help="run history/compact on a conversation file and report tokens by pass",
    )
    compact.add_argument("file", type=Path, help="a conversation (IContent JSON, or --format)")
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
        help="root that relative tool paths resolve against (default: the current directory)",
    )
    compact.add_argument("--json", action="store_true", help="print the CompactResult as JSON")
    convert = sub.add_parser(
        "convert",
        help="convert a conversation file to IContent or a provider's message format",
    )
    convert.add_argument("file", type=Path, help="a conversation file")
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
    serve = sub.add_parser(
        "serve",
        help="run the daemon: JSON-RPC with LSP framing on stdio (default) or a TCP socket",
    )
    serve.add_argument("--tcp", action="store_true", help="listen on a TCP socket, not stdio")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind with --tcp (default: loopback)"
    )
    serve.add_argument("--port", type=int, default=2087, help="port for --tcp (default: 2087)")
    serve.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="hdcontext's own log level on stderr (pygls stays at WARNING: it logs messages)",
    )
    return parser


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
) -> tuple[CompactResult, int, int]:
    """Load the entries into a fresh session and compact once; (result, entries, tokens) before."""

    async def export(_: Sequence[bytes]) -> str | None:
        return transcript_path

    session = Session("cli", workspace_root=lambda: workspace_root, export_transcript=export)
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
            f"{result.density.replacements} replaced · stale read→write entries "
            f"{m.read_write_pairs_pruned}, @file dedup {m.file_deduplications_pruned}, "
            f"recency {m.recency_pruned}"
        )
    lines.append(
        f"entries {before_entries} → {s.entry_count} · tokens {before_tokens:,} → "
        f"{s.total_tokens:,} ({s.percent:.1f}% of the limit) · over limit: "
        f"{'yes' if result.over_limit else 'no'}"
    )
    return "\n".join(lines)


def _read_conversation(path: Path, fmt: str) -> tuple[Conversation, str] | None:
    """The conversation in ``path``, or ``None`` after saying on stderr why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"hdcontext: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return None
    except UnicodeDecodeError as exc:
        print(f"hdcontext: {path} is not UTF-8 text: {exc.reason}", file=sys.stderr)
        return None
    try:
        return load(text, fmt)
    except FormatError as exc:
        what = "a conversation" if fmt == "auto" else f"a valid {fmt} conversation"
        print(f"hdcontext: {path} is not {what}:", file=sys.stderr)
        for line in str(exc).split("; ")[:20]:
            print(f"  {line}", file=sys.stderr)
        return None


def compact_main(args: argparse.Namespace) -> int:
    loaded = _read_conversation(args.file, args.format)
    if loaded is None:
        return 2
    conversation, fmt = loaded
    root = os.path.abspath(args.workspace_root or conversation.workspace_root or os.getcwd())
    try:
        result, n_before, t_before = asyncio.run(
            run_compact(conversation.entries, _overrides(args), root, str(args.file.resolve()))
        )
    except SettingError as exc:
        print(f"hdcontext: {exc}", file=sys.stderr)
        return 2
    except (SummarizerError, CompressionError) as exc:
        print(f"hdcontext: {exc}", file=sys.stderr)
        return 3
    if args.json:
        json.dump(result.to_wire(), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(f"{args.file.name}: {fmt} · workspace root {root}")
        if conversation.system is not None:
            tokens = count_text(conversation.system)
            print(f"system prompt: {tokens:,} tokens, kept aside (not part of the history)")
        print(_table(result, n_before, t_before))
    return 0


def convert_main(args: argparse.Namespace) -> int:
    loaded = _read_conversation(args.file, args.source)
    if loaded is None:
        return 2
    conversation, _ = loaded
    thinking: ThinkingMode = "reasoning_content" if args.reasoning_content else "drop"
    exported = export(conversation, args.target, thinking=thinking)
    text = json.dumps(exported.payload, ensure_ascii=False) + "\n"
    if args.output is not None:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"hdcontext: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    if exported.dropped:
        shown = ", ".join(f"{kind} ×{n}" for kind, n in exported.dropped.items())
        print(f"hdcontext: {args.target} cannot carry: {shown}", file=sys.stderr)
    return 0


def serve_main(args: argparse.Namespace) -> int:
    """``hdcontext serve``: the daemon, until the client sends ``exit`` or goes away."""
    from ..edges.server import configure_logging, serve_stdio, serve_tcp

    configure_logging(getattr(logging, args.log_level))
    if args.tcp:
        serve_tcp(args.host, args.port)
    else:
        serve_stdio()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "compact":
        return compact_main(args)
    if args.command == "convert":
        return convert_main(args)
    if args.command == "serve":
        return serve_main(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
