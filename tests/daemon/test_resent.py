"""A conversation resent whole (edges/lsp/resent.py): the entries a client sent before are not
parsed again, and nothing else can pass for them.

The decoding is checked on real bodies as a client writes them; what a daemon does with them
(appends, forks, the error for a bad entry) over the real stdio transport, with bodies large
enough to take the resend path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.edges.daemon.conversation import Conversation, conversation
from hdcontext.edges.lsp.decode import Incoming, Refused
from hdcontext.edges.lsp.resent import MAX_RECORDS, MIN_BYTES, Resends
from tests.examples import examples

from .harness import start_daemon, text

BIG = [text("human", "a long paste " + "x" * MIN_BYTES), text("ai", "Read it.")]


def _body(entries: list[Any], session: str = "s", msg_id: int = 1, **params: Any) -> bytearray:
    message = {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "history/sync",
        "params": {"sessionId": session, "entries": entries, **params},
    }
    return bytearray(json.dumps(message).encode("utf-8"))


def _entries(item: Incoming | Refused) -> Conversation:
    assert isinstance(item, Incoming)
    entries = item.message["params"]["entries"]
    assert isinstance(entries, Conversation)
    return entries


def _synced(resends: Resends, entries: list[Any], session: str = "s") -> Conversation:
    """Decode a sync and settle it, as a daemon does when the sync succeeds."""
    conversation = _entries(resends.decode(_body(entries, session)))
    conversation.settle(conversation.digests())
    return conversation


def test_a_resend_parses_only_the_entries_after_those_sent_before() -> None:
    resends = Resends()
    first = _synced(resends, BIG)
    assert (first.known, first.total) == (0, 2)
    more = [*BIG, text("human", "next")]
    second = _synced(resends, more)
    assert (second.known, list(second)) == (2, [text("human", "next")])
    assert second.digests() == Conversation(more).digests()
    assert second.raw_from(0) == more  # a fork inside the known part reads their bytes
    assert second.raw_from(2) == [text("human", "next")]
    again = _entries(resends.decode(_body(more, msg_id=3)))
    assert (again.known, list(again)) == (3, [])


def test_only_a_sync_that_succeeded_leaves_a_record() -> None:
    resends = Resends()
    unsettled = _entries(resends.decode(_body(BIG)))
    assert unsettled.known == 0
    again = _entries(resends.decode(_body([*BIG, text("human", "next")])))
    assert again.known == 0 and again.total == 3


def test_small_bodies_and_other_methods_are_decoded_whole() -> None:
    resends = Resends()
    _synced(resends, BIG)
    small = resends.decode(_body([text("human", "hi")]))
    assert isinstance(small, Incoming)
    assert conversation(small.message["params"]).known == 0
    append = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "history/append",
            "params": {"sessionId": "s", "entries": BIG},
        }
    ).encode("utf-8")
    item = resends.decode(bytearray(append))
    assert isinstance(item, Incoming)
    assert item.message["params"]["entries"] == BIG
    assert not isinstance(item.message["params"]["entries"], Conversation)


def test_the_known_bytes_elsewhere_in_a_message_do_not_stand_for_its_entries() -> None:
    resends = Resends()
    _synced(resends, BIG)
    other = [text("human", "something else entirely")] * 2
    # The same bytes as the value of another "entries" key, written before the real one.
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "history/sync",
        "params": {"extra": {"entries": BIG}, "sessionId": "s", "entries": other},
    }
    item = resends.decode(bytearray(json.dumps(message).encode("utf-8")))
    conversation = _entries(item)
    assert (conversation.known, list(conversation)) == (0, other)


def test_a_changed_entry_in_the_known_part_is_read_as_sent() -> None:
    resends = Resends()
    _synced(resends, BIG)
    edited = [BIG[0], text("ai", "Read it, edited."), text("human", "next")]
    conversation = _entries(resends.decode(_body(edited)))
    assert (conversation.known, list(conversation)) == (0, edited)


def test_a_bad_new_value_is_refused_with_its_path_in_the_whole_array() -> None:
    resends = Resends()
    _synced(resends, BIG)
    body = _body([*BIG, {"speaker": "human", "blocks": [], "n": 0}])
    body = bytearray(body.replace(b'"n": 0', b'"n": 123456789012345678901234567890'))
    item = resends.decode(body)
    assert isinstance(item, Refused)
    assert "params.entries[2].n" in item.message and "64 bits" in item.message


def test_records_are_kept_for_the_sessions_synced_last() -> None:
    resends = Resends()
    for k in range(MAX_RECORDS + 1):
        _synced(resends, [text("human", f"session {k}"), *BIG], session=f"s{k}")
    newest = _entries(resends.decode(_body([text("human", f"session {MAX_RECORDS}"), *BIG])))
    assert newest.known == 3
    oldest = _entries(resends.decode(_body([text("human", "session 0"), *BIG], session="s0")))
    assert oldest.known == 0


# -- over the transport -----------------------------------------------------------------------


async def test_a_growing_conversation_resent_over_stdio_is_appended_turn_by_turn(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        conversation = list(BIG)
        first = await d.call("history/sync", {"sessionId": "chat", "entries": conversation})
        assert first["appended"] == 2
        for k in range(3):
            conversation += [text("human", f"ask {k}"), text("ai", f"answer {k}")]
            result = await d.call("history/sync", {"sessionId": "chat", "entries": conversation})
            assert (result["appended"], result["forkedAt"]) == (2, None)
        same = await d.call("history/sync", {"sessionId": "chat", "entries": conversation})
        assert (same["appended"], same["forkedAt"]) == (0, None)
        got = await d.call("history/get", {"sessionId": "chat", "view": "transcript"})
        assert [e["blocks"] for e in got["entries"]] == [e["blocks"] for e in conversation]


async def test_known_entries_a_session_does_not_hold_are_appended_from_their_bytes(
    storage: Path,
) -> None:
    """Two chats that start alike: the second's first sync finds the first's bytes, but
    its own session holds none of those entries, so they are read from the record."""
    async with start_daemon(storage) as d:
        await d.call("history/sync", {"sessionId": "one", "entries": BIG})
        both = [*BIG, text("human", "only in two")]
        result = await d.call("history/sync", {"sessionId": "two", "entries": both})
        assert (result["appended"], result["forkedAt"]) == (3, None)
        got = await d.call("history/get", {"sessionId": "two", "view": "transcript"})
        assert [e["blocks"] for e in got["entries"]] == [e["blocks"] for e in both]
        await d.call("history/clear", {"sessionId": "one"})
        after = await d.call("history/sync", {"sessionId": "one", "entries": both})
        working = await d.call("history/get", {"sessionId": "one", "view": "raw"})
        assert after["appended"] == 1
        assert [e["blocks"] for e in working["entries"]][-1] == both[-1]["blocks"]


async def test_a_bad_entry_after_known_ones_is_named_by_its_place_and_appends_nothing(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        await d.call("history/sync", {"sessionId": "chat", "entries": BIG})
        bad = [*BIG, text("human", "fine"), {"speaker": "robot", "blocks": []}]
        err = await d.fails("history/sync", {"sessionId": "chat", "entries": bad})
        assert err.code == -32602 and "entries[3]" in err.message
        got = await d.call("history/get", {"sessionId": "chat", "view": "transcript"})
        assert len(got["entries"]) == len(BIG)
        good = await d.call("history/sync", {"sessionId": "chat", "entries": bad[:3]})
        assert (good["appended"], good["forkedAt"]) == (1, None)


def test_a_record_is_kept_when_other_parameters_follow_the_entries() -> None:
    resends = Resends()
    first = _entries(resends.decode(_body(BIG, tags=["b"], note="]")))
    first.settle(first.digests())
    more = [*BIG, text("human", "next")]
    again = _entries(resends.decode(_body(more, msg_id=2, tags=["b"], note="]")))
    assert (again.known, list(again)) == (2, [text("human", "next")])


# -- every resend, whatever it changed ---------------------------------------------------------

_WORDS = st.sampled_from(["a", "b", "]", "[", '"entries": [', "é", "\\n", "x" * 40])
_ENTRY = st.builds(
    lambda speaker, words: text(speaker, " ".join(words)),
    st.sampled_from(["human", "ai"]),
    st.lists(_WORDS, min_size=1, max_size=4),
)
_STEP = st.one_of(
    st.tuples(st.just("append"), st.lists(_ENTRY, min_size=0, max_size=3)),
    st.tuples(st.just("edit"), st.integers(0, 20), _ENTRY),
    st.tuples(st.just("cut"), st.integers(1, 20)),
)
_WRITERS = [
    lambda m: json.dumps(m),
    lambda m: json.dumps(m, separators=(",", ":"), ensure_ascii=False),
    lambda m: json.dumps(m, indent=1),
    lambda m: json.dumps(m, sort_keys=True),
]


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(_STEP, st.integers(0, len(_WRITERS) - 1), st.sampled_from(["s", "t"])),
        min_size=1,
        max_size=8,
    )
)
def test_a_resend_reads_as_the_whole_body_would(steps: list[tuple[Any, int, str]]) -> None:
    """Whatever a client changes between syncs (appends, an edited or dropped entry, another
    way of writing its JSON, another session), the entries and digests a handler gets are
    those of the body decoded whole."""
    resends = Resends()
    entries: list[dict[str, Any]] = list(BIG)
    for n, (step, writer, session) in enumerate(steps):
        if step[0] == "append":
            entries = entries + step[1]
        elif step[0] == "edit":
            at = step[1] % len(entries)
            entries = [*entries[:at], step[2], *entries[at + 1 :]]
        else:
            entries = entries[: max(1, len(entries) - step[1])]
        message = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "history/sync",
            "params": {"sessionId": session, "entries": entries},
        }
        body = _WRITERS[writer](message).encode("utf-8")
        item = resends.decode(bytearray(body))
        got = conversation(_incoming(item).message["params"])
        assert got.total == len(entries)
        assert got.raw_from(0) == entries
        assert got.digests() == Conversation(entries).digests()
        got.settle(got.digests())


def _incoming(item: Incoming | Refused) -> Incoming:
    assert isinstance(item, Incoming)
    return item
