"""The cache-aware schedule's promise, over generated agent sessions: whatever the session does
and whenever it calls the model, what the provider bills for the requests hdcontext returns is
never more than what it would bill for the whole history (density off), call after call.

The bill is reckoned here on its own, as the providers describe their caches, not with the
daemon's ledger: Anthropic (and OpenAI from GPT-5.6 on) read from the cache up to the end of
the longest earlier request that the request still starts with and that was used within the
cache's lifetime; OpenAI before GPT-5.6 reads any prefix the previous request shares.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import IContent
from hdcontext.core.session import Session

from .builders import ai_call, ai_text, human, tool_result

OFF = {
    "compression.density.readWritePruning": False,
    "compression.density.fileDedupe": False,
    "compression.density.recencyPruning": False,
}
MODELS = {
    # model: (read, write, hits only at request ends, cache lifetime ms)
    "claude-sonnet-4": (0.1, 1.25, True, 300_000),
    "gpt-4.1": (0.1, 1.0, False, 300_000),
    "gpt-5.6": (0.1, 1.25, True, 1_800_000),
}
FILES = ("/w/a.py", "/w/b.py", "/w/c.py")


@dataclass
class Bill:
    """What one provider bills for a sequence of requests (lists of entry JSON)."""

    read: float
    write: float
    request_ends: bool
    ttl: int
    total: float = 0.0
    previous: list[bytes] = field(default_factory=list)
    previous_at: int | None = None
    ends: dict[int, int] = field(default_factory=dict)  # request end -> last used

    def call(self, request: list[bytes], tokens: list[int], at: int) -> None:
        shared = 0
        for old, new in zip(self.previous, request, strict=False):
            if old != new:
                break
            shared += 1
        if self.request_ends:
            live = {e: u for e, u in self.ends.items() if e <= shared and 0 <= at - u <= self.ttl}
            hit = max(live, default=0)
            if hit:
                live[hit] = at
            live[len(request)] = at
            self.ends = live
        else:
            warm = self.previous_at is not None and 0 <= at - self.previous_at <= self.ttl
            hit = shared if warm else 0
        held = sum(tokens[:hit])
        self.total += held * self.read + (sum(tokens) - held) * self.write
        self.previous, self.previous_at = request, at


LINES = st.integers(min_value=1, max_value=120)


@st.composite
def turns(draw: st.DrawFn) -> list[tuple[list[IContent], int]]:
    """Entries appended before each model call, and the seconds since the previous call."""
    out: list[tuple[list[IContent], int]] = []
    for n in range(1, draw(st.integers(min_value=2, max_value=18)) + 1):
        cid = f"c{n}"
        kind = draw(st.sampled_from(["read", "edit", "echo", "write", "bash", "todo", "talk"]))
        path = draw(st.sampled_from(FILES))
        size = draw(LINES)
        body = "".join(f"{k:>6}\u2192    value_{k} = compute({k})\n" for k in range(1, size + 1))
        entries: list[IContent]
        if kind == "read":
            entries = [ai_call(cid, "Read", {"file_path": path}), tool_result(cid, "Read", body)]
        elif kind in ("edit", "echo"):
            old = "x" * draw(st.integers(min_value=1, max_value=400))
            params = {"file_path": path, "old_string": old, "new_string": old + "y"}
            first = f"The file {path} has been updated. Here's a snippet of the edited file:\n"
            if kind == "echo":
                first = "Replaced 1 occurrences. Please review the changes.\n"
            entries = [ai_call(cid, "Edit", params), tool_result(cid, "Edit", first + body)]
        elif kind == "write":
            params = {"file_path": path, "content": body}
            entries = [ai_call(cid, "Write", params), tool_result(cid, "Write", "File written")]
        elif kind == "bash":
            entries = [
                ai_call(cid, "Bash", {"command": f"pytest -q tests/test_{n}.py"}),
                tool_result(cid, "Bash", f"line of output {n}\n" * size),
            ]
        elif kind == "todo":
            todos = [{"content": f"step {k}", "status": "pending"} for k in range(size % 9 + 1)]
            entries = [
                ai_call(cid, "TodoWrite", {"todos": todos}),
                tool_result(cid, "TodoWrite", "Todos have been modified successfully."),
            ]
        else:
            entries = [ai_text(f"Thinking about step {n}. " * size), human(f"go on ({n})")]
        gap = draw(st.sampled_from([5, 20, 60, 200, 400, 2_000]))
        out.append((entries, gap))
    return out


async def _replay(
    plan: list[tuple[list[IContent], int]], model: str, extra: dict[str, object]
) -> None:
    read, write, request_ends, ttl = MODELS[model]
    bills = {}
    sessions = {}
    for name, values in (("off", OFF), ("on", extra)):
        s = Session(name, settings=lambda v=values: v, workspace_root=lambda: "/w")
        s.model = model
        s.append([human("start")])
        sessions[name] = s
        bills[name] = Bill(read, write, request_ends, ttl)
    at = 1_000_000
    for entries, gap in plan:
        at += gap * 1_000
        for name, s in sessions.items():
            s.append(entries)
            result = await s.compact(at=at)
            assert not pairing_problems(list(result.history))
            history = s.history
            counts = dict(zip(history.raw_json, history.tokens, strict=True))
            request = list(result.history.blobs)
            bills[name].call(request, [counts[b] for b in request], at)
        # Never dearer than sending everything, at any call (rounding aside).
        assert bills["on"].total <= bills["off"].total * (1 + 1e-9) + 1e-6


SETTINGS = st.sampled_from(
    [
        {},
        {"compression.density.recencyPruning": True},
        {"compression.density.recencyPruning": True, "compression.density.recencyRetention": 1},
    ]
)


@settings(max_examples=150, deadline=None)
@given(plan=turns(), model=st.sampled_from(sorted(MODELS)), extra=SETTINGS)
def test_no_session_is_billed_more_than_for_the_whole_history(
    plan: list[tuple[list[IContent], int]], model: str, extra: dict[str, object]
) -> None:
    asyncio.run(_replay(plan, model, extra))
