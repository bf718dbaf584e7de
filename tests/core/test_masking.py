"""Masking (density/masking.py): tool output the model has answered becomes a pointer to it.

Every exception on small hand-made histories (the current view of a file, the newest
``maskRetention`` outputs, outputs shorter than their pointer, what the model has not
answered, a call id two responses share), the pointer's exact text with and without the
client's retrieve tool, that it is the same for the same output whatever the history around
it, and, in a session, that with ``masking: cold`` it waits while the cache is warm and applies
when it is cold, and that ``history/retrieve`` gives every masked output back.
"""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import JsonValue

from hdcontext.core.content import IContent, ToolResponseBlock
from hdcontext.core.density.edits import Edit
from hdcontext.core.density.engine import DensityEngine
from hdcontext.core.density.masking import describe_call
from hdcontext.core.density.optimize import _ListHistory, optimize
from hdcontext.core.density.types import DensityConfig, DensityResult
from hdcontext.core.history.history import History
from hdcontext.core.session.session import Session
from hdcontext.core.settings import MASK_RETENTION, SettingError, resolve, validate
from hdcontext.core.tools.shell.commands import exit_status
from hdcontext.core.tools.summary import OutputFacts, is_compact, is_masked, masked_pointer

from .builders import ai, ai_call, ai_text, call, human, response, tool_result, tools

CONFIG = DensityConfig(
    read_write_pruning=True,
    file_dedupe=False,
    workspace_root="/w",
    read_tools=frozenset({"Read"}),
    write_tools=frozenset({"Write", "Edit"}),
    shell_tools=frozenset({"Bash"}),
    keep_latest_view=True,
    masking="cold",
    mask_retention=1,
)
LONG = "".join(f"line {n} of what the command printed, long enough to mask\n" for n in range(12))


def bash(cid: str, output: JsonValue = LONG, command: str | None = None) -> list[IContent]:
    params = {"command": command or f"make step-{cid}"}
    return [ai_call(cid, "Bash", params), tool_result(cid, "Bash", output)]


def results(history: list[IContent], result: DensityResult) -> dict[str, JsonValue]:
    """Each response's result, call id -> as ``result`` leaves it."""
    out: dict[str, JsonValue] = {}
    for i, entry in enumerate(history):
        if i in result.removals:
            continue
        for block in result.replacements.get(i, entry).blocks:
            if isinstance(block, ToolResponseBlock):
                out[block.call_id] = block.result
    return out


def masked(history: list[IContent], config: DensityConfig = CONFIG) -> set[str]:
    result = optimize(history, config)
    return {cid for cid, r in results(history, result).items() if is_masked(r)}


# -- what is masked -------------------------------------------------------------------------


def test_answered_outputs_beyond_the_newest_are_masked() -> None:
    history = [human("build"), *bash("b1"), *bash("b2"), *bash("b3"), ai_text("done")]
    result = optimize(history, CONFIG)
    assert masked(history) == {"b1", "b2"}  # b3 is the newest output (maskRetention 1)
    assert result.metadata.masked_pruned == 2
    assert result.removals == ()
    out = results(history, result)
    assert out["b3"] == LONG


def test_the_newest_mask_retention_outputs_stay() -> None:
    history = [human("go"), *bash("b1"), *bash("b2"), *bash("b3"), *bash("b4"), ai_text("ok")]
    for retention, expected in ((0, {"b1", "b2", "b3", "b4"}), (2, {"b1", "b2"}), (4, set())):
        config = dataclasses.replace(CONFIG, mask_retention=retention)
        assert masked(history, config) == expected
    assert MASK_RETENTION == 3 and DensityConfig().mask_retention == MASK_RETENTION


def test_what_the_model_has_not_answered_stays() -> None:
    answered = [human("go"), *bash("b1"), ai_text("b1 says…")]
    unanswered = [*bash("b2"), *bash("b3")]  # b2 answered only by a call, b3 by nothing
    config = dataclasses.replace(CONFIG, mask_retention=0)
    assert masked([*answered, *unanswered], config) == {"b1", "b2"}
    assert masked(answered[:3], config) == set()  # no AI entry after b1


