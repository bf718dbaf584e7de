"""Gemini CLI ``/chat save`` checkpoints: the raw contents the CLI sent, read by the Gemini
contents importer (shared/data/transcripts/gemini/**/checkpoint-*.json).

The model's calls there carry no id and the CLI's answers carry the id it made for each: the
answer pairs with the call by order and name, and the call takes its id. The first user entry
is the CLI's context preamble, which names the workspace root.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.cli.main import main
from hdcontext.core.content import MediaBlock, ToolCallBlock, ToolResponseBlock
from hdcontext.core.validity import problems
from hdcontext.formats.exporters import export
from hdcontext.formats.importers import detect_format, gemini_contents, load

GEMINI = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "gemini"
CHECKPOINTS = sorted(GEMINI.rglob("checkpoint-*.json")) if GEMINI.is_dir() else []
ROOTS = {
    "checkpoint-'test'.json": "/home/smitee",
    "checkpoint-eww.json": "/home/smitee",
    "checkpoint-kvantum.json": "/home/smitee",
    "checkpoint-dev.json": "/Users/ethan/repos/ssh-portfolio",
}

pytestmark = pytest.mark.skipif(not CHECKPOINTS, reason=f"no checkpoints under {GEMINI}")


def _by_name(name: str) -> Path:
    return next(p for p in CHECKPOINTS if p.name == name)


def test_the_corpus_holds_the_four_checkpoints() -> None:
    assert sorted(p.name for p in CHECKPOINTS) == sorted(ROOTS)


@pytest.mark.parametrize("path", CHECKPOINTS, ids=[p.name for p in CHECKPOINTS])
def test_each_checkpoint_pairs_every_call_with_the_answer_that_follows_it(path: Path) -> None:
    raw: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    conversation, fmt = load(path.read_text(encoding="utf-8"))
    assert fmt == "gemini"
    assert conversation.warnings == ()  # nothing repaired: every call has its answer
    assert problems(conversation.entries) == []
    assert conversation.workspace_root == ROOTS[path.name]
    raw_calls = [p["functionCall"] for c in raw for p in c["parts"] if "functionCall" in p]
    raw_answers = [
        p["functionResponse"] for c in raw for p in c["parts"] if "functionResponse" in p
    ]
    assert all("id" not in c for c in raw_calls) and all(a["id"] for a in raw_answers)
    calls = [b for e in conversation.entries for b in e.blocks if isinstance(b, ToolCallBlock)]
    answers = [
        b for e in conversation.entries for b in e.blocks if isinstance(b, ToolResponseBlock)
    ]
    # In order: each call takes the id of the answer that follows it, of its own name.
    assert [(c.id, c.name, c.parameters) for c in calls] == [
        (a["id"], c["name"], c.get("args")) for c, a in zip(raw_calls, raw_answers, strict=True)
    ]
    assert [(a.call_id, a.tool_name) for a in answers] == [
        (a["id"], a["name"]) for a in raw_answers
    ]
    assert [a.result for a in answers] == [a["response"].get("output") for a in raw_answers]


@pytest.mark.parametrize("path", CHECKPOINTS, ids=[p.name for p in CHECKPOINTS])
def test_a_checkpoint_exported_to_gemini_is_what_the_cli_saved(path: Path) -> None:
    """Back to Gemini contents: the same parts, but for the id a call took from its answer;
    a user content holding an answer and text comes out as two contents, the same parts."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversation, _ = load(path.read_text(encoding="utf-8"))
    exported = export(conversation, "gemini")
    assert exported.dropped == {} and exported.problems == ()
    contents = exported.payload["contents"]  # type: ignore[index]
    for content in contents:
        for part in content["parts"]:
            part.get("functionCall", {}).pop("id", None)
    assert _merged(contents) == _merged(raw)


