"""Orchestration of history/compact (REQ-HD-002, REQ-HD-013) on one Session."""

from __future__ import annotations

from typing import Any

import pytest

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.compression.types import SummarizeRequest, SummarizerError
from hdcontext.core.content import IContent, parse_entries
from hdcontext.core.density.engine import DensityEngine
from hdcontext.core.session.session import Session
from hdcontext.core.settings import SettingError, Settings
from hdcontext.core.tools.summary import DISK_POINTER

ROOT = "/ws"


def read(call_id: str, path: str, content: str, tool: str = "read_file") -> list[dict[str, Any]]:
    return [
        {
            "speaker": "ai",
            "blocks": [
                {
                    "type": "tool_call",
                    "id": call_id,
                    "name": tool,
                    "parameters": {"file_path": path},
                }
            ],
        },
        {
            "speaker": "tool",
            "blocks": [
                {"type": "tool_response", "callId": call_id, "toolName": tool, "result": content}
            ],
        },
    ]


def write(call_id: str, path: str, tool: str = "write_file") -> list[dict[str, Any]]:
    return [
        {
            "speaker": "ai",
            "blocks": [
                {
                    "type": "tool_call",
                    "id": call_id,
                    "name": tool,
                    "parameters": {"file_path": path, "content": "new"},
                }
            ],
        },
        {
            "speaker": "tool",
            "blocks": [
                {"type": "tool_response", "callId": call_id, "toolName": tool, "result": "ok"}
            ],
        },
    ]


def human(text: str) -> list[dict[str, Any]]:
    return [{"speaker": "human", "blocks": [{"type": "text", "text": text}]}]


def ai(text: str) -> list[dict[str, Any]]:
    return [{"speaker": "ai", "blocks": [{"type": "text", "text": text}]}]


def build(*parts: list[dict[str, Any]]) -> list[IContent]:
    return parse_entries([e for part in parts for e in part])


def session(clock_start: int = 1_000, **kwargs: Any) -> Session:
    ticks = iter(range(clock_start, clock_start + 1_000_000, 10))
    return Session("s1", workspace_root=lambda: ROOT, clock=lambda: next(ticks), **kwargs)


BIG = "line of file content\n" * 400


async def test_append_stamps_timestamps_and_keeps_given_ones() -> None:
    s = session()
    given = parse_entries(
        [
            {
                "speaker": "human",
                "blocks": [{"type": "text", "text": "x"}],
                "metadata": {"timestamp": 5},
            }
        ]
    )
    s.append([*given, *build(human("y"))])
    stored = list(s.history.transcript)
    assert stored[0].timestamp == 5
    assert stored[1].timestamp == 1_000
    assert s.version == 1 and s.dirty


async def test_req_hd_002_1_stale_read_is_pruned_before_the_threshold_check() -> None:
    s = session()
    s.append(build(human("go"), read("r1", "a.py", BIG), write("w1", "a.py"), ai("done")))
    before = s.history.total_tokens
    result = await s.compact()
    assert result.density is not None
    assert result.density.metadata.read_write_pairs_pruned == 2
    assert result.density.tokens_before == before
    assert result.density.tokens_after == s.history.total_tokens < before
    assert result.compression is None
    assert [step.name for step in result.steps] == ["optimize"]
    assert all(
        getattr(b, "id", None) != "r1" and getattr(b, "call_id", None) != "r1"
        for e in result.history
        for b in e.blocks
    )
    assert result.status.saved_tokens == before - s.history.total_tokens


async def test_req_hd_002_3_and_002_7_no_optimize_when_clean_and_flag_cleared_after() -> None:
    s = session()
    s.append(build(human("go"), ai("nothing to prune")))
    first = await s.compact()
    assert first.density is not None and first.density.removals == 0  # ran, found nothing
    assert s.dirty is False  # cleared even without changes
    second = await s.compact()
    assert second.density is None and second.steps == ()
    s.append(build(human("more")))
    assert (await s.compact()).density is not None


async def test_req_hd_002_5_empty_result_changes_nothing() -> None:
    s = session()
    s.append(build(human("go"), read("r1", "a.py", "x")))
    version = s.version
    await s.compact()
    assert s.version == version


async def test_req_hd_002_2_threshold_strategies_never_optimize() -> None:
    s = session()
    s.set_override("compression.strategy", "top-down-truncation")
    s.append(build(human("go"), read("r1", "a.py", BIG), write("w1", "a.py")))
    result = await s.compact()
    assert result.density is None
    assert len(s.history.raw) == 5


