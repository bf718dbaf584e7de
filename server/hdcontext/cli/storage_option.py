"""``--storage``: where the commands find the sessions, one option for all of them.

A folder (SQLite, the default: the platform's user data folder) or a ``postgresql://`` URL
(the sessions a team's replicas share); without it, ``HDCONTEXT_DATABASE_URL`` when set, else
the default folder. ``--storage-dir``, the older name, is the same option. A folder is resolved
here, so every command names it the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..edges.storage.location import DATABASE_URL_ENV, Location, given_or_default


def add_storage_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--storage FOLDER|URL`` (and ``--storage-dir``) on ``parser``; ``what`` ends its help."""
    parser.add_argument(
        "--storage",
        "--storage-dir",
        dest="storage",
        default=None,
        metavar="FOLDER|URL",
        help=f"a storage folder, or a PostgreSQL database as postgresql://USER@HOST/DB "
        f"(default: ${DATABASE_URL_ENV} when set, else the folder below); {what}",
    )


def storage_of(given: str | None, default: Path) -> Location | str:
    """The location ``--storage`` names (its default when ``None``), or why it cannot be
    one (a line for the user)."""
    if given is not None and "\x00" in given:
        return "--storage contains a NUL character"
    place = given_or_default(given, default)
    if place.folder is None:
        return place
    try:
        return Location(folder=place.folder.expanduser().resolve())
    except (OSError, RuntimeError) as exc:
        return f"{place.folder}: {exc}"
