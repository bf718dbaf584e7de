"""OpenAI's 24-hour retention: asked only where the table says the model offers it and the
agent chose none, written into the client's bytes without touching the rest."""

from __future__ import annotations

import orjson

from hdcontext.edges.proxy.openai_cache import retention_to_ask, with_field


def test_asked_for_a_model_that_offers_it_when_the_agent_chose_none() -> None:
    assert retention_to_ask({"model": "gpt-4.1", "messages": []}) == "24h"
    assert retention_to_ask({"model": "gpt-5.1-2025-11-13", "messages": []}) == "24h"


def test_not_asked_when_the_agent_chose_or_the_model_does_not_offer_it() -> None:
    assert retention_to_ask({"model": "gpt-4.1", "prompt_cache_retention": "in_memory"}) is None
    assert retention_to_ask({"model": "gpt-4.1-mini"}) is None
    assert retention_to_ask({"model": "some-local-model"}) is None  # a guessed row: never
    assert retention_to_ask({}) is None
    # Never both: an agent that set the cache's options chose its lifetime itself.
    assert retention_to_ask({"model": "gpt-4.1", "prompt_cache_options": {"mode": "x"}}) is None


def test_the_field_goes_first_and_the_clients_bytes_stay() -> None:
    data = b' {"model": "gpt-4.1", "messages": [{"role":"user","content":"hi"}]}'
    out = with_field(data, "prompt_cache_retention", "24h")
    assert orjson.loads(out) == {**orjson.loads(data), "prompt_cache_retention": "24h"}
    assert out.endswith(data[data.index(b"{") + 1 :])
    assert orjson.loads(with_field(b"{}", "k", "v")) == {"k": "v"}
