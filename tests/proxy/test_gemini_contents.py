"""Gemini's contents as the proxy carries them, without a server: every content of the real
Gemini CLI requests and checkpoints comes back as it came, the cases that must not, the
signature a pruned parallel call gets, the validity rules on contents without ids, and the
usage of an answer in each of its three forms."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.content import IContent
from hdcontext.core.validity import gemini_turn, turn_calls, turn_problems
from hdcontext.edges.proxy.api import Unsupported
from hdcontext.edges.proxy.gemini import GeminiApi, model_of
from hdcontext.edges.proxy.usage import StreamUsage, from_json, gemini_billed
from hdcontext.formats.exporters.gemini import export_entry
from hdcontext.formats.gemini_parts import SKIP_SIGNATURE
from hdcontext.formats.importers.gemini_contents import from_contents

from .fake_gemini import USAGE, chunk_responses, signature, whole

API = GeminiApi()
TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "gemini"
RESEARCH = Path("/work/research/gemini/runs")
REAL = sorted(TRANSCRIPTS.rglob("checkpoint-*.json")) + sorted(RESEARCH.glob("*/requests/*.body"))


def _contents(path: Path) -> list[Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else data.get("contents", [])


def test_the_real_contents_are_at_hand() -> None:
    if not REAL:
        pytest.skip("no Gemini checkpoints or recorded requests on this machine")
    assert any(p.name.startswith("checkpoint-") for p in REAL)


@pytest.mark.parametrize("path", REAL, ids=lambda p: "/".join(p.parts[-3:])[-70:])
def test_every_real_content_comes_back_as_it_came(path: Path) -> None:
    """Checkpoints of older Gemini CLIs (role before parts, calls without ids answered by
    responses with ids, inline PDFs) and every request Gemini CLI 0.61.0 made in the
    research runs: each content is read and written back equal, keys in their order, but
    the one request of a resumed session, whose responses the CLI doubled."""
    contents = _contents(path)
    if path.parent.parent.name == "resume" and path.name.startswith("0005"):
        with pytest.raises(Unsupported, match=r"contents\[2\]\.parts\[1\].*answers no call"):
            API.check(contents, 0)
        return
    API.check(contents, 0)
    entries = API.import_messages(contents)
    again = [c for e in entries for c in export_entry(e)]
    assert json.dumps(again) == json.dumps(contents)


def _model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts), "role": "model"}


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts), "role": "user"}


def _call(call_id: str | None, name: str = "read_file", sig: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"args": {"file_path": f"/{name}"}, "name": name}
    if call_id is not None:
        call = {"id": call_id, **call}
    part: dict[str, Any] = {"functionCall": call}
    if sig is not None:
        part["thoughtSignature"] = sig
    return part


def _answer(call_id: str | None, name: str = "read_file", output: Any = "x") -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"output": output}}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


ASK = _user({"text": "go"})


@pytest.mark.parametrize(
    "contents",
    [
        [ASK, _model({"thoughtSignature": signature("bare")}, _call("a")), _user(_answer("a"))],
        [
            ASK,
            _model({"text": "t", "thought": True, "thoughtSignature": "s"}),
            _user({"text": "k"}),
        ],
        [{"parts": [{"text": "no role"}]}, _model({"text": "ok"})],
        [ASK, _model(_call(None), _call(None)), _user(_answer(None), _answer(None))],
        [ASK, _model(_call("a")), _user({"text": "first"}, _answer("a"), {"text": "then"})],
        [
            ASK,
            _model(_call("a")),
            _user(
                {"functionResponse": {"id": "a", "name": "read_file", "response": {"error": "no"}}}
            ),
        ],
        [ASK, _model(_call("a")), _user(_answer("a", output={"files": ["b"], "n": 1}))],
        [_user({"inlineData": {"mimeType": "image/png", "data": "AA=="}, "mediaResolution": "x"})],
        [
            ASK,
            _model(
                {"executableCode": {"language": "PYTHON", "code": "1"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
            ),
        ],
    ],
    ids=[
        "signature only",
        "thought",
        "no role",
        "no ids",
        "text around a response",
        "error",
        "object result",
        "media with a side key",
        "code execution",
    ],
)
def test_contents_of_every_shape_come_back_as_they_came(contents: list[Any]) -> None:
    API.check(contents, 0)
    entries = API.import_messages(contents)
    assert len(entries) == len(contents)  # one entry a content
    assert json.dumps([c for e in entries for c in export_entry(e)]) == json.dumps(contents)


def test_a_call_id_made_up_is_the_same_whatever_part_is_read() -> None:
    """Ids made up for calls without one count contents from the body's start, so the
    conversation read whole and read from a later message give the same entries."""
    contents = [ASK, _model(_call(None)), _user(_answer(None)), _model(_call(None))]
    whole_read = API.import_messages(contents)
    tail = API.import_messages(contents[3:], 3)
    assert tail[0].to_wire() == whole_read[3].to_wire()


def _without_first_call(entry: IContent) -> IContent:
    blocks = list(entry.blocks)
    first = next(k for k, b in enumerate(blocks) if type(b).__name__ == "ToolCallBlock")
    return entry.with_blocks(blocks[:first] + blocks[first + 1 :])


def test_a_parallel_call_left_first_gets_the_documented_signature() -> None:
    """The model signs only the first of parallel calls, and Gemini 3 refuses a step whose
    first call has none: when pruning takes the signed one, the next goes with
    ``skip_thought_signature_validator``. Unpruned, nothing changes; a content whose first
    call came unsigned stays unsigned."""
    signed = _model({"text": "both"}, _call("a", sig="S"), _call("b"))
    (entry,) = from_contents([signed], exact=True)
    assert export_entry(entry) == [signed]
    (pruned,) = export_entry(_without_first_call(entry))
    assert pruned["parts"] == [{"text": "both"}, {**_call("b"), "thoughtSignature": SKIP_SIGNATURE}]
    unsigned = _model(_call("a"), _call("b"))
    (entry,) = from_contents([unsigned], exact=True)
    assert export_entry(_without_first_call(entry)) == [_model(_call("b"))]


def test_calls_without_ids_pair_by_place_in_each_turn() -> None:
    """Gemini pairs id-less calls with the responses after them by name and order: the
    same name in a later turn is no second use of an id, a response short is."""
    turns = [
        gemini_turn(c)
        for c in [
            ASK,
            _model(_call(None), _call(None)),
            _user(_answer(None), _answer(None)),
            _model(_call(None)),
            _user(_answer(None)),
        ]
    ]
    assert all(t is not None for t in turns)
    checked = [t for t in turns if t is not None]
    assert turn_problems(checked) == []
    assert turn_calls(checked[1]) == ()  # nothing a later request's check needs
    short = [*checked[:2], gemini_turn(_user(_answer(None)))]
    assert [p.kind for p in turn_problems([t for t in short if t is not None])] == [
        "unanswered_call"
    ]


def test_bare_calls_answered_under_the_ids_the_cli_made_are_valid() -> None:
    """Older Gemini CLIs (their ``/chat save`` checkpoints, resumed) send the model's calls
    bare and answer them under ids the CLI made: Gemini pairs such a response with the
    oldest call of its name still unanswered, and so do the rules. Every request of those
    conversations was refused as breaking them once a call was in it, and went as it came.
    A response with an id no call made and no bare call of its name is still an orphan."""
    turns = [
        gemini_turn(c)
        for c in [
            ASK,
            _model(_call(None), _call(None, "glob")),
            _user(_answer("cli-1"), _answer("cli-2", "glob")),
            _model(_call(None), _call(None)),
            _user(_answer("cli-3"), _answer("cli-4")),
        ]
    ]
    checked = [t for t in turns if t is not None]
    assert turn_problems(checked) == []
    orphan = [
        *checked[:1],
        gemini_turn(_model(_call(None))),
        gemini_turn(_user(_answer("x", "glob"))),
    ]
    kinds = [p.kind for p in turn_problems([t for t in orphan if t is not None])]
    assert sorted(kinds) == ["orphan_response", "unanswered_call"]
    short = [
        *checked[:1],
        gemini_turn(_model(_call(None))),
        gemini_turn(_user(_answer("a"), _answer("b"))),
    ]
    kinds = [p.kind for p in turn_problems([t for t in short if t is not None])]
    assert kinds == ["orphan_response"]


def test_an_answer_of_nothing_comes_back_as_it_came() -> None:
    """An MCP tool that answered nothing is sent as ``"response": {}`` (Gemini CLI 0.3x and
    on): it went back as ``{"output": ""}``, so the request and every later one of its
    conversation went as they came. It comes back as it came, and once pruning gives it a
    pointer, the pointer is its output."""
    empty = {"functionResponse": {"name": "mcp_db_list", "response": {}, "id": "a"}}
    contents = [ASK, _model(_call("a", "mcp_db_list")), _user(empty)]
    API.check(contents, 0)
    entries = API.import_messages(contents)
    assert [c for e in entries for c in export_entry(e)] == contents
    block = entries[2].blocks[0]
    pruned = entries[2].with_blocks([block.model_copy(update={"result": "[pruned]"})])
    (written,) = export_entry(pruned)
    assert written["parts"][0]["functionResponse"]["response"] == {"output": "[pruned]"}


def test_only_generate_calls_are_carried() -> None:
    assert model_of("POST", "/v1beta/models/gemini-2.5-pro:generateContent") == "gemini-2.5-pro"
    assert model_of("POST", "/v1/models/gemini-3-flash:streamGenerateContent") == "gemini-3-flash"
    assert model_of("POST", "/v1beta/models/gemini-2.5-pro:countTokens") is None
    assert model_of("GET", "/v1beta/models/gemini-2.5-pro:generateContent") is None
    assert model_of("POST", "/v1beta/tunedModels/mine:generateContent") is None
    assert model_of("POST", "/v1beta/cachedContents") is None


# -- usage ------------------------------------------------------------------------------------

CALLED = [[{"text": "reading"}], [_call(None)]]
ANSWERED = [[{"text": "done, "}], [{"text": "all of it"}]]


def _sse(chunks: list[list[dict[str, Any]]]) -> bytes:
    responses = chunk_responses(chunks, "gemini-2.5-pro", USAGE)
    return b"".join(b"data: " + json.dumps(r).encode() + b"\r\n\r\n" for r in responses)


def _array(chunks: list[list[dict[str, Any]]]) -> bytes:
    responses = chunk_responses(chunks, "gemini-2.5-pro", USAGE)
    return ("[" + "\n,\r\n".join(json.dumps(r, indent=2) for r in responses) + "\n]").encode()


def _fed(data: bytes, seed: int) -> StreamUsage:
    """The stream read in pieces cut anywhere."""
    usage = StreamUsage("gemini")
    rng = random.Random(seed)
    at = 0
    while at < len(data):
        step = rng.randint(1, 64)
        usage.feed(data[at : at + step])
        at += step
    return usage


@pytest.mark.parametrize("form", ["json", "sse", "array"])
@pytest.mark.parametrize(("chunks", "waits"), [(CALLED, "tool"), (ANSWERED, "person")])
def test_usage_of_each_form(form: str, chunks: list[list[dict[str, Any]]], waits: str) -> None:
    """``promptTokenCount`` counts every input token, the cached among them; thinking is
    output; a call leaves the session waiting on the agent, an answer on a person."""
    responses = chunk_responses(chunks, "gemini-2.5-pro", USAGE)
    if form == "json":
        billed = from_json(json.dumps(whole(responses)).encode(), gemini_billed)
    else:
        billed = _fed(_sse(chunks) if form == "sse" else _array(chunks), seed=len(form)).billed
    assert billed is not None
    assert (billed.input_tokens, billed.cache_read_tokens, billed.cache_write_tokens) == (
        1300,
        1000,
        0,
    )
    assert billed.output_tokens == 7 + 5
    assert billed.waits_on == waits


def test_a_stream_cut_short_reads_no_usage_but_what_came() -> None:
    array = _array(ANSWERED)
    assert _fed(array[:-10], seed=1).billed is None  # no whole array: nothing read
    sse = _sse(ANSWERED)
    first = sse.index(b"\r\n\r\n") + 4
    partial = _fed(sse[:first], seed=2).billed  # the prompt's count only, so far
    assert partial is not None and partial.output_tokens == 0
    assert _fed(b"", seed=3).billed is None
