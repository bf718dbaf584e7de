"""The cache-aware schedule's promise, over generated agent sessions: whatever the session does
and whenever it calls the model, what the provider bills for the requests hdcontext returns, with
the breakpoints it names, is never more than what it would bill for the whole history (density
off, the breakpoints named the same way), call after call, under every price model.

The bill is reckoned by the bench's cost model (``bench/billing.py``), as the providers describe
their caches, not with the daemon's model of them: Anthropic caches only at breakpoints and finds
an entry at most 20 content blocks back, OpenAI from GPT-5.6 on caches at breakpoints with no
such limit, OpenAI before GPT-5.6 reads any prefix the previous request shares.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.billing import PRICE_MODELS, Bill, PriceModel
from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import IContent
from hdcontext.core.session.session import Session
from tests.examples import examples

from .builders import ai_call, ai_text, human, tool_result

OFF = {
    "compression.density.readWritePruning": False,
    "compression.density.fileDedupe": False,
    "compression.density.recencyPruning": False,
    "compression.density.masking": "off",
}
FILES = ("/w/a.py", "/w/b.py", "/w/c.py")


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
    plan: list[tuple[list[IContent], int]], price: PriceModel, extra: dict[str, object]
) -> None:
    bills = {}
    sessions = {}
    for name, values in (("off", OFF), ("on", extra)):
        chosen = {**values, "cache.maxBreakpoints": price.slots}
        s = Session(name, settings=lambda v=chosen: v, workspace_root=lambda: "/w")
        s.model = price.model
        s.append([human("start")])
        sessions[name] = s
        bills[name] = Bill(price)
    at = 1_000_000
    for entries, gap in plan:
        at += gap * 1_000
        for name, s in sessions.items():
            s.append(entries)
            result = await s.compact(at=at)
            parsed = list(result.history)
            assert not pairing_problems(parsed)
            history = s.history
            counts = dict(zip(history.raw_json, history.tokens, strict=True))
            request = list(result.history.blobs)
            breakpoints = [b + 1 for b in result.cache.breakpoints]
            assert breakpoints[-1] == len(request)
            assert len(breakpoints) <= price.slots
            blocks = [len(e.blocks) for e in parsed]
            bills[name].call(request, [counts[b] for b in request], blocks, breakpoints, at)
        # Never dearer than sending everything, at any call (rounding aside).
        assert bills["on"].total <= bills["off"].total * (1 + 1e-9) + 1e-6


SETTINGS = st.sampled_from(
    [
        {},
        {"compression.density.recencyPruning": True},
        {"compression.density.recencyPruning": True, "compression.density.recencyRetention": 1},
    ]
)


@settings(max_examples=examples(50), deadline=None)
@given(plan=turns(), price=st.sampled_from(sorted(PRICE_MODELS)), extra=SETTINGS)
def test_no_session_is_billed_more_than_for_the_whole_history(
    plan: list[tuple[list[IContent], int]], price: str, extra: dict[str, object]
) -> None:
    asyncio.run(_replay(plan, PRICE_MODELS[price], extra))
