"""Where the provider's cached prefixes end (``cache/prefixes.py``), and what the schedule
makes of it: a provider that caches only at request ends (Anthropic) loses, for an edit inside
the previous request, everything back to the end of the request before it."""

from __future__ import annotations

from hdcontext.core.cache import prefixes
from hdcontext.core.session import Session
from hdcontext.core.state import SessionState

from .builders import ai_call, ai_text, human, tool_result

TTL = 300_000


def test_live_ends_are_those_the_history_still_starts_with_and_the_cache_still_holds() -> None:
    earlier = ((3, 1_000), (7, 2_000), (12, 3_000))
    ends = prefixes.live(earlier, (20, 4_000), 4_500, TTL, unchanged=15)
    assert ends == ((3, 1_000), (7, 2_000), (12, 3_000))  # 20 is past the change at 15
    assert prefixes.live(earlier, (20, 4_000), 301_500, TTL, unchanged=20) == (
        (7, 2_000),
        (12, 3_000),
        (20, 4_000),
    )  # 3 was last used more than five minutes before
    assert prefixes.live((), None, 0, TTL, unchanged=10) == ()


def test_a_change_hits_the_last_end_at_or_before_it() -> None:
    ends = ((3, 0), (7, 0), (12, 0))
    assert [prefixes.hit(ends, i) for i in (0, 2, 3, 6, 7, 11, 12, 40)] == [
        0,
        0,
        3,
        3,
        7,
        7,
        12,
        12,
    ]


def test_the_end_a_call_hits_is_used_again_then() -> None:
    ends = ((3, 0), (7, 0), (12, 0))
    assert prefixes.after_call(ends, 9, 5_000) == ((3, 0), (7, 5_000))
    many = tuple((i, 0) for i in range(1, 100))
    assert len(prefixes.after_call(many, 200, 1)) == prefixes.MAX_ENDS


REVIEW = "Replaced 1 occurrences. Please review the changes.\n" + "".join(
    f"{n}: total = total + item.price  # line {n}\n" for n in range(1, 40)
)


async def _calls(model: str) -> list[str]:
    """Three model calls; the third could trim the edit's echo, which the second request
    ended with, right after a long answer of the model's that the second request began."""
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = model
    s.append([human("fix the total")])
    await s.compact(at=1_000)
    s.append(
        [
            ai_text("Let me think about this. " * 600),
            ai_call("e1", "Edit", {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"}),
            tool_result("e1", "Edit", REVIEW),
        ]
    )
    await s.compact(at=2_000)
    s.append([ai_text("Done.")])
    third = await s.compact(at=3_000)
    return [b.decode() for b in third.history.blobs]


async def test_an_edit_inside_the_previous_request_waits_where_the_cache_is_kept_at_its_ends() -> (
    None
):
    # Anthropic: trimming the echo would make it write the long answer again.
    anthropic = await _calls("claude-sonnet-4")
    assert any("# line 5" in blob for blob in anthropic)
    # OpenAI matches any shared prefix: the trim loses only the echo's own cache.
    openai = await _calls("gpt-4o")
    assert not any("# line 5" in blob for blob in openai)


async def test_the_ends_are_saved_with_the_session() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    for k in range(3):
        s.append([human(f"question {k}"), ai_text(f"answer {k}")])
        await s.compact(at=1_000 * (k + 1))
    state = s.export_state()
    # The first request's end was last read by the second call; the second's, by the third.
    assert state.cache.reply.earlier == ((2, 2_000), (4, 3_000))
    again = SessionState.from_json(state.to_json())
    assert again.cache.reply == state.cache.reply
