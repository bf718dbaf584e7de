"""A throwaway PostgreSQL cluster for the tests: Debian's binaries, a data folder, a port and a
socket folder of its own under a temporary folder, trusted local connections only (no TCP
listener: nothing outside the machine reaches it), fsync off (a test's database is thrown away;
a process killed does not lose what the server has, which is what the tests kill). It starts in
about a second and a half.

PostgreSQL refuses to run as root: under root it runs as the user ``postgres`` (Debian's
package makes it), its folder given to that user. Without the binaries, psycopg, or that user
under root, ``why_not`` says why and the tests that need it are skipped with the reason.
``make test`` installs what is missing (Debian's ``postgresql``, the ``postgres`` extra).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "hdc"
START_S = 60


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on the PATH, else Debian's newest."""
    found = shutil.which("initdb")
    if found is not None and shutil.which("pg_ctl") is not None:
        return Path(found).parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(versions[-1]).parent if versions else None


def why_not() -> str | None:
    """Why no cluster can be started here (``None``: one can)."""
    if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
        return "HDC_SKIP_EDITOR_TESTS=1: no PostgreSQL cluster is started"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]'; make test installs it)"
    if binaries() is None:
        return (
            "PostgreSQL's binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no user 'postgres' to run PostgreSQL as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    folder: Path
    port: int
    bin: Path
    _names: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def sockets(self) -> str:
        return str(self.folder)

    def url(self, database: str = "postgres", user: str = SUPERUSER, password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@/{database}?host={self.sockets}&port={self.port}"

    def new_database(self, prefix: str = "t") -> str:
        """A database of its own for a test: its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def sql(
        self, url: str, statement: str, params: tuple[object, ...] = ()
    ) -> list[tuple[object, ...]]:
        """Run one statement on the database of ``url`` as the superuser; its rows."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            cur = conn.execute(statement, params)
            return list(cur.fetchall()) if cur.description is not None else []

    def stop(self) -> None:
        _run(
            self,
            [str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop"],
            check=False,
        )
        shutil.rmtree(self.folder, ignore_errors=True)


def _as_owner() -> dict[str, object]:
    """Run a child as the user ``postgres`` when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("postgres")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _run(cluster: Cluster, command: list[str], check: bool = True) -> None:
    subprocess.run(
        command,
        check=check,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cluster.folder,
        timeout=START_S,
        **_as_owner(),  # type: ignore[arg-type]
    )


def start(fsync: bool = False) -> Cluster:
    """initdb and start a cluster; ``Cluster.stop`` ends it and deletes its folder. ``fsync``:
    commits flushed to the disk, as a real database's are (what ``bench/storage.py`` times)."""
    found = binaries()
    assert found is not None
    folder = Path(tempfile.mkdtemp(prefix="hdc-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    cluster = Cluster(folder, _free_port(), found)
    data = folder / "data"
    try:
        _run(
            cluster,
            [
                str(found / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                SUPERUSER,
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )
        flushing = "" if fsync else "-c fsync=off -c full_page_writes=off "
        options = (
            f"-p {cluster.port} -k {folder} -c listen_addresses='' {flushing}-c max_connections=200"
        )
        _run(
            cluster,
            [
                str(found / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-t",
                str(START_S),
                "-l",
                str(folder / "log"),
                "start",
            ],
        )
    except BaseException:
        with contextlib.suppress(Exception):
            cluster.stop()
        raise
    return cluster
