"""LLM strategies: the editor answers history/summarize, or an OpenAI-compatible endpoint does."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from .harness import Daemon, start_daemon, text

SUMMARY = "<scratchpad>private</scratchpad><state_snapshot>the user wants tests</state_snapshot>"


async def _long_session(d: Daemon, sid: str, strategy: str = "middle-out") -> None:
    """A session well over its (small) context limit, so compaction must compress."""
    await d.call("history/open", {"sessionId": sid, "contextLimit": 600})
    await d.call(
        "history/setOverride", {"sessionId": sid, "key": "compression.strategy", "value": strategy}
    )
    entries = [
        text("human" if i % 2 == 0 else "ai", f"turn {i}: " + "words about the task " * 6)
        for i in range(16)
    ]
    await d.call("history/append", {"sessionId": sid, "entries": entries})


async def test_the_editor_summarizes_for_middle_out(profile: str, storage: Path) -> None:
    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"text": SUMMARY}

    async with start_daemon(storage, profile=profile, summarize=answer) as d:
        await _long_session(d, "s")
        before = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        result = await d.call("history/compact", {"sessionId": "s"})

        [request] = d.summarize_calls
        assert request["sessionId"] == "s" and request["strategy"] == "middle-out"
        assert "<state_snapshot>" in request["prompt"]
        assert request["messages"] and all(
            m["speaker"] in ("human", "ai") for m in request["messages"]
        )
        sent_text = json.dumps(request["messages"])
        assert "turn 5:" in sent_text  # the middle went to the model

        compression = result["compression"]
        assert compression["strategy"] == "middle-out"
        assert compression["tokensAfter"] < compression["tokensBefore"]
        summary = json.dumps(result["history"])
        assert "the user wants tests" in summary and "private" not in summary
        assert len(result["history"]) < len(before["entries"])
        assert result["status"]["savedTokens"] > 0 and d.tokens[-1] == result["status"]

        # The transcript pointer names a JSONL export of everything appended.
        path = Path(compression["transcriptPath"])
        assert path.is_file() and path.is_relative_to(storage)
        assert "Full pre-compression transcript available at: " + str(path) in summary
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        transcript = await d.call("history/get", {"sessionId": "s", "view": "transcript"})
        assert lines == transcript["entries"]


async def test_summarizer_failures_are_32002_and_change_nothing(storage: Path) -> None:
    answers: list[Any] = []
    hang = asyncio.Event()

    async def answer(params: dict[str, Any]) -> Any:
        reply = answers.pop(0)
        if reply == "hang":
            await hang.wait()
        if isinstance(reply, Exception):
            raise reply
        return reply

    env = {"HDCONTEXT_SUMMARIZE_TIMEOUT": "1"}
    async with start_daemon(storage, summarize=answer, env=env) as d:
        await _long_session(d, "s", strategy="one-shot")
        before = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        notified = len(d.tokens)
        cases = [
            (RuntimeError("model unavailable"), "with error"),
            ({"summary": "wrong key"}, "no 'text' string"),
            ({"text": "   "}, "empty summary"),
            ("hang", "did not answer history/summarize within 1 s"),
        ]
        for reply, message in cases:
            answers.append(reply)
            error = await d.fails("history/compact", {"sessionId": "s"})
            assert error.code == -32002, error
            assert "summarizer 'client' failed" in error.message and message in error.message
            after = await d.call("history/get", {"sessionId": "s", "view": "raw"})
            assert after == before
        assert len(d.tokens) == notified
        hang.set()


class FakeOpenAI:
    """A tiny chat-completions endpoint on 127.0.0.1 that records what it was sent."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
                )
                reply: dict[str, Any]
                if fake.status == 200:
                    reply = {"choices": [{"message": {"role": "assistant", "content": SUMMARY}}]}
                else:
                    reply = {"error": {"message": "the model is overloaded"}}
                data = json.dumps(reply).encode()
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


async def test_the_openai_provider_calls_the_endpoint(
    storage: Path, fake_openai: FakeOpenAI
) -> None:
    async def never(params: dict[str, Any]) -> Any:
        raise AssertionError("the client must not be asked")

    settings = {
        "summarizer": {
            "provider": "openai",
            "baseUrl": fake_openai.url,
            "model": "tiny-model",
            "apiKeyEnv": "HDC_TEST_KEY",
        }
    }
    env = {"HDC_TEST_KEY": "sekrit", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    async with start_daemon(storage, init_settings=settings, env=env, summarize=never) as d:
        await _long_session(d, "s")
        result = await d.call("history/compact", {"sessionId": "s"})
        assert result["compression"]["strategy"] == "middle-out"
        assert "the user wants tests" in json.dumps(result["history"])
        assert d.summarize_calls == []

        [sent] = fake_openai.requests
        assert sent["path"] == "/v1/chat/completions"
        assert sent["headers"]["Authorization"] == "Bearer sekrit"
        body = sent["body"]
        assert body["model"] == "tiny-model"
        messages = body["messages"]
        assert messages[0]["role"] == "system" and "<state_snapshot>" in messages[0]["content"]
        assert {m["role"] for m in messages[1:]} <= {"user", "assistant"}
        assert all(isinstance(m["content"], str) and m["content"] for m in messages)
        assert "turn 5:" in json.dumps(messages)

        # The endpoint fails: -32002 naming the provider and the reason; nothing changes.
        await _long_session(d, "t")
        before = await d.call("history/get", {"sessionId": "t", "view": "raw"})
        fake_openai.status = 503
        error = await d.fails("history/compact", {"sessionId": "t"})
        assert error.code == -32002
        assert "summarizer 'openai' failed" in error.message
        assert "HTTP 503" in error.message and "overloaded" in error.message
        assert await d.call("history/get", {"sessionId": "t", "view": "raw"}) == before

        # No key in the environment: said clearly, no request made.
        await d.call(
            "history/setOverride",
            {"sessionId": "t", "key": "summarizer.apiKeyEnv", "value": "HDC_MISSING_KEY"},
        )
        sent_before = len(fake_openai.requests)
        error = await d.fails("history/compact", {"sessionId": "t"})
        assert error.code == -32002 and "HDC_MISSING_KEY" in error.message
        assert len(fake_openai.requests) == sent_before

        # Nothing listens there: -32002 as well.
        await d.call(
            "history/setOverride", {"sessionId": "t", "key": "summarizer.apiKeyEnv", "value": None}
        )
        await d.call(
            "history/setOverride",
            {"sessionId": "t", "key": "summarizer.baseUrl", "value": "http://127.0.0.1:9/v1"},
        )
        error = await d.fails("history/compact", {"sessionId": "t"})
        assert error.code == -32002 and "cannot reach" in error.message
