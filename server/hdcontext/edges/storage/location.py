"""Where the sessions are kept: a storage folder (SQLite, the default), or a PostgreSQL database
named by its URL.

One value, read from ``--storage`` (a folder or a ``postgresql://`` URL), else from
``HDCONTEXT_DATABASE_URL``, else the default folder, so that the daemon, the proxy and the
commands agree on what a value means. A URL is never shown with its password: ``shown`` is what
messages and the log say (a password in the URL's user part or in its ``password`` parameter
is left out), since a start failure is printed where anyone watching the terminal or the
service's log reads it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DATABASE_URL_ENV = "HDCONTEXT_DATABASE_URL"
"""The database to use when ``--storage`` names none (a gateway's replicas share one)."""
SCHEMES = ("postgresql", "postgres")


def is_database_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://…``, ``postgres://…``)."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


@dataclass(frozen=True)
class Location:
    """A storage folder, or a database's URL (exactly one of the two)."""

    folder: Path | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if (self.folder is None) == (self.url is None):
            raise ValueError("a location is a folder or a database URL")

    @property
    def shown(self) -> str:
        """The folder, or the URL without its password: what messages say."""
        if self.url is not None:
            return redacted(self.url)
        return str(self.folder)

    def __str__(self) -> str:
        return self.shown


def folder(path: Path) -> Location:
    return Location(folder=path)


def database(url: str) -> Location:
    return Location(url=url)


def as_location(where: Location | Path | str) -> Location:
    """``where`` as a location: a ``postgresql://`` URL names a database, any other text or
    path a folder."""
    if isinstance(where, Location):
        return where
    if isinstance(where, str) and is_database_url(where):
        return database(where)
    return folder(Path(where))


def given_or_default(given: str | Path | None, default: Path) -> Location:
    """``--storage``'s value (a folder or a URL), else ``HDCONTEXT_DATABASE_URL``, else the
    default folder. A folder is taken as given (the caller resolves it)."""
    if given is not None and str(given) != "":
        text = str(given)
        return database(text) if is_database_url(text) else folder(Path(text))
    env = os.environ.get(DATABASE_URL_ENV, "").strip()
    if env:
        return database(env)
    return folder(default)


def redacted(url: str) -> str:
    """``url`` with no password in it: the user part keeps the user, a ``password`` (or any
    ``…password``) parameter goes. A URL that cannot be read is shown by its scheme only."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.partition("://")[0] + "://…"
    netloc = parts.netloc
    userinfo, at, hosts = netloc.rpartition("@")
    if at:
        netloc = f"{userinfo.partition(':')[0]}@{hosts}"
    query = parts.query
    if query:
        kept = [
            (key, value)
            for key, value in parse_qsl(query, keep_blank_values=True)
            if "password" not in key.lower()
        ]
        query = urlencode(kept, safe="/:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