def test_the_current_view_of_a_file_stays_and_an_edit_is_never_blind() -> None:
    source = "".join(f"def f{n}(x):\n    return x + {n}\n" for n in range(20))
    history = [
        human("fix f3"),
        ai_call("r1", "Read", {"file_path": "/w/a.py"}),
        tool_result("r1", "Read", source),
        ai_call("e1", "Edit", {"file_path": "/w/a.py", "old_string": "x + 3", "new_string": "3"}),
        tool_result("e1", "Edit", "The file /w/a.py has been updated."),
        *bash("t1"),
        *bash("t2"),
        ai_text("fixed"),
    ]
    config = dataclasses.replace(CONFIG, mask_retention=0)
    # r1 is the model's only view of a.py (the edit after it is partial): it stays.
    assert masked(history, config) == {"t1", "t2"}
    # Once a later whole read shows the file, r1 goes as stale (not masked) and the new
    # read is the view that stays.
    later = [ai_call("r2", "Read", {"file_path": "/w/a.py"}), tool_result("r2", "Read", source)]
    grown = [*history, *later, ai_text("looked again")]
    result = optimize(grown, config)
    assert "r1" not in results(grown, result)
    assert masked(grown, config) == {"t1", "t2"}


def test_outputs_shorter_than_their_pointer_stay() -> None:
    history = [human("go"), *bash("b1", "ok"), *bash("b2", "x" * 150), *bash("b3"), ai_text("k")]
    config = dataclasses.replace(CONFIG, mask_retention=0)
    assert masked(history, config) == {"b3"}


def test_outputs_already_one_of_our_one_liners_stay() -> None:
    pointer = masked_pointer(OutputFacts.of(response("b1", "Bash", LONG)), None, None)
    history = [human("go"), *bash("b1", pointer), *bash("b2"), ai_text("k")]
    assert is_compact(pointer)
    config = dataclasses.replace(CONFIG, mask_retention=0)
    result = optimize(history, config)
    assert 2 not in result.replacements  # b1's response is left as it is
    assert masked(history, config) == {"b1", "b2"}
    assert result.metadata.masked_pruned == 1


GEMINI_MASKED = (
    '<tool_output_masked>\n{\n  "output": "def f0(x):\\n    return x + 0\\n'
    + "x" * 250
    + "\n... [TRUNCATED] ...\n"
    + "y" * 250
    + "\n\nOutput too large. Full output available at: "
    "/home/u/.gemini/tmp/ws/tool-outputs/session-1/read_file_1.txt\n</tool_output_masked>"
)
"""Gemini CLI's own masking of an old output (its head and tail, and where the whole is)."""


def test_output_the_agent_masked_itself_is_left_as_it_is_and_is_no_view() -> None:
    """Gemini CLI masks old tool output itself and never undoes it: such an output is not
    masked again (it is under a kilobyte, and a pointer to a pointer helps nobody), and a
    read answered so shows no file: the view that stays is a whole read after it, or none."""
    source = "".join(f"def f{n}(x):\n    return x + {n}\n" for n in range(20))
    history = [
        human("look"),
        ai_call("r1", "Read", {"file_path": "/w/a.py"}),
        tool_result("r1", "Read", GEMINI_MASKED),
        *bash("b1", GEMINI_MASKED),
        ai_call("r2", "Read", {"file_path": "/w/a.py"}),
        tool_result("r2", "Read", source),
        *bash("b2"),
        ai_text("k"),
    ]
    assert is_compact(GEMINI_MASKED)
    config = dataclasses.replace(CONFIG, mask_retention=0)
    result = optimize(history, config)
    out = results(history, result)
    assert out["b1"] == GEMINI_MASKED  # not masked again
    assert out["r2"] == source  # the current view of a.py
    assert masked(history, config) == {"b2"}
    # Had the masked read been the last one, no view of a.py would stand: nothing protects
    # it, and nothing is masked for it either.
    alone = [*history[:4], *bash("b2"), ai_text("k")]
    assert results(alone, optimize(alone, config))["r1"] == GEMINI_MASKED


def test_a_call_id_two_responses_share_stays() -> None:
    # history/retrieve gives back the latest response of an id: the other could not come back.
    history = [human("go"), *bash("b1"), *bash("b1"), *bash("b2"), ai_text("k")]
    assert masked(history, dataclasses.replace(CONFIG, mask_retention=0)) == {"b2"}


