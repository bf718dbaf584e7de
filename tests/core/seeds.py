"""The seeds' behaviour as settings: density edits at every compact, any write prunes a read.

PROTOCOL.md keeps it available (``compression.density.schedule: every-turn`` and
``compression.density.keepLatestView: false``); tests that pin the seeds' rules run under it.
"""

from __future__ import annotations

from hdcontext.core.session.session import Session

SEEDS_SETTINGS: dict[str, object] = {
    "compression.density.schedule": "every-turn",
    "compression.density.keepLatestView": False,
}


def seeds(session: Session) -> Session:
    """The session, set to the seeds' schedule and READ → WRITE rule."""
    for key, value in SEEDS_SETTINGS.items():
        session.set_override(key, value)
    return session
