"""The LiteLLM callback's parts on their own: the owner read from LiteLLM's auth object, the
usage read as LiteLLM normalizes it (the shapes are LiteLLM 1.108.7's, taken from its success
hook for each endpoint), the deployment a model group goes to, the settings from the
environment, and the owners in the store as ``hdcontext stats --by user|team`` reads them."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hdcontext.cli.main import main as cli_main
from hdcontext.core.stats.costs import _SUMMED, Figures
from hdcontext.edges.stats.owners import NO_TEAM, NOT_GATEWAY, group_of, tag_of
from hdcontext.edges.storage.location import Location
from hdcontext.litellm.billing import billed_of
from hdcontext.litellm.deployments import Deployment, carried, deployment_of
from hdcontext.litellm.identity import Owner, owner_of
from hdcontext.litellm.runtime import Config, Unavailable, config_from, start_runtime

# -- who ---------------------------------------------------------------------------------------


def test_the_owner_is_the_user_else_the_key_with_team_and_end_user_within() -> None:
    alice = owner_of(SimpleNamespace(token="a" * 64, user_id="alice", team_id="t1"))
    alice_other_key = owner_of(SimpleNamespace(token="c" * 64, user_id="alice", team_id="t1"))
    alice_other_team = owner_of(SimpleNamespace(token="a" * 64, user_id="alice", team_id="t2"))
    key_only = owner_of(SimpleNamespace(token="a" * 64))
    other_key = owner_of(SimpleNamespace(token="b" * 64))
    customer = owner_of(SimpleNamespace(token="b" * 64, end_user_id="customer-1"))
    assert alice.tag == alice_other_key.tag  # a user's keys share the user's sessions
    tags = [alice.tag, alice_other_team.tag, key_only.tag, other_key.tag, customer.tag]
    assert len(set(tags)) == len(tags)
    assert owner_of(None) == Owner() and len(Owner().tag) == 16
    renamed = owner_of(
        SimpleNamespace(token="a" * 64, user_id="alice", team_id="t1", key_alias="x")
    )
    assert renamed.tag == alice.tag  # an alias is a name for people


def test_a_raw_key_is_never_kept() -> None:
    raw = "sk-the-raw-key"
    owner = owner_of(SimpleNamespace(api_key=raw, user_id=7, team_id=True))
    assert owner.key == hashlib.sha256(raw.encode()).hexdigest()
    assert owner.user == "7" and owner.team is None
    shown = json.dumps(owner.to_json())
    assert raw not in shown and owner.key not in shown and owner.key[:12] in shown
    assert repr(owner).count(raw) == 0


# -- what a call billed ------------------------------------------------------------------------

CHAT = {
    "completion_tokens": 9,
    "prompt_tokens": 1300,
    "total_tokens": 1309,
    "prompt_tokens_details": {"cached_tokens": 1000},
}
RESPONSES = {
    "completion_tokens": 9,
    "prompt_tokens": 1300,
    "prompt_tokens_details": {
        "cache_write_tokens": 200,
        "cached_tokens": 1000,
        "cache_creation_tokens": 200,
    },
}
MESSAGES = {
    "completion_tokens": 7,
    "prompt_tokens": 1300,
    "prompt_tokens_details": {"cached_tokens": 1000, "text_tokens": 100},
    "cache_creation_input_tokens": 200,
    "cache_read_input_tokens": 1000,
    "cache_creation": {"ephemeral_1h_input_tokens": 150},
}


def _kwargs(usage: dict[str, Any]) -> dict[str, Any]:
    return {"standard_logging_object": {"metadata": {"usage_object": usage}}}


@pytest.mark.parametrize(
    ("usage", "read", "write", "long", "out"),
    [(CHAT, 1000, 0, None, 9), (RESPONSES, 1000, 200, None, 9), (MESSAGES, 1000, 200, 150, 7)],
    ids=["chat", "responses", "messages"],
)
def test_the_usage_as_litellm_normalizes_it(
    usage: dict[str, Any], read: int, write: int, long: int | None, out: int
) -> None:
    billed = billed_of(_kwargs(usage), None)
    assert billed is not None
    assert (billed.input_tokens, billed.cache_read_tokens, billed.cache_write_tokens) == (
        1300,
        read,
        write,
    )
    assert (billed.output_tokens, billed.cache_write_1h_tokens) == (out, long)


def test_the_usage_from_the_response_and_how_the_answer_ended() -> None:
    usage = SimpleNamespace(
        prompt_tokens=50, completion_tokens=2, prompt_tokens_details=None, cache_read_input_tokens=9
    )
    tool = SimpleNamespace(usage=usage, choices=[SimpleNamespace(finish_reason="tool_calls")])
    billed = billed_of({}, tool)
    assert billed is not None and billed.cache_read_tokens == 9 and billed.waits_on == "tool"
    answer = {"usage": CHAT, "output": [{"type": "message"}]}
    assert billed_of({}, answer).waits_on == "person"  # type: ignore[union-attr]
    assert billed_of({}, None) is None
    odd = billed_of(_kwargs({"prompt_tokens": "many", "completion_tokens": -1}), None)
    assert odd is not None and odd.input_tokens == 0 and odd.output_tokens == 0


# -- where it goes -----------------------------------------------------------------------------


def test_the_deployment_a_model_group_goes_to() -> None:
    one = [{"litellm_params": {"model": "anthropic/claude-sonnet-4-5"}}]
    assert deployment_of(one) == Deployment("claude-sonnet-4-5", "anthropic")
    azure = [
        {"litellm_params": {"model": "azure/prod-east"}, "model_info": {"base_model": "gpt-4.1"}}
    ]
    assert deployment_of(azure) == Deployment("gpt-4.1", "azure")
    mixed = [*one, {"litellm_params": {"model": "openai/gpt-4.1"}}]
    assert deployment_of(mixed) == Deployment(None, None)
    assert deployment_of([{"litellm_params": {"model": "openai/*"}}]) == Deployment(None, "openai")
    assert carried("anthropic", Deployment("claude-sonnet-4-5", "anthropic"))
    assert not carried("openai", Deployment("claude-sonnet-4-5", "anthropic"))
    assert not carried("anthropic", Deployment("gpt-4.1", "openai"))
    assert carried("responses", Deployment(None, None))


# -- settings ----------------------------------------------------------------------------------


def test_the_settings_from_the_environment(tmp_path: Path) -> None:
    config = config_from({"HDCONTEXT_STORAGE": str(tmp_path), "HDCONTEXT_BOUND_S": "2.5"})
    assert (config.storage, config.bound_s) == (Location(folder=tmp_path), 2.5)
    assert config_from({"HDCONTEXT_RETENTION_DAYS": "forever"}).retention.days is None
    default = config_from({}).storage.folder
    assert default is not None and default.name == "litellm"
    url = "postgresql://hd@db.internal/hdcontext"
    shared = {"HDCONTEXT_DATABASE_URL": url, "HDCONTEXT_STORAGE": str(tmp_path)}
    assert config_from(shared).storage == Location(url=url)  # the database wins
    assert config_from({"HDCONTEXT_STORAGE": url}).storage == Location(url=url)
    with pytest.raises(Unavailable, match="HDCONTEXT_DATABASE_URL") as caught:
        config_from({"HDCONTEXT_DATABASE_URL": "mysql://hd:s3cret@db/x"})
    assert "s3cret" not in str(caught.value)
    assert config_from({}).kept.sessions == 128
    assert config_from({"HDCONTEXT_KEPT_SESSIONS": "500"}).kept.memos == 500
    for many in ("0", "lots"):
        with pytest.raises(Unavailable, match="HDCONTEXT_KEPT_SESSIONS"):
            config_from({"HDCONTEXT_KEPT_SESSIONS": many})
    for bad in ({"HDCONTEXT_BOUND_S": "soon"}, {"HDCONTEXT_BOUND_S": "0"}):
        with pytest.raises(Unavailable, match="HDCONTEXT_BOUND_S"):
            config_from(bad)
    with pytest.raises(Unavailable, match="HDCONTEXT_RETENTION_DAYS"):
        config_from({"HDCONTEXT_RETENTION_DAYS": "-1"})
    assert config_from({"HDCONTEXT_CONTEXT_LIMIT": "400000"}).context_limit == 400_000
    with pytest.raises(Unavailable, match="HDCONTEXT_CONTEXT_LIMIT"):
        config_from({"HDCONTEXT_CONTEXT_LIMIT": "lots"})


async def test_a_database_that_cannot_be_reached_is_said_without_its_password() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://hd:s3cret@127.0.0.1:1/hdcontext?connect_timeout=3"
    with pytest.raises(Unavailable) as caught:
        await start_runtime(Config(storage=Location(url=url)))
    said = str(caught.value)
    assert "s3cret" not in said and "postgresql://hd@127.0.0.1:1/hdcontext" in said


# -- the owners, and stats by user and team ----------------------------------------------------


def test_a_sessions_row_by_user_and_by_team() -> None:
    alice = owner_of(SimpleNamespace(token="a" * 64, user_id="alice", team_id="t1"))
    keyed = owner_of(SimpleNamespace(token="b" * 64, key_alias="ci", team_id="t1"))
    records = {alice.tag: alice.to_json(), keyed.tag: {**keyed.to_json(), "teamAlias": "Core"}}
    alice_session = f"litellm-{alice.tag}-openai-abc"
    assert tag_of(alice_session) == alice.tag and tag_of("proxy-openai-abc") is None
    keyed_session = f"litellm-{keyed.tag}-anthropic-def"
    assert group_of(alice_session, records, "user") == "alice"
    assert group_of(keyed_session, records, "user") == "key ci"
    assert group_of(keyed_session, records, "team") == "Core (t1)"
    anonymous = Owner()
    assert group_of(f"litellm-{anonymous.tag}-openai-x", {anonymous.tag: {}}, "team") == NO_TEAM
    assert group_of("proxy-openai-abc", records, "user") == NOT_GATEWAY
    assert group_of(f"litellm-{'f' * 16}-openai-x", records, "user") == f"owner {'f' * 16}"


def test_a_groups_figures_are_the_sums_of_its_sessions() -> None:
    sums = {f.name for f in dataclasses.fields(Figures)} - {"first", "last", "unpriced"}
    assert set(_SUMMED) == sums
    one, two = Figures(calls=2, cost=1.5, first=10, last=20), Figures(calls=1, masked=3, last=30)
    one.unpriced[("m", "why")] = 1
    two.unpriced[("m", "why")] = 2
    group = Figures()
    group.absorb(one)
    group.absorb(two)
    assert (group.calls, group.cost, group.masked) == (3, 1.5, 3)
    assert (group.first, group.last, group.unpriced) == (10, 30, {("m", "why"): 3})


def test_stats_by_user_and_team_of_an_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = tmp_path / "storage"
    storage.mkdir()
    assert cli_main(["stats", "--storage-dir", str(storage), "--by", "team", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["by"], out["groups"]) == ("team", [])
    assert cli_main(["stats", "--storage-dir", str(storage), "--by", "user"]) == 0
    assert "cost per user" in capsys.readouterr().out
    assert cli_main(["stats", "--storage-dir", str(storage), "--by", "user", "--serve"]) == 2