def test_masking_off_or_the_seeds_rule_masks_nothing() -> None:
    history = [human("go"), *bash("b1"), *bash("b2"), *bash("b3"), ai_text("k")]
    assert masked(history, dataclasses.replace(CONFIG, masking="off")) == set()
    assert masked(history, dataclasses.replace(CONFIG, keep_latest_view=False)) == set()
    assert masked(history, DensityConfig()) == set()  # the seeds' defaults
    # Without READ → WRITE pruning the views are still known, and kept.
    no_stale = dataclasses.replace(CONFIG, read_write_pruning=False, mask_retention=0)
    read = [ai_call("r1", "Read", {"file_path": "/w/a.py"}), tool_result("r1", "Read", LONG)]
    assert masked([human("go"), *read, *bash("b1"), ai_text("k")], no_stale) == {"b1"}


def test_another_rules_block_is_left_to_it() -> None:
    # An edit's echo that write_echoes trims is not masked too (one rule per block).
    echo = "The file /w/a.py has been updated. Here is the result:\n" + LONG
    edit = {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"}
    history = [
        human("go"),
        ai_call("e1", "Edit", edit),
        tool_result("e1", "Edit", echo),
        *bash("b1"),
        ai_text("k"),
    ]
    result = optimize(history, dataclasses.replace(CONFIG, mask_retention=0))
    out = results(history, result)
    assert is_masked(out["b1"]) and not is_masked(out["e1"])
    assert isinstance(out["e1"], str) and out["e1"].startswith("The file /w/a.py has been updated.")


# -- the pointer ----------------------------------------------------------------------------


def test_the_pointer_names_the_call_and_how_to_get_the_output_back() -> None:
    history = [
        human("go"),
        ai_call("toolu_1", "Bash", {"command": "npm test", "description": "Run the tests"}),
        tool_result("toolu_1", "Bash", LONG + "Exit code: 1\n", error="tests failed"),
        *bash("b2"),
        ai_text("k"),
    ]
    out = results(history, optimize(history, CONFIG))
    assert out["toolu_1"] == (
        '[Output masked once read: Bash command="npm test" description="Run the tests" '
        "(13 lines, 687 characters, failed, process exited with code 1) — "
        'callId "toolu_1"; re-run the tool to see it again]'
    )
    tool = dataclasses.replace(CONFIG, retrieve_tool="hdcontext_retrieve")
    out = results(history, optimize(history, tool))
    assert out["toolu_1"] == (
        '[Output masked once read: Bash command="npm test" description="Run the tests" '
        "(13 lines, 687 characters, failed, process exited with code 1) — "
        'call hdcontext_retrieve with callId "toolu_1" to get it back]'
    )
    assert all(is_masked(r) and is_compact(r) for r in out.values() if r != LONG)


def test_the_pointer_keeps_the_exit_status_the_rules_read() -> None:
    # A masked shell call keeps its success: a failed `sed -i` stays no write, masked or not.
    for output in (LONG + "Exit code: 2", {"returncode": 0, "stdout": LONG}, LONG):
        facts = OutputFacts.of(response("s1", "Bash", output))
        pointer = masked_pointer(facts, 'command="sed -i s/a/b/ a.py"', None)
        assert exit_status(pointer) == exit_status(output)


def test_a_read_pointer_names_the_part_of_the_file() -> None:
    assert describe_call({"file_path": "/w/a.py", "offset": 10, "limit": 20}) == (
        'file_path="/w/a.py" offset=10 limit=20'
    )
    assert describe_call({"pattern": "TODO", "path": "src", "glob": "*.py"}) == (
        'path="src" pattern="TODO"'
    )
    assert describe_call({"paths": ["a.py", "b.py"]}) == '"a.py, b.py"'
    assert describe_call({"command": "cat <<EOF\nlong\nEOF"}) == 'command="cat <<EOF"'
    assert describe_call(None) is None and describe_call({"x": 1}) is None


def test_the_same_output_always_becomes_the_same_pointer() -> None:
    # Whatever comes after it, and however often it is asked for, an output's pointer is the
    # same bytes: a later cold call never re-edits it.
    history = [human("go"), *bash("b1"), *bash("b2"), ai_text("k")]
    first = results(history, optimize(history, CONFIG))["b1"]
    later = [*history, *bash("b3", "other"), *bash("b4"), ai_text("more"), human("again")]
    assert results(later, optimize(later, CONFIG))["b1"] == first
    # Applied, the pointer is not proposed again.
    edited = list(history)
    for i, entry in optimize(history, CONFIG).replacements.items():
        edited[i] = entry
    assert optimize(edited, CONFIG).metadata.masked_pruned == 0
    # The same incrementally: the engine builds it once and keeps it while it waits.
    engine = DensityEngine()
    keyed = _ListHistory(history)
    one = [e for e in engine.proposals(keyed, CONFIG) if e.rule == "masking"]
    two = [e for e in engine.proposals(keyed, CONFIG) if e.rule == "masking"]
    assert one == two and one[0] is two[0]


def test_cold_edits_apply_only_for_free_and_always_edits_are_weighed() -> None:
    history = [human("go"), *bash("b1"), *bash("b2"), ai_text("k")]

    def masking_edits(config: DensityConfig) -> list[Edit]:
        edits = DensityEngine().proposals(_ListHistory(history), config)
        return [e for e in edits if e.rule == "masking"]

    assert [e.free_only for e in masking_edits(CONFIG)] == [True]
    always = dataclasses.replace(CONFIG, masking="always")
    assert [e.free_only for e in masking_edits(always)] == [False]


# -- settings -------------------------------------------------------------------------------


def test_the_settings_and_their_refusals() -> None:
    values = resolve({}, {}).values
    assert values.masking == "cold" and values.mask_retention == MASK_RETENTION
    assert validate("compression.density.masking", "always") == "always"
    assert validate("compression.density.maskRetention", 0) == 0
    with pytest.raises(SettingError, match="one of off, cold, always"):
        validate("compression.density.masking", "sometimes")
    with pytest.raises(SettingError, match="an integer >= 0"):
        validate("compression.density.maskRetention", -1)
    with pytest.raises(SettingError):
        validate("compression.density.maskRetention", "3")


# -- in a session ---------------------------------------------------------------------------


def _session(**overrides: object) -> Session:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = "claude-sonnet-4"
    s.set_override("compression.density.maskRetention", 1)
    for key, value in overrides.items():
        s.set_override(f"compression.density.{key}", value)
    return s


def _masked_ids(history: object) -> set[str]:
    out: set[str] = set()
    for entry in history:  # type: ignore[attr-defined]
        for block in entry.blocks:
            if isinstance(block, ToolResponseBlock) and is_masked(block.result):
                out.add(block.call_id)
    return out


async def test_cold_masking_waits_on_a_warm_cache_and_applies_on_a_cold_one() -> None:
    s = _session()
    s.append([human("go"), *bash("b1"), ai_text("b1 is done")])
    first = await s.compact(at=1_000)
    assert first.cache.cold and _masked_ids(first.history) == set()  # b1 is the newest
    s.append([*bash("b2"), ai_text("b2 is done")])
    warm = await s.compact(at=2_000)
    # b1 may go now, but it sits in the cached prefix: masking it would rewrite the cache.
    assert not warm.cache.cold and _masked_ids(warm.history) == set()
    assert warm.cache.edits_pending == 1 and warm.status.pending_tokens > 0
    # It waits for a cold cache, which rewrites everything anyway: no breakpoint is spent
    # anchoring it (an edit the schedule may pick on a warm call gets one).
    assert warm.cache.breakpoints == [len(warm.history) - 1]
    assert warm.status.masked_outputs == 0
    s.append([human("and now?")])
    cold = await s.compact(at=2_000 + 301_000)  # the provider's cache has expired
    assert cold.cache.cold and _masked_ids(cold.history) == {"b1"}
    assert cold.density is not None and cold.density.metadata.masked_pruned == 1
    assert cold.status.masked_outputs == 1 and cold.status.masked_tokens > 100
    assert cold.status.saved_tokens >= cold.status.masked_tokens
    call_block, back = s.retrieve("b1")
    assert back.result == LONG and call_block is not None
    # What was masked stays masked: the next cold call has nothing to redo for it.
    again = await s.compact(at=2_000 + 700_000)
    assert again.cache.edits_applied == 0
    assert again.status.masked_outputs == 1


async def test_cold_masking_past_the_previous_reply_is_free_at_once() -> None:
    # Outputs the provider has never cached (appended and answered since the previous reply)
    # cost no rewrite: masked on a warm call too.
    s = _session()
    s.append([human("go"), ai_text("sure")])
    await s.compact(at=1_000)
    s.append([*bash("b1"), *bash("b2"), ai_text("both done")])
    warm = await s.compact(at=2_000)
    assert not warm.cache.cold and _masked_ids(warm.history) == {"b1"}


async def test_always_lets_the_schedule_weigh_masking_like_any_edit() -> None:
    # Warm, with nothing saved yet to afford a rewrite: an always-edit waits like the others,
    # and a cold cache applies it. (What differs from cold is only that the schedule may also
    # pick it on a warm call once it pays: it is not free_only.)
    s = _session(masking="always")
    s.append([human("go"), *bash("b1"), ai_text("b1 is done")])
    await s.compact(at=1_000)
    s.append([*bash("b2"), ai_text("b2 is done")])
    warm = await s.compact(at=2_000)
    assert warm.cache.edits_pending == 1
    assert len(warm.cache.breakpoints) == 2  # an anchor before it, for when it pays
    cold = await s.compact(at=2_000 + 301_000)
    assert _masked_ids(cold.history) == {"b1"}


async def test_the_seeds_behaviour_does_not_mask() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.set_override("compression.density.schedule", "every-turn")
    s.set_override("compression.density.keepLatestView", False)
    s.append([human("go"), *bash("b1"), *bash("b2"), *bash("b3"), *bash("b4"), ai_text("k")])
    result = await s.compact(at=1_000)
    assert _masked_ids(result.history) == set() and result.status.masked_outputs == 0


async def test_masked_figures_survive_a_restart() -> None:
    s = _session(maskRetention=0)
    s.append([human("go"), *bash("b1"), *bash("b2"), ai_text("k")])
    result = await s.compact(at=1_000)
    assert result.status.masked_outputs == 2
    state = s.export_state()
    restored = Session("s")
    restored.import_state(type(state).from_json(state.to_json()))
    assert restored.status().masked_outputs == 2
    assert restored.status().masked_tokens == result.status.masked_tokens > 0


async def test_parallel_outputs_each_get_their_pointer() -> None:
    s = _session(maskRetention=0)
    s.append(
        [
            human("go"),
            ai(call("p1", "Bash", {"command": "ls"}), call("p2", "Bash", {"command": "env"})),
            tools(response("p1", "Bash", LONG), response("p2", "Bash", LONG + "x")),
            ai_text("k"),
        ]
    )
    result = await s.compact(at=1_000)
    assert _masked_ids(result.history) == {"p1", "p2"}
    assert result.density is not None and result.density.metadata.masked_pruned == 1  # entries
    assert result.status.masked_outputs == 2  # outputs
    assert s.retrieve("p2")[1].result == LONG + "x"


async def _warm_mask_that_pays(masking: str) -> set[str]:
    """A session that has saved enough to afford a rewrite, and an output the model has
    just answered inside the cached prefix: masking it now pays back within a few calls.
    What is masked after the warm call."""
    s = _session(masking=masking, maskRetention=0)
    big = LONG * 10
    s.append([human("go"), *bash("b0", big), ai_text("b0 is done")])
    at = 1_000
    await s.compact(at=at)  # cold: b0 masked, and the session saves from then on
    for n in range(6):
        s.append([human(f"question {n}"), ai_text(f"answer {n}")])
        at += 10_000
        await s.compact(at=at)
    s.append([human("run it"), *bash("b1", big)])
    at += 10_000
    await s.compact(at=at)  # the model reads b1: the provider caches it
    s.append([ai_text("b1 is done")])
    at += 10_000
    warm = await s.compact(at=at)
    assert not warm.cache.cold
    return _masked_ids(warm.history)


async def test_cold_masking_never_pays_for_a_rewrite_that_always_would_make() -> None:
    assert await _warm_mask_that_pays("always") == {"b0", "b1"}
    assert await _warm_mask_that_pays("cold") == {"b0"}


def test_a_waiting_pointer_follows_its_call() -> None:
    # The pointer names the call: when the call changes before the edit applies (another call
    # takes the same id, so which one it was is no longer known), the waiting edit is rebuilt,
    # as the cold fold would build it.
    history = History()
    history.append([human("go"), *bash("b1"), *bash("b2"), ai_text("k")])
    engine = DensityEngine()
    before = engine.optimize(history, CONFIG)
    assert 'command="make step-b1"' in str(results(list(history.raw), before)["b1"])
    history.append([ai_call("b1", "Bash", {"command": "again"}), ai_text("no answer came")])
    after = engine.optimize(history, CONFIG)
    assert after == optimize(list(history.raw), CONFIG)
    assert results(list(history.raw), after)["b1"] == masked_pointer(
        OutputFacts.of(response("b1", "Bash", LONG)), None, None
    )