def _merged(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive contents of one role as one."""
    out: list[dict[str, Any]] = []
    for content in contents:
        if out and out[-1]["role"] == content["role"]:
            out[-1] = {"role": content["role"], "parts": out[-1]["parts"] + content["parts"]}
        else:
            out.append(content)
    return out


def test_the_checkpoint_with_a_quote_in_its_name_goes_through_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _by_name("checkpoint-'test'.json")
    assert main(["compact", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out)["history"]
    assert main(["compact", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("checkpoint-'test'.json: gemini · workspace root /home/smitee\n")


def test_the_pdf_checkpoint_keeps_its_inline_pdf_byte_for_byte(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _by_name("checkpoint-eww.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    (inline,) = [p["inlineData"] for c in raw for p in c["parts"] if "inlineData" in p]
    assert len(inline["data"]) > 1_100_000  # 1.2 MB of base64
    conversation, _ = load(path.read_text(encoding="utf-8"))
    (media,) = [b for e in conversation.entries for b in e.blocks if isinstance(b, MediaBlock)]
    assert (media.mime_type, media.encoding, media.data) == (
        "application/pdf",
        "base64",
        inline["data"],
    )
    assert main(["convert", str(path), "--to", "gemini"]) == 0
    out, _ = capsys.readouterr()
    parts = [p for c in json.loads(out)["contents"] for p in c["parts"]]
    assert [p["inlineData"] for p in parts if "inlineData" in p] == [inline]
    assert main(["compact", str(path), "--json"]) == 0
    out, _ = capsys.readouterr()
    history = json.loads(out)["history"]
    kept = [b for e in history for b in e["blocks"] if b["type"] == "media"]
    assert [b["data"] for b in kept] == [inline["data"]]


def test_a_checkpoint_is_detected_as_gemini_contents() -> None:
    for path in CHECKPOINTS:
        assert detect_format(path.read_text(encoding="utf-8")) == "gemini"


# -- the pairing rule on its own --------------------------------------------------------------


def _answer(call_id: str | None, name: str, output: str) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"output": output}}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


def test_bare_calls_take_their_answers_ids_in_order_and_by_name() -> None:
    conversation = gemini_contents.load(
        [
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "read_file", "args": {"absolute_path": "/a"}}},
                    {"functionCall": {"name": "glob", "args": {"pattern": "*"}}},
                    {"functionCall": {"name": "read_file", "args": {"absolute_path": "/b"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    _answer("glob-1", "glob", "g"),
                    _answer("read_file-1", "read_file", "A"),
                    _answer("read_file-2", "read_file", "B"),
                ],
            },
        ]
    )
    calls = conversation.entries[0]
    assert [b.id for b in calls.blocks if isinstance(b, ToolCallBlock)] == [
        "read_file-1",
        "glob-1",
        "read_file-2",
    ]
    assert problems(conversation.entries) == []
    assert export(conversation, "gemini").payload["contents"][0]["parts"][0] == {  # type: ignore[index]
        "functionCall": {"name": "read_file", "id": "read_file-1", "args": {"absolute_path": "/a"}}
    }


def test_an_answer_to_a_call_already_answered_is_not_given_to_another() -> None:
    """A second answer with the id of a call that has one is a duplicate, not the answer of
    a bare call of the same name: the history says so rather than pairing it wrongly."""
    conversation = gemini_contents.load(
        [
            {"role": "model", "parts": [{"functionCall": {"id": "x", "name": "ls", "args": {}}}]},
            {"role": "user", "parts": [_answer("x", "ls", "one")]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
            {"role": "user", "parts": [_answer("x", "ls", "two")]},
        ]
    )
    assert [p.kind for p in problems(conversation.entries)] == [
        "unanswered_call",
        "duplicate_response",
    ]


def test_an_empty_response_object_is_an_empty_output() -> None:
    conversation = gemini_contents.load(
        [
            {"role": "model", "parts": [{"functionCall": {"id": "q", "name": "sql", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "q", "name": "sql", "response": {}}}],
            },
        ]
    )
    (answer,) = conversation.entries[1].blocks
    assert isinstance(answer, ToolResponseBlock)
    assert (answer.result, answer.error) == ("", None)


def test_a_signature_on_a_part_goes_back_on_that_part_byte_for_byte() -> None:
    signature = "CiQB0e2Kb+/x==\u00e9\n"  # whatever the model sent, even oddities
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"text": "looking", "thoughtSignature": signature + "t"},
                {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": signature},
                {"functionCall": {"name": "ls", "args": {"d": "x"}}},
            ],
        },
        {"role": "user", "parts": [_answer("ls-1", "ls", "a"), _answer("ls-2", "ls", "b")]},
    ]
    conversation, _ = load(json.dumps(contents))
    parts = export(conversation, "gemini").payload["contents"][1]["parts"]  # type: ignore[index]
    assert [p.get("thoughtSignature") for p in parts] == [signature + "t", signature, None]
