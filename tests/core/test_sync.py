"""history/sync in the core: a resent conversation, forks, compression, restarts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.content import IContent, parse_entries
from hdcontext.core.history.stored import Entries
from hdcontext.core.history.sync import entry_digest
from hdcontext.core.session.session import Session
from hdcontext.core.session.state import SessionState
from tests.examples import examples

OFF = {
    "compression.density.readWritePruning": False,
    "compression.density.fileDedupe": False,
}


def _entry(text: str, speaker: str = "human") -> dict[str, Any]:
    return {"speaker": speaker, "blocks": [{"type": "text", "text": text}]}


def _sync(session: Session, raw: list[dict[str, Any]]) -> tuple[int, int | None]:
    digests = [entry_digest(e) for e in raw]
    held = session.sync_point(digests)
    new = parse_entries(raw[held:])
    outcome = session.sync(held, digests, session.prepare(new))
    return outcome.appended, outcome.forked_at


def _blocks(entries: Any) -> list[Any]:
    return [e.blocks for e in entries]


conversations = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=0, max_size=8),
    min_size=1,
    max_size=8,
)


@settings(max_examples=examples(200), deadline=None)
@given(conversations)
def test_the_working_view_follows_every_resent_conversation(sends: list[list[str]]) -> None:
    session = Session("s", settings=lambda: OFF, clock=lambda: 1)
    sent: list[IContent] = []
    for words in sends:
        raw = [_entry(f"{i}:{w}", "human" if i % 2 else "ai") for i, w in enumerate(words)]
        before = len(session.history.transcript_json)
        appended, forked_at = _sync(session, raw)
        now = parse_entries(raw)
        assert _blocks(session.history.raw) == _blocks(now)
        common = 0
        while common < min(len(sent), len(now)) and _blocks(sent[common : common + 1]) == _blocks(
            now[common : common + 1]
        ):
            common += 1
        assert appended == len(now) - common
        assert forked_at == (common if common < len(sent) else None)
        assert len(session.history.transcript_json) == before + appended  # never lost
        sent = now


RAW = [_entry(f"turn {i} " + "word " * 40, "human" if i % 2 else "ai") for i in range(12)]


async def test_a_fork_after_truncation_keeps_what_compression_did() -> None:
    session = Session("s", settings=lambda: {"contextLimit": 400, **OFF}, clock=lambda: 1)
    session.set_override("compression.strategy", "top-down-truncation")
    _sync(session, RAW)
    await session.compact()
    kept = len(session.history.raw_json)
    assert kept < len(RAW)  # the oldest turns went
    edited = [*RAW[:-1], _entry("the last message, edited")]
    assert _sync(session, edited) == (1, len(RAW) - 1)
    assert _blocks(session.history.raw) == _blocks(parse_entries(edited[-kept:]))


async def test_a_fork_inside_a_summary_starts_again_from_the_transcript() -> None:
    async def summary(request: Any, values: Any) -> str:
        return "<state_snapshot>the middle</state_snapshot>"

    session = Session(
        "s", settings=lambda: {"contextLimit": 400, **OFF}, clock=lambda: 1, summarizer=summary
    )
    session.set_override("compression.strategy", "middle-out")
    _sync(session, RAW)
    await session.compact()
    assert "the middle" in session.history.raw.json().decode()
    edited = [*RAW[:4], _entry("an early message, edited")]
    assert _sync(session, edited) == (1, 4)
    assert _blocks(session.history.raw) == _blocks(parse_entries(edited))


def test_a_lineage_is_kept_as_runs_and_resumes_from_its_saved_state() -> None:
    """A conversation that never forked is one run, however long (a turn walks none of it);
    a fork makes two; the saved state brings a restarted session back to the same lineage."""
    session = Session("s", settings=lambda: OFF, clock=lambda: 1)
    conversation = [_entry(f"message {n}") for n in range(50)]
    _sync(session, conversation)
    assert session.export_state().lineage == ((0, 50),)
    edited = [*conversation[:49], _entry("the last message, edited")]
    assert _sync(session, edited) == (1, 49)
    state = session.export_state()
    assert state.lineage == ((0, 49), (50, 51))
    history = session.history
    restarted = Session("s", settings=lambda: OFF, clock=lambda: 1)
    restarted.history.restore(history.raw_json, history.tokens, history.transcript_json)
    restarted.import_state(SessionState.from_json(state.to_json()))
    assert _sync(restarted, [*edited, _entry("and one more")]) == (1, None)
    assert restarted.export_state().lineage == ((0, 49), (50, 52))


def test_a_session_filled_by_append_is_synced_against_what_it_holds() -> None:
    session = Session("s", settings=lambda: OFF, clock=lambda: 1)
    raw = [_entry("hello"), _entry("hi", "ai")]
    session.append(parse_entries(raw))
    assert _sync(session, [*raw, _entry("more")]) == (1, None)


def test_digests_do_not_depend_on_key_order() -> None:
    a = {"speaker": "human", "blocks": [{"type": "text", "text": "x"}]}
    b = {"blocks": [{"text": "x", "type": "text"}], "speaker": "human"}
    assert entry_digest(a) == entry_digest(b)
    assert entry_digest(a) != entry_digest({**a, "speaker": "ai"})


def _restarted(session: Session) -> Session:
    """The session as a restarted daemon loads it: its entries and saved state, no digests."""
    history = session.history
    restarted = Session("s", settings=lambda: OFF, clock=lambda: 1)
    restarted.history.restore(history.raw_json, history.tokens, history.transcript_json)
    restarted.import_state(SessionState.from_json(session.export_state().to_json()))
    return restarted


def test_after_a_restart_a_resent_conversation_is_compared_without_parsing_it(
    monkeypatch: Any,
) -> None:
    """Each stored entry is compared by its JSON read back as it is (orjson), not parsed
    into IContent first: four times faster, and a resumed conversation compares them all."""
    session = Session("s", settings=lambda: OFF, clock=lambda: 1)
    conversation = [_entry(f"message {n}", "human" if n % 2 else "ai") for n in range(20)]
    _sync(session, conversation)
    restarted = _restarted(session)

    def parsed(self: Any, index: Any) -> Any:
        raise AssertionError("a stored entry was parsed to be compared")

    monkeypatch.setattr(Entries, "__getitem__", parsed)
    assert restarted.sync_point([entry_digest(e) for e in conversation]) == 20


def test_an_entry_orjson_cannot_read_back_is_compared_the_slow_way() -> None:
    """A lone surrogate (which a client may send and the daemon stores escaped) is refused by
    orjson: that entry is compared as its parsed form gives it, and still counts as held."""
    session = Session("s", settings=lambda: OFF, clock=lambda: 1)
    conversation = [_entry("before"), _entry("half of a pair: \ud800", "ai"), _entry("after")]
    _sync(session, conversation)
    restarted = _restarted(session)
    assert _sync(restarted, [*conversation, _entry("and one more", "ai")]) == (1, None)


def test_after_a_restart_entries_sent_with_a_null_metadata_are_still_held() -> None:
    """A client may write ``"metadata": null`` (no metadata). The daemon stamps such an entry
    with a timestamp; read back after a restart, it must still match what the client sends
    again, or the whole conversation would fork at its first entry."""
    session = Session("s", settings=lambda: OFF, clock=lambda: 1)
    conversation = [
        {**_entry(f"message {n}", "human" if n % 2 else "ai"), "metadata": None} for n in range(6)
    ]
    assert _sync(session, conversation) == (6, None)
    restarted = _restarted(session)
    assert restarted.sync_point([entry_digest(e) for e in conversation]) == 6
    assert _sync(restarted, [*conversation, _entry("and one more")]) == (1, None)
