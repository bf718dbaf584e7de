"""Models share their bookkeeping (fields given, unknown keys) without it showing."""

from __future__ import annotations

from hdcontext.core.content import TextBlock, parse_entries


def test_shared_bookkeeping_changes_nothing_a_model_says() -> None:
    raw = [
        {"speaker": "human", "blocks": [{"type": "text", "text": "a"}]},
        {"speaker": "human", "blocks": [{"type": "text", "text": "b"}], "metadata": {"k": 1}},
        {"speaker": "ai", "blocks": [{"type": "text", "text": "c"}]},
    ]
    first, second, third = parse_entries(raw)
    assert first.model_fields_set is third.model_fields_set  # one set for one shape
    block = first.blocks[0]
    assert isinstance(block, TextBlock)
    copied = block.model_copy(update={"text": "z", "note": "extra"})
    stamped = first.model_copy(update={"metadata": second.metadata})
    assert copied.model_dump(exclude_unset=True) == {"type": "text", "text": "z", "note": "extra"}
    assert block.model_dump(exclude_unset=True) == {"type": "text", "text": "a"}
    assert stamped.to_wire()["metadata"] == {"k": 1}
    assert [e.to_wire() for e in (first, second, third)] == raw
    assert third.blocks[0].model_extra == {}
