"""``hdcontext stats`` over a storage folder seeded with known calls: every figure of its JSON
is what the usage records and the published prices say, worked out here by hand (to the cent,
and closer); a session with no usage, and a model the table does not know, are shown in
tokens; bad input is one line, exit 2, nothing changed; the table reads at 80 columns."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hdcontext.cli.main import main as cli
from hdcontext.edges.storage.folder import DB_NAME
from hdcontext.edges.storage.sqlite_store import SqliteStore

from .seed import Call, Seeded, noon, seed

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "stats"

# The published prices the seeded calls are billed at, in dollars per million tokens (the
# price table's rows, as its test holds them): input, output, cache read, 5m write, 1h write.
SONNET_4_5 = (3.0, 15.0, 0.30, 3.75, 6.0)
HAIKU_4_5_MINE = (2.0, 5.0, 0.10, 1.25, 2.0)  # the session's own price: input at $2


def bill(prices: tuple[float, ...], plain: int, read: int, w5: int, w1h: int, out: int) -> float:
    inp, output, cache_read, write_5m, write_1h = prices
    return (
        plain * inp + read * cache_read + w5 * write_5m + w1h * write_1h + out * output
    ) / 1_000_000


# Session A (Sonnet 4.5), on the 20th: a call hdcontext did not change, one it saved 6,000
# written tokens on, a retrieve, one whose usage never came (estimated); on the 21st: one with
# an hour's writes said by the proxy, a refresh call, a usage the daemon saw no call for.
A_CALLS = [
    Call(
        noon(20, 0),
        masked=0,
        charge=(0, 10_000, 0, 500),
        off=(0, 10_000, 0, 500),
        billed=(25_000, 0, 24_000, None, 800),
    ),
    Call(
        noon(20, 1),
        masked=3,
        charge=(10_000, 3_000, 0, 200),
        off=(10_000, 9_000, 0, 200),
        billed=(40_000, 30_000, 9_000, None, 500),
    ),
    Call(noon(20, 2), kind="retrieve", masked=None),
    Call(noon(20, 3), masked=5, charge=(13_000, 1_000, 0, 100), off=(19_000, 2_000, 0, 100)),
    Call(
        noon(21, 0),
        masked=5,
        charge=(20_000, 4_000, 1_000, 0),
        off=(20_000, 9_000, 1_000, 0),
        billed=(50_000, 40_000, 8_000, 2_000, 100),
    ),
    Call(
        noon(21, 4),
        kind="refresh",
        masked=5,
        charge=(20_000, 0, 0, 10),
        off=(0, 0, 0, 0),
        billed=(20_010, 20_000, 0, None, 1),
    ),
    Call(noon(21, 5), masked=None, billed=(30_000, 20_000, 0, None, 50)),
]
A = {  # (with, without) for each call, by hand
    "c1": (bill(SONNET_4_5, 1_000, 0, 24_000, 0, 800),) * 2,
    "c2": (
        bill(SONNET_4_5, 1_000, 30_000, 9_000, 0, 500),
        bill(SONNET_4_5, 1_000, 30_000, 15_000, 0, 500),
    ),
    "c3": (bill(SONNET_4_5, 100, 13_000, 1_000, 0, 0), bill(SONNET_4_5, 100, 19_000, 2_000, 0, 0)),
    "c4": (
        bill(SONNET_4_5, 2_000, 40_000, 6_000, 2_000, 100),
        bill(SONNET_4_5, 2_000, 40_000, 11_000, 2_000, 100),
    ),
    "refresh": (bill(SONNET_4_5, 10, 20_000, 0, 0, 1), 0.0),
    "unseen": (bill(SONNET_4_5, 10_000, 20_000, 0, 0, 50),) * 2,
}
D = (bill(HAIKU_4_5_MINE, 1_000, 0, 1_000, 0, 100), bill(HAIKU_4_5_MINE, 1_000, 0, 1_500, 0, 100))

SESSIONS = [
    Seeded("sess-sonnet", "claude-sonnet-4-5", A_CALLS),
    Seeded(
        "sess-mystery",
        "mystery-model-9",
        [
            Call(
                noon(20, 6),
                charge=(0, 1_000, 0, 0),
                off=(0, 1_000, 0, 0),
                billed=(5_000, 0, 1_000, None, 10),
            ),
        ],
    ),
    Seeded(
        "sess-nousage",
        "claude-sonnet-4-5",
        [
            Call(noon(21, 6), charge=(0, 2_000, 0, 100), off=(0, 3_000, 0, 100)),
        ],
    ),
    Seeded(
        "sess-haiku-mine",
        "claude-haiku-4-5",
        [
            Call(
                noon(21, 7),
                charge=(0, 1_000, 0, 0),
                off=(0, 1_500, 0, 0),
                billed=(2_000, 0, 1_000, None, 100),
            ),
        ],
        overrides={"cache.prices": {"claude-haiku-4-5": {"input": 2.0}}},
    ),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "storage"
    seed(path, SESSIONS)
    return path


def stats(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli(["stats", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def stats_json(capsys: pytest.CaptureFixture[str], folder: Path, *args: str) -> Any:
    code, out, err = stats(capsys, "--storage-dir", str(folder), "--json", *args)
    assert code == 0, err
    return json.loads(out)


def close(got: float | None, want: float) -> None:
    """To the cent, and to the millionth the JSON gives."""
    assert got is not None
    assert round(got, 2) == round(want, 2)
    assert abs(got - want) < 1e-6, (got, want)


def total(*pairs: tuple[float, float]) -> tuple[float, float]:
    return sum(p[0] for p in pairs), sum(p[1] for p in pairs)


def test_every_figure_of_stats_json_is_what_the_usage_and_the_price_table_say(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = stats_json(capsys, folder)
    assert report["currency"] == "USD" and report["pricesChecked"]
    days = {d["day"]: d for d in report["days"]}
    assert list(days) == ["2026-11-20", "2026-11-21"]
    d20, d21 = days["2026-11-20"], days["2026-11-21"]

    cost, without = total(A["c1"], A["c2"], A["c3"])
    close(d20["cost"], cost)
    close(d20["without"], without)
    close(d20["saved"], without - cost)
    assert d20["ratio"] == round(cost / without, 4)
    close(d20["estimatedCost"], A["c3"][0])
    assert (d20["calls"], d20["refreshCalls"], d20["pricedCalls"]) == (4, 0, 3)
    assert (d20["estimatedCalls"], d20["unpricedCalls"]) == (1, 1)
    assert (d20["maskedOutputs"], d20["fetchedBack"]) == (5, 1)
    # Tokens: billed where usage came (plus what hdcontext took out, for the agent's), the
    # daemon's count for the estimated call, the billed ones of the unknown model's.
    assert d20["tokens"] == {
        "agent": 25_000 + (40_000 + 6_000) + 21_100 + 5_000,
        "model": 25_000 + 40_000 + 14_100 + 5_000,
        "cacheRead": 0 + 30_000 + 13_000 + 0,
        "cacheWrite": 24_000 + 9_000 + 1_000 + 1_000,
        "output": 800 + 500 + 0 + 10,
    }

    cost, without = total(A["c4"], A["refresh"], A["unseen"], D)
    close(d21["cost"], cost)
    close(d21["without"], without)
    close(d21["refreshCost"], A["refresh"][0])
    assert (d21["calls"], d21["refreshCalls"], d21["pricedCalls"], d21["unpricedCalls"]) == (
        4,
        1,
        4,
        1,
    )
    assert (d21["maskedOutputs"], d21["fetchedBack"]) == (0, 0)

    cost, without = total(*A.values(), D)
    t = report["totals"]
    close(t["cost"], cost)
    close(t["without"], without)
    close(t["saved"], without - cost)
    assert t["ratio"] == round(cost / without, 4)
    assert (t["calls"], t["refreshCalls"], t["maskedOutputs"], t["fetchedBack"]) == (8, 1, 5, 1)
    assert report["sessionsWithoutRecords"] == 0


def test_sessions_and_one_session_call_by_call(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = stats_json(capsys, folder, "--sessions")
    rows = {s["sessionId"]: s for s in report["sessions"]}
    assert report["sessions"][0]["sessionId"] == "sess-haiku-mine"  # latest first
    sonnet = rows["sess-sonnet"]
    cost, without = total(*A.values())
    close(sonnet["cost"], cost)
    close(sonnet["without"], without)
    assert sonnet["pricedAs"] == {"row": "claude-sonnet-4-5", "match": "exact"}
    mine = rows["sess-haiku-mine"]
    close(mine["cost"], D[0])
    close(mine["without"], D[1])
    assert mine["pricedAs"] == {"row": "claude-haiku-4-5", "match": "override"}

    one = stats_json(capsys, folder, "--session", "sess-son")["session"]  # the start of an id
    assert one["sessionId"] == "sess-sonnet"
    assert (one["calls"], one["refreshCalls"]) == (5, 1)
    calls = one["callDetails"]
    assert [c["kind"] for c in calls] == ["model", "model", "model", "model", "refresh", "model"]
    assert [c["basis"] for c in calls] == [
        "billed",
        "billed",
        "estimated",
        "billed",
        "billed",
        "billed",
    ]
    for call, key in zip(calls, ["c1", "c2", "c3", "c4", "refresh", "unseen"], strict=True):
        close(call["cost"], A[key][0])
        close(call["without"], A[key][1])
    assert calls[3]["billed"]["cacheWrite1h"] == 2_000
    assert calls[1]["estimate"] == {
        "cacheRead": 10_000,
        "cacheWrite": 3_000,
        "cacheWrite1h": 0,
        "plain": 200,
    }
    assert calls[1]["off"]["cacheWrite"] == 9_000


def test_no_usage_and_an_unknown_model_are_shown_in_tokens_only(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {s["sessionId"]: s for s in stats_json(capsys, folder, "--sessions")["sessions"]}
    for sid, why in (
        ("sess-nousage", "no usage reported for this session"),
        ("sess-mystery", "mystery-model-9 is not in the price table"),
    ):
        row = rows[sid]
        assert (row["cost"], row["without"], row["saved"], row["ratio"]) == (None,) * 4
        assert row["unpricedCalls"] == row["calls"] == 1
        assert row["unpriced"][0]["why"].startswith(why)
    assert rows["sess-nousage"]["tokens"]["agent"] == 3_100  # the daemon's count, in tokens
    assert rows["sess-nousage"]["tokens"]["model"] == 2_100
    assert rows["sess-mystery"]["tokens"]["model"] == 5_000  # as billed
    assert rows["sess-mystery"]["pricedAs"] == {"row": None, "match": "fallback"}
    # The daemon plans an unknown model with its provider's fallback row: stats never shows
    # that as money. A price of the user's that names the model does.
    prices = folder.parent / "prices.json"
    prices.write_text(
        json.dumps(
            {"mystery-model-9": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite5m": 1.25}}
        )
    )
    row = next(
        s
        for s in stats_json(capsys, folder, "--sessions", "--prices", str(prices))["sessions"]
        if s["sessionId"] == "sess-mystery"
    )
    close(row["cost"], (4_000 * 1 + 1_000 * 1.25 + 10 * 2) / 1e6)
    assert row["pricedAs"]["match"] == "override"


def test_since_keeps_the_calls_from_then_on(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = stats_json(capsys, folder, "--since", "2026-11-21")
    assert [d["day"] for d in report["days"]] == ["2026-11-21"]
    cost, _ = total(A["c4"], A["refresh"], A["unseen"], D)
    close(report["totals"]["cost"], cost)
    assert report["totals"]["maskedOutputs"] == 0  # masked before the 21st
    assert report["since"] == "2026-11-21"
    assert stats_json(capsys, folder, "--since", "20261121")["totals"] == report["totals"]


def test_a_prices_file_is_over_the_table_and_the_sessions_own(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = folder.parent / "prices.json"
    prices.write_text(json.dumps({"claude-sonnet-4-5": {"output": 30}, "claude-haiku-4-5": {}}))
    rows = {
        s["sessionId"]: s
        for s in stats_json(capsys, folder, "--sessions", "--prices", str(prices))["sessions"]
    }
    sonnet = (6.0 - 3.0, 30.0, 0.30, 3.75, 6.0)  # only the output differs...
    outputs = 800 + 500 + 100 + 1 + 50
    cost, _ = total(*A.values())
    close(rows["sess-sonnet"]["cost"], cost + outputs * (sonnet[1] - 15.0) / 1e6)
    # ... and an empty override of Haiku replaces the session's own: the table's $1 input.
    close(rows["sess-haiku-mine"]["cost"], (1_000 * 1.0 + 1_000 * 1.25 + 100 * 5) / 1e6)


def files(folder: Path) -> dict[str, bytes]:
    """What a change would change: the database and the transcripts (not the log's index,
    which a read-only reader may make)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_bad_input_is_one_line_exit_2_and_nothing_changed(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = files(folder)
    bad_prices = tmp_path / "bad.json"
    bad_prices.write_text(json.dumps({"claude-sonnet-4-5": {"cacheRead": "cheap"}}))
    not_json = tmp_path / "not.json"
    not_json.write_text("{")
    cases = [
        (["--storage-dir", str(tmp_path / "nowhere")], "no storage folder at"),
        (["--storage-dir", str(folder), "--session", "nope"], "no session 'nope'"),
        (["--storage-dir", str(folder), "--session", "sess-"], "4 sessions"),
        (["--storage-dir", str(folder), "--prices", str(bad_prices)], "cacheRead: expected"),
        (["--storage-dir", str(folder), "--prices", str(not_json)], "is not JSON"),
        (["--storage-dir", str(folder), "--prices", str(tmp_path / "none.json")], "cannot read"),
        (["--storage-dir", str(folder), "--since", "last tuesday"], "--since: not a day"),
        (["--storage-dir", str(folder), "--since", "2026-13-01"], "--since: not a day"),
    ]
    for args, said in cases:
        code, out, err = stats(capsys, *args)
        assert code == 2, args
        assert out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert said in err, err
    assert files(folder) == before


def test_a_sessions_own_price_setting_of_the_wrong_shape_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "storage"
    seed(
        folder,
        [
            Seeded(
                "hand-edited",
                "claude-sonnet-4-5",
                A_CALLS[:1],
                overrides={"cache.prices": {"claude-sonnet-4-5": {"input": -1}}},
            )
        ],
    )
    before = files(folder)
    code, out, err = stats(capsys, "--storage-dir", str(folder))
    assert code == 2 and out == ""
    assert "session hand-edited's setting cache.prices: claude-sonnet-4-5: input" in err
    assert files(folder) == before


def run(*args: str, columns: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "hdcontext", "stats", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_the_tables_read_at_80_columns(folder: Path) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name, args in (
        ("days", ()),
        ("sessions", ("--sessions",)),
        ("session", ("--session", "sess-sonnet")),
    ):
        for columns in (80, 120):
            done = run("--storage-dir", str(folder), *args, columns=columns)
            assert done.returncode == 0, done.stderr
            (ARTIFACTS / f"table-{name}-{columns}.txt").write_text(done.stdout)
            lines = done.stdout.splitlines()
            assert max(len(line) for line in lines) <= columns, done.stdout
            table = "\n".join(lines)
            for header in (
                "Calls" if name != "session" else "#",
                "Agent",
                "Model",
                "Cost",
                "Without",
            ):
                assert header in table
            if columns >= 100 and name == "days":
                assert "Masked" in table and "Refresh" in table
    days = run("--storage-dir", str(folder), columns=80).stdout
    assert "2026-11-20" in days and "$0.17*" in days  # $0.1662, an estimate among it
    assert "Saved $0.04:" in days
    assert "1 call without reported usage" in days
    assert "2 calls in tokens only" in days


def test_a_folder_held_by_a_running_daemon_is_read_without_its_lock(folder: Path) -> None:
    async def held() -> tuple[subprocess.CompletedProcess[str], bool]:
        store = SqliteStore(folder)
        await store.open()  # the folder's lock, as a daemon holds it
        try:
            before = (folder / DB_NAME).read_bytes()
            done = await asyncio.to_thread(run, "--storage-dir", str(folder), "--json", columns=80)
            return done, (folder / DB_NAME).read_bytes() == before
        finally:
            await store.close()

    done, unchanged = asyncio.run(held())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["calls"] == 8
    assert unchanged


def test_the_command_lines_parser_loads_neither_rich_nor_aiohttp() -> None:
    """Every command builds the stats parser, ``hdcontext serve`` included: the daemon an
    editor starts would pay for both (a tenth of its start-up) and use neither."""
    probe = "import sys, hdcontext.cli.main; print(sorted({'rich', 'aiohttp'} & set(sys.modules)))"
    command = [sys.executable, "-c", probe]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_pages_default_port_is_the_dashboards() -> None:
    from hdcontext.cli.stats import DEFAULT_PORT
    from hdcontext.edges.proxy.dashboard import DEFAULT_PORT as DASHBOARD_PORT

    assert DEFAULT_PORT == DASHBOARD_PORT


def test_the_requests_the_proxy_did_not_carry_are_said(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent the proxy cannot carry is visible from its first day: the requests that went
    as they came, those the proxy answered itself and those of no model call, each with its
    reason, in the JSON and under the table; ``--since`` keeps the recent ones."""
    from hdcontext.edges.storage.records import PassedRow

    async def count() -> None:
        store = SqliteStore(folder)
        await store.open()
        try:
            await store.add_passed(
                [
                    PassedRow(
                        "2026-11-20", "responses", "as sent", "not carried: x", 3, noon(20, 0)
                    ),
                    PassedRow(
                        "2026-11-21", "responses", "as sent", "not carried: x", 2, noon(21, 0)
                    ),
                    PassedRow(
                        "2026-11-21", "", "not forwarded", "/api/chat is no API", 1, noon(21, 1)
                    ),
                ]
            )
        finally:
            await store.close()

    asyncio.run(count())
    every = stats_json(capsys, folder)["notCarried"]
    assert (every["asSent"], every["notForwarded"], every["passedThrough"]) == (5, 1, 0)
    assert every["reasons"] == [{"why": "responses not carried: x", "requests": 5}]
    recent = stats_json(capsys, folder, "--since", "2026-11-21")["notCarried"]
    assert recent["asSent"] == 2  # the day before goes; its rows are kept whole per day
    table = run("--storage-dir", str(folder), columns=80).stdout
    assert "5 requests went to the model as the agent sent them" in table
    assert "1 request answered by the proxy and forwarded nowhere" in table
