"""How often the model asks again for what masking took: a proxy for what masking costs it.

Over the shared transcripts (``transcripts.find``: every conversation the importers read, each
sub-agent thread on its own, byte copies once), each conversation is replayed through a session
with the default settings (masking ``cold``), one ``history/compact`` per model call, as the
cache replay does: a call is made at its AI entry's timestamp (10 s after the previous one when
the transcript has none). Each output masked in a request the model answered counts once,
from the first such request on. It is *asked again* when a tool call the model made from that
request on

* runs the same tool with the same parameters (a re-run of the same command), with nothing
  but reads since the masked call: the same output again, most likely; or
* reads a file the masked call read (a read tool's path, or a plain shell read: ``cat``,
  ``head``, ``sed -n``…, as ``core/tools/shell/commands.py`` reads it).

A re-run made after the agent changed something (a write tool, or a shell command that is not
known to only look, ``READ_ONLY``, and may have written anything: ``python fix.py``) asks for a
new output, not
the masked one (tests run again after an edit, ``git status`` after a commit): it is counted
apart. Even so the count is an upper bound: the agents in these transcripts never saw a
pointer, and a model re-reads a file for other reasons too (it wants another part of it).
Nothing here is measured with a model in the loop.

The transcripts' own clocks leave the cache warm at almost every call (a pause of more than five
minutes is rare in them), so the same is counted a second time with every call cold (each call
made more than the cache's lifetime after the previous one): masking then takes everything the
rule allows, as soon as it allows it, which is the most it can cost the model.

``python -m bench.masking_reasks`` prints both counts and writes
``bench/results/masking_reasks.json``. It imports only ``hdcontext`` and ``transcripts.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.session.session import Session
from hdcontext.core.settings import resolve
from hdcontext.core.tools.files import extract_paths, resolve_path
from hdcontext.core.tools.shell.commands import ShellCall, command_of, cwd_of, effects_in_order
from hdcontext.core.tools.summary import is_masked

from .transcripts import Transcript, find

RESULTS = Path(__file__).resolve().parent / "results"
MODEL = "claude-sonnet-4"
STEP_MS = 10_000
"""Between two calls of a transcript that gives no time."""
COLD_GAP_MS = 3_600_000
"""Between two calls in the every-call-cold count: longer than any provider's cache life."""
READ_ONLY = frozenset(
    {"cd", "ls", "pwd", "cat", "head", "tail", "nl", "wc", "grep", "rg", "find", "tree", "stat"}
    | {"file", "du", "which", "echo", "sort", "uniq", "less", "diff"}
)
"""Programs that only look (a command made of them, with no redirect into a file and no
option that acts, changes nothing)."""
GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "branch", "blame", "ls-files"})
_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")
_ACTS = re.compile(r">|\s-(?:i|delete|exec|execdir|ok|fprint)\b|\s--in-place\b")


def _only_looks(command: str) -> bool:
    """Whether a shell command is made of ``READ_ONLY`` programs only (``git`` with a
    subcommand that only looks), with nothing written by a redirect or an acting option."""
    if _ACTS.search(command):
        return False
    for segment in _SEGMENTS.split(command):
        words = segment.split()
        if not words:
            continue
        if words[0] == "git":
            if len(words) < 2 or words[1] not in GIT_READ_ONLY:
                return False
        elif words[0] not in READ_ONLY:
            return False
    return True


@dataclass
class Reasks:
    conversations: int = 0
    calls: int = 0
    masked: int = 0
    """Outputs masked in a request the model then answered."""
    rerun: int = 0
    """Of those, outputs whose exact call the model made again later, with nothing but reads
    since the masked call."""
    reread: int = 0
    """Of those (not counted as re-runs), outputs of a read whose file the model read again."""
    rerun_after_change: int = 0
    """Outputs whose exact call the model made again after changing something since: a new
    output, not asked for again (counted apart)."""
    examples: list[str] = field(default_factory=list)

    @property
    def asked(self) -> int:
        return self.rerun + self.reread

    def add(self, other: Reasks) -> None:
        self.conversations += other.conversations
        self.calls += other.calls
        self.masked += other.masked
        self.rerun += other.rerun
        self.reread += other.reread
        self.rerun_after_change += other.rerun_after_change
        self.examples.extend(other.examples)


def _model_calls(entries: tuple[IContent, ...]) -> list[int]:
    """Indices of the entries a model call answers (every AI entry but a leading one)."""
    return [i for i, e in enumerate(entries) if e.speaker == "ai" and i > 0]


def _files_read(transcript: Transcript) -> tuple[dict[str, frozenset[str]], set[str]]:
    """Call id -> the files the call read (read tools by their paths, shell calls by the plain
    reads ``core/tools/shell/commands.py`` recognises, following ``cd`` from call to call);
    and the ids of the calls that may have changed something (write tools, shell calls that
    are not plain reads)."""
    values = resolve({}, {}).values
    read_tools, shell_tools = set(values.read_tools), set(values.shell_tools)
    write_tools = set(values.write_tools)
    root = transcript.root
    out: dict[str, frozenset[str]] = {}
    changes: set[str] = set()
    shell: list[tuple[str, ShellCall]] = []
    for entry in transcript.entries:
        entry_cwd = (entry.metadata.model_extra or {}).get("cwd") if entry.metadata else None
        for block in entry.blocks:
            if not isinstance(block, ToolCallBlock):
                continue
            if block.name in write_tools:
                changes.add(block.id)
            elif block.name in read_tools:
                found = extract_paths(block.parameters)
                if found is not None and not found[1]:
                    out[block.id] = frozenset(resolve_path(p, root) for p in found[0])
            elif block.name in shell_tools:
                command = command_of(block.parameters)
                if command is None or not _only_looks(command):
                    changes.add(block.id)  # unless core/tools/shell/ finds it a plain read
                if command is not None:
                    cwd = cwd_of(block.parameters) or (
                        entry_cwd if isinstance(entry_cwd, str) else None
                    )
                    shell.append((block.id, ShellCall(command, cwd, True)))
    effects = effects_in_order([c for _, c in shell], root)
    for (call_id, _), effect in zip(shell, effects, strict=True):
        if effect is not None and effect.reads:
            out[call_id] = frozenset(effect.reads)
        if effect is not None and effect.pure_read:
            changes.discard(call_id)
    return out, changes