async def test_disk_write_after_a_read_makes_it_stale() -> None:
    """The seeds' rule removes the read; keeping the latest view, it becomes a pointer."""
    for keep in (False, True):
        s = session()
        s.set_override("compression.density.keepLatestView", keep)
        s.set_override("compression.density.schedule", "every-turn")
        s.append(build(human("go"), read("r1", "a.py", BIG), ai("read it")))
        await s.compact()
        assert len(s.history.raw) == 4
        s.note_write("/ws/a.py", 999_999_999)  # after every entry's timestamp
        assert s.dirty
        result = await s.compact()
        assert result.density is not None
        # entries touched: the call and its response, or the response alone
        assert result.density.metadata.read_write_pairs_pruned == (1 if keep else 2)
        if keep:
            assert len(s.history.raw) == 4
            assert DISK_POINTER in s.history.raw[2].model_dump_json()
        else:
            assert len(s.history.raw) == 2


async def test_disk_writes_are_ignored_when_watching_is_off() -> None:
    s = session()
    s.set_override("watch.enabled", False)
    s.append(build(human("go"), read("r1", "a.py", BIG)))
    s.note_write("/ws/a.py", 999_999_999)
    await s.compact()
    assert len(s.history.raw) == 3


async def test_disk_write_before_the_read_keeps_it() -> None:
    s = session(clock_start=5_000)
    s.note_write("/ws/a.py", 10)
    s.append(build(human("go"), read("r1", "a.py", BIG)))
    await s.compact()
    assert len(s.history.raw) == 3


async def test_pending_tokens_trigger_compression() -> None:
    s = session()
    s.set_override("contextLimit", 10_000)
    s.append(build(human("go"), *(read(f"r{i}", f"f{i}.py", BIG) for i in range(3)), ai("ok")))
    total = s.history.total_tokens
    assert total < 0.85 * 10_000
    quiet = await s.compact()
    assert quiet.compression is None
    s.dirty = True
    pushed = await s.compact(pending_tokens=int(0.85 * 10_000) - total + 1)
    assert pushed.compression is not None
    assert pushed.compression.strategy == "high-density"
    assert pushed.compression.tokens_after < pushed.compression.tokens_before


async def test_req_hd_002_8_emergency_path_and_over_limit() -> None:
    s = session()
    s.set_override("compression.strategy", "top-down-truncation")
    s.set_override("contextLimit", 200)
    # One human message that alone is over the limit: nothing can bring it under.
    s.append(build(human("word " * 2000), ai("ok")))
    result = await s.compact()
    names = [step.name for step in result.steps]
    assert names == ["compress", "emergency-compress"]
    assert result.over_limit is True


async def test_summarizer_failure_propagates_and_the_snapshot_puts_everything_back() -> None:
    async def failing(request: SummarizeRequest, settings: Settings) -> str:
        raise SummarizerError("client", "the editor has no language model")

    s = session(summarizer=failing)
    s.set_override("compression.strategy", "middle-out")
    s.set_override("contextLimit", 1_000)
    s.append(build(*(human(f"q{i} " + "x " * 60) + ai(f"a{i}") for i in range(12))))
    raw, version, saved = list(s.history.raw), s.version, s.saved_tokens
    assert s.history.total_tokens >= 0.85 * 1_000  # compression will run, and fail
    snap = s.snapshot()
    with pytest.raises(SummarizerError):
        await s.compact()
    s.restore(snap)
    assert (list(s.history.raw), s.version, s.saved_tokens) == (raw, version, saved)


