"""The proxy's cache marks: four slots at most, never shorter than the agent asked, and the
order Anthropic accepts, for every mix of the agent's marks and the daemon's breakpoints."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.edges.proxy import marks
from hdcontext.edges.proxy.marks import (
    FIVE_MINUTES,
    ONE_HOUR,
    AgentMarks,
    Ttl,
    count_marks,
    lift_head,
    place,
    read_marks,
    request_order_ok,
)
from tests.examples import examples


def _mark(ttl: Ttl | None) -> dict[str, Any]:
    return {} if ttl is None else {"cache_control": marks.control(ttl)}


def _body(
    tools: list[Ttl | None],
    system: list[Ttl | None],
    n_messages: int,
    automatic: Ttl | None = None,
    message_marks: dict[int, Ttl] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "tools": [{"name": f"t{k}", "input_schema": {}, **_mark(t)} for k, t in enumerate(tools)],
        "system": [{"type": "text", "text": f"s{k}", **_mark(t)} for k, t in enumerate(system)],
        "messages": [
            {
                "role": "user" if k % 2 == 0 else "assistant",
                "content": [
                    {"type": "text", "text": f"m{k}", **_mark((message_marks or {}).get(k))}
                ],
            }
            for k in range(n_messages)
        ],
    }
    if automatic is not None:
        body["cache_control"] = marks.control(automatic)
    return body


def _sent(body: dict[str, Any], breakpoints: list[int], ttls: list[str]) -> dict[str, Any]:
    """The request as the proxy builds it: the agent's message marks out, the daemon's in."""
    messages = body["messages"]
    agent = read_marks(body, messages)
    placed = place(agent, breakpoints, ttls, len(messages) - 1)
    out = {**body, **(lift_head(body) if placed.lift_head else {})}
    rebuilt = [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]
    for index, ttl in placed.marks:
        rebuilt[index]["content"][-1]["cache_control"] = marks.control(ttl)
    out["messages"] = rebuilt
    return out


def test_a_mark_asking_an_hour_reads_as_an_hour_and_any_other_as_the_default() -> None:
    assert marks.ttl_of({"type": "ephemeral", "ttl": "1h"}) == ONE_HOUR
    assert marks.ttl_of({"type": "ephemeral", "ttl": "5m"}) == FIVE_MINUTES
    assert marks.ttl_of({"type": "ephemeral"}) == FIVE_MINUTES
    assert marks.ttl_of(None) is None
    assert marks.ttl_of({}) is None
    assert marks.control(FIVE_MINUTES) == {"type": "ephemeral"}
    assert marks.control(ONE_HOUR) == {"type": "ephemeral", "ttl": "1h"}


def test_automatic_caching_with_tools_and_system_marks_never_gets_five_breakpoints() -> None:
    """The defect the issue found: tools, system, two message marks and the top-level one."""
    body = _body(["5m"], ["5m"], 12, automatic="5m")
    sent = _sent(body, [3, 7, 11], ["5m", "5m", "5m"])
    assert count_marks(sent) == 4
    # The top-level mark covers the tail: the daemon's breakpoint on the last message is
    # not placed again, and the slot goes to the next latest.
    assert "cache_control" not in sent["messages"][11]["content"][-1]
    assert "cache_control" in sent["messages"][7]["content"][-1]
    assert "cache_control" not in sent["messages"][3]["content"][-1]


def test_without_a_top_level_mark_the_daemons_latest_breakpoints_fill_the_slots() -> None:
    body = _body([], ["5m"], 12)
    sent = _sent(body, [1, 3, 7, 11], ["5m"] * 4)
    assert count_marks(sent) == 4
    marked = [k for k, m in enumerate(sent["messages"]) if "cache_control" in m["content"][-1]]
    assert marked == [3, 7, 11]


def test_an_agent_that_asks_an_hour_gets_an_hour_on_every_mark_through_the_proxy() -> None:
    body = _body(["1h"], ["1h"], 6, message_marks={5: "1h"})
    assert read_marks(body, body["messages"]).asks_long
    sent = _sent(body, [3, 5], ["5m", "5m"])
    written = [m["content"][-1].get("cache_control") for m in sent["messages"]]
    assert written[3] == written[5] == {"type": "ephemeral", "ttl": "1h"}
    assert request_order_ok(sent)


def test_an_hour_asked_only_on_a_message_mark_is_seen() -> None:
    body = _body([], ["5m"], 4, message_marks={3: "1h"})
    agent = read_marks(body, body["messages"])
    assert agent.asks_long
    sent = _sent(body, [3], ["5m"])
    assert sent["messages"][3]["content"][-1]["cache_control"]["ttl"] == "1h"
    # the agent's own five-minute system mark comes before it: lifted, or Anthropic refuses
    assert sent["system"][0]["cache_control"]["ttl"] == "1h"
    assert request_order_ok(sent)


def test_the_daemons_hour_lifts_five_minute_tools_and_system_marks() -> None:
    body = _body(["5m"], ["5m"], 8)
    sent = _sent(body, [3, 7], ["1h", "5m"])
    assert sent["tools"][0]["cache_control"]["ttl"] == "1h"
    assert sent["system"][0]["cache_control"]["ttl"] == "1h"
    assert sent["messages"][3]["content"][-1]["cache_control"]["ttl"] == "1h"
    assert sent["messages"][7]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert request_order_ok(sent)
    # the client's body is left as it came
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_five_minutes_everywhere_writes_the_usual_marks_and_lifts_nothing() -> None:
    body = _body(["5m"], ["5m"], 8)
    placed = place(read_marks(body), [3, 7], ["5m", "5m"], 7)
    assert not placed.lift_head
    assert placed.marks == ((3, "5m"), (7, "5m"))


def test_a_one_hour_top_level_mark_makes_every_message_mark_an_hour() -> None:
    body = _body([], [], 8, automatic="1h")
    placed = place(read_marks(body), [3, 5, 7], ["5m", "5m", "5m"], 7)
    assert placed.marks == ((3, "1h"), (5, "1h"))


def test_a_message_that_cannot_carry_a_mark_is_passed_over() -> None:
    placed = place(AgentMarks(), [2, 4], ["5m", "5m"], 5, markable=[True] * 4 + [False, True])
    assert placed.marks == ((2, "5m"),)


def test_order_check_refuses_an_hour_after_five_minutes() -> None:
    assert not request_order_ok(_body(["5m"], ["1h"], 2))
    assert request_order_ok(_body(["1h"], ["5m"], 2))
    assert not request_order_ok(_body([], [], 4, automatic="1h", message_marks={1: "5m"}))


_TTL = st.sampled_from([None, "5m", "1h"])


@settings(max_examples=examples(300), deadline=None)
@given(
    tools=st.lists(_TTL, max_size=3),
    system=st.lists(_TTL, max_size=3),
    n=st.integers(1, 14),
    automatic=_TTL,
    agent_messages=st.dictionaries(st.integers(0, 13), st.sampled_from(["5m", "1h"]), max_size=3),
    daemon=st.lists(st.tuples(st.integers(0, 13), st.sampled_from(["5m", "1h"])), max_size=5),
)
def test_every_request_is_one_anthropic_accepts_and_never_shorter_than_the_agents(
    tools: list[Ttl | None],
    system: list[Ttl | None],
    n: int,
    automatic: Ttl | None,
    agent_messages: dict[int, Ttl],
    daemon: list[tuple[int, str]],
) -> None:
    head = [t for t in tools + system if t is not None]
    # The agent's own head is the agent's: give it one Anthropic accepts, and at most four.
    if len(head) + (automatic is not None) > 4 or (
        "5m" in head and "1h" in head[head.index("5m") :]
    ):
        return
    # The daemon's lifetimes keep their order (its own rule): one-hour ones first.
    daemon = sorted(daemon)
    ttls = [ttl for _, ttl in daemon]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        ttls = sorted(ttls, key=lambda t: t != "1h")
    body = _body(tools, system, n, automatic, {k: t for k, t in agent_messages.items() if k < n})
    agent = read_marks(body, body["messages"])
    sent = _sent(body, [k for k, _ in daemon], ttls)
    assert count_marks(sent) <= 4
    assert request_order_ok(sent)
    if agent.asks_long:
        written = [
            m["content"][-1]["cache_control"]
            for m in sent["messages"]
            if "cache_control" in m["content"][-1]
        ]
        assert all(c.get("ttl") == "1h" for c in written)