SETTINGS: dict[str, dict[str, object]] = {
    "default (cold, keep 3)": {},
    "cold, keep 0": {"compression.density.maskRetention": 0},
    "always, keep 3": {"compression.density.masking": "always"},
}
"""The settings each count is made with."""


async def measure(
    transcript: Transcript, every_call_cold: bool = False, settings: dict[str, object] | None = None
) -> Reasks:
    """Replay one conversation with ``settings`` (the defaults otherwise); count what masking
    took from the requests and what the model asked for again afterwards."""
    entries = transcript.entries
    root = transcript.root
    values = dict(settings or {})
    session = Session(
        "reasks", settings=lambda: values, workspace_root=lambda: root, clock=lambda: 0
    )
    session.model = MODEL
    first_masked: dict[str, int] = {}  # call id -> the entry answering the first such request
    appended = 0
    clock = 0
    calls = _model_calls(entries)
    for i in calls:
        session.append(entries[appended:i])
        appended = i
        stamp = entries[i].timestamp
        if every_call_cold:
            clock += COLD_GAP_MS
        else:
            clock = stamp if stamp is not None else clock + STEP_MS
        result = await session.compact(at=clock)
        for entry in result.history:
            for block in entry.blocks:
                if isinstance(block, ToolResponseBlock) and is_masked(block.result):
                    first_masked.setdefault(block.call_id, i)
    out = Reasks(conversations=1, calls=len(calls), masked=len(first_masked))
    if not first_masked:
        return out
    made: list[tuple[int, ToolCallBlock]] = [
        (i, b)
        for i, e in enumerate(entries)
        if e.speaker == "ai"
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    ]
    by_id = {b.id: b for _, b in made}
    reads, changes = _files_read(transcript)
    order = {b.id: n for n, (_, b) in enumerate(made)}
    for call_id, since in first_masked.items():
        masked_call = by_id.get(call_id)
        if masked_call is None:
            continue
        later = [(n, b) for n, (i, b) in enumerate(made) if i >= since and b.id != call_id]
        files = reads.get(call_id, frozenset())
        again = [
            n
            for n, b in later
            if b.name == masked_call.name and b.parameters == masked_call.parameters
        ]
        start = order[call_id]
        changed = bool(again) and any(made[n][1].id in changes for n in range(start + 1, again[0]))
        what = f"{masked_call.name} {json.dumps(masked_call.parameters)[:80]}"
        if again and not changed:
            out.rerun += 1
            out.examples.append(f"{transcript.name}: {call_id} re-run: {what}")
        elif files and any(files & reads.get(b.id, frozenset()) for _, b in later):
            out.reread += 1
            shown = ", ".join(sorted(files))
            out.examples.append(f"{transcript.name}: {call_id} re-read {shown}")
        elif again:
            out.rerun_after_change += 1
    return out


async def measure_corpus(
    every_call_cold: bool = False, settings: dict[str, object] | None = None
) -> Reasks:
    total = Reasks()
    for transcript in find().transcripts:
        total.add(await measure(transcript, every_call_cold, settings))
    return total


def _line(label: str, r: Reasks) -> str:
    share = f"{100 * r.asked / r.masked:.1f}%" if r.masked else "–"
    return (
        f"{label:<44}{r.masked:>8}{r.asked:>8}{share:>8}"
        f"{r.rerun:>8}{r.reread:>9}{r.rerun_after_change:>15}"
    )


def main() -> None:
    started = time.perf_counter()
    report: dict[str, dict[str, object]] = {}
    lines: list[str] = []
    examples: list[str] = []
    for label, settings in SETTINGS.items():
        timed = asyncio.run(measure_corpus(settings=settings))
        cold = asyncio.run(measure_corpus(every_call_cold=True, settings=settings))
        report[label] = {"transcripts_clock": asdict(timed), "every_call_cold": asdict(cold)}
        lines.append(_line(f"{label}, own clocks", timed))
        lines.append(_line(f"{label}, every call cold", cold))
        if not settings:
            examples = cold.examples
    print(
        f"masking re-asks over {timed.conversations} conversations, {timed.calls} model calls "
        "(Anthropic-priced session)\n"
    )
    print(
        f"{'':<44}{'masked':>8}{'asked':>8}{'share':>8}{'re-run':>8}{'re-read':>9}"
        f"{'(re-run, new)':>15}"
    )
    print("\n".join(lines))
    print("\nasked again (default, every call cold):" + ("" if examples else " none"))
    for example in examples:
        print(f"  {example}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "masking_reasks.json").write_text(json.dumps(report, indent=2))
    print(f"\n({time.perf_counter() - started:.1f} s; bench/results/masking_reasks.json)")


if __name__ == "__main__":
    main()