async def test_optimize_exception_propagates_and_the_snapshot_puts_everything_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-HD-013.1: a failing optimize is an error the caller sees, never swallowed."""

    def broken(self: DensityEngine, history: object, config: object) -> None:
        raise RuntimeError("optimize failed")

    s = session()
    s.append(build(human("go"), read("r1", "a.py", BIG), write("w1", "a.py")))
    monkeypatch.setattr(DensityEngine, "proposals", broken)
    raw = list(s.history.raw)
    snap = s.snapshot()
    with pytest.raises(RuntimeError, match="optimize failed"):
        await s.compact()
    s.restore(snap)
    assert list(s.history.raw) == raw
    assert s.dirty is True  # the pass did not happen, so it must run next time


async def test_llm_compression_gets_prompt_todos_and_transcript_pointer() -> None:
    seen: list[SummarizeRequest] = []

    async def summarizer(request: SummarizeRequest, settings: Settings) -> str:
        seen.append(request)
        return "<state_snapshot>summary</state_snapshot>"

    async def export(_: object) -> str:
        return "/data/s1.jsonl"

    s = session(summarizer=summarizer, export_transcript=export)
    s.set_override("compression.strategy", "one-shot")
    s.set_override("contextLimit", 1_000)
    todo_call = {
        "speaker": "ai",
        "blocks": [
            {
                "type": "tool_call",
                "id": "t1",
                "name": "TodoWrite",
                "parameters": {
                    "todos": [
                        {
                            "content": "Fix the parser",
                            "status": "in_progress",
                            "activeForm": "Fixing",
                        },
                        {"content": "Ship it", "status": "completed", "activeForm": "Shipping"},
                    ]
                },
            }
        ],
    }
    todo_result = {
        "speaker": "tool",
        "blocks": [
            {"type": "tool_response", "callId": "t1", "toolName": "TodoWrite", "result": "ok"}
        ],
    }
    s.append(
        build(
            [todo_call, todo_result],
            *(human(f"q{i} " + "x " * 60) + ai(f"a{i}") for i in range(12)),
        )
    )
    transcript = list(s.history.transcript)
    result = await s.compact()
    assert result.compression is not None
    assert result.compression.transcript_path == "/data/s1.jsonl"
    (request,) = seen
    assert "<state_snapshot>" in request.prompt and "<user_directives>" in request.prompt
    rendered = "\n".join(b.text for m in request.messages for b in m.blocks if hasattr(b, "text"))
    assert "- [IN_PROGRESS] Fix the parser" in rendered  # REQ-HD-011.3, active todos only
    assert "] Ship it" not in rendered
    summary_text = result.history[0].blocks[0].text  # type: ignore[union-attr]
    assert "Full pre-compression transcript available at: /data/s1.jsonl" in summary_text
    assert list(s.history.transcript) == transcript


async def test_client_todos_win_until_a_newer_todo_write() -> None:
    from hdcontext.core.tools.todos import parse_todos

    s = session()
    s.append(build(human("go")))
    s.set_todos(parse_todos([{"id": "1", "content": "from client", "status": "pending"}]))
    assert [t.content for t in s.active_todos()] == ["from client"]
    s.append(
        parse_entries(
            [
                {
                    "speaker": "ai",
                    "blocks": [
                        {
                            "type": "tool_call",
                            "id": "t",
                            "name": "todo_write",
                            "parameters": {
                                "todos": [
                                    {"id": "9", "content": "from the agent", "status": "pending"}
                                ]
                            },
                        }
                    ],
                }
            ]
        )
    )
    assert [t.content for t in s.active_todos()] == ["from the agent"]


async def test_overrides_validate_and_report_sources() -> None:
    s = Session("s", settings=lambda: {"contextLimit": 50_000, "compression.threshold": 0.7})
    r = s.set_override("compression.threshold", 0.5)
    assert r.sources["compression.threshold"] == "override"
    assert r.sources["contextLimit"] == "settings"
    assert r.sources["compression.strategy"] == "default"
    with pytest.raises(SettingError):
        s.set_override("contextLimit", "lots")
    assert s.overrides == {"compression.threshold": 0.5}
    assert s.set_override("compression.threshold", None).values["compression.threshold"] == 0.7


async def test_status_reports_curated_tokens_and_percent() -> None:
    s = session()
    s.set_override("contextLimit", 1000)
    s.append(build(human("hello"), ai("  ")))
    st = s.status()
    assert st.entry_count == 1
    assert st.total_tokens == s.history.total_tokens
    assert st.to_wire()["percent"] == 100 * st.total_tokens / 1000
    assert st.to_wire()["threshold"] == 0.85


async def test_output_stays_provider_valid_across_every_strategy() -> None:
    async def summarizer(request: SummarizeRequest, settings: Settings) -> str:
        return "summary"

    history = build(
        human("start"),
        *(
            read(f"r{i}", f"f{i % 3}.py", BIG) + write(f"w{i}", f"f{(i + 1) % 3}.py")
            for i in range(6)
        ),
        ai("done"),
    )
    for name in ("high-density", "top-down-truncation", "middle-out", "one-shot"):
        s = session(summarizer=summarizer)
        s.set_override("compression.strategy", name)
        s.set_override("contextLimit", 3_000)
        s.append(history)
        stored = list(s.history.transcript)
        result = await s.compact()
        assert result.compression is not None, name
        assert pairing_problems(result.history) <= pairing_problems(history), name
        assert list(s.history.transcript) == stored
