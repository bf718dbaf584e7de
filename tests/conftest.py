"""What every test shares: a data folder of each pytest worker's own, and ``--progress-by-file``:
one line per test file as its last test finishes (what it counted and the seconds its tests
took, setup and teardown included), instead of pytest's dots, which say little over 1,600 tests
on two workers. ``make unit`` turns it on. Failures are still reported in full at the end."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from typing import Any

import pytest
from hypothesis import settings

from tests import postgres_cluster as postgres
from tests.postgres_cluster import Cluster

if os.environ.get("HDCONTEXT_CI") == "1":
    # CI (.ci/run): the property tests run Hypothesis' own "ci" profile, the same examples on
    # every run, so that a red run is one anybody can run again, and nothing lands or fails by
    # the luck of the draw. ``make test`` elsewhere draws new examples each run, and ``make
    # fuzz`` draws many more: that is where new counterexamples are found (and then kept as
    # ``@example``s).
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this worker's own, for the whole run (``postgres_cluster.py``);
    the tests that use it are skipped with the reason where none can be started."""
    reason = postgres.why_not()
    if reason is not None:
        pytest.skip(reason)
    cluster = postgres.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(postgres_cluster: Cluster) -> str:
    """The URL of a new database of the cluster, the test's alone."""
    return postgres_cluster.new_database()


@pytest.fixture(autouse=True, scope="session")
def _data_folder_of_this_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A daemon, proxy or command started without a storage folder uses the default one
    (platformdirs: ``$XDG_DATA_HOME/hdcontext``). Under ``pytest -n`` the workers run side by
    side, and one default for all would let one worker's daemon hold another's lock or list its
    sessions, and would write into the user's own folder: each worker gets its own, under its
    temporary folder, passed on to every process it starts."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
    yield
    patch.undo()


_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "error": 2, "failed": 3}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--progress-by-file",
        action="store_true",
        help="one line per test file as it finishes, instead of a dot per test",
    )


@pytest.hookimpl(trylast=True)  # after the terminal reporter is there
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--progress-by-file") and not hasattr(config, "workerinput"):
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.register(FileProgress(reporter), "hdcontext-file-progress")


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "skipped" if report.skipped else "passed"


class FileProgress:
    def __init__(self, reporter: Any) -> None:
        self.reporter = reporter
        self.expected: Counter[str] = Counter()
        self.done: Counter[str] = Counter()
        self.outcomes: dict[str, Counter[str]] = {}
        self.worst: dict[str, str] = {}
        self.seconds: Counter[str] = Counter()
        self.finished = 0

    def _expect(self, nodeids: Iterable[str]) -> None:
        if not self.expected:  # every xdist worker collects the same list: count it once
            self.expected.update(_file(n) for n in nodeids)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._expect(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._expect(ids)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, Any, Any]:
        category, _letter, word = yield
        return category, "", word  # no dot: the file's line says it

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = _file(report.nodeid)
        self.seconds[name] += report.duration
        outcome = _outcome(report)
        if _RANK[outcome] >= _RANK[self.worst.get(report.nodeid, "passed")]:
            self.worst[report.nodeid] = outcome
        if report.when != "teardown":
            return
        self.outcomes.setdefault(name, Counter())[self.worst.pop(report.nodeid)] += 1
        self.done[name] += 1
        self.finished += 1
        if self.done[name] == self.expected.get(name, 0):
            counts = ", ".join(f"{n} {what}" for what, n in sorted(self.outcomes[name].items()))
            total = sum(self.expected.values())
            self.reporter.ensure_newline()
            self.reporter.write_line(
                f"{name}: {counts} ({self.seconds[name]:.1f} s) [{self.finished}/{total}]",
                red=bool(self.outcomes[name]["failed"] or self.outcomes[name]["error"]),
            )
