"""The daemon's log: stderr only (stdout is the protocol), and never the conversation.

pygls logs whole messages at INFO, a malformed message's params at ERROR ("Failed to handle
request 7 history/append {...}"), a message with a wrong ``jsonrpc`` in full at WARNING, and
tracebacks whose exception texts can quote a value. Its level alone cannot keep content out,
so every pygls record is written without its arguments and with its exception's type only: the
template says what happened, which is all an operator needs. hdcontext's own modules log no
content by construction (types, counts, method names).
"""

from __future__ import annotations

import logging
import re
import sys

from ..daemon.wire import WireError

_PLACEHOLDER = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfgiaxX%]")


class _ExpectedErrors(logging.Filter):
    """Drop pygls' tracebacks for errors answered on purpose (bad input is not a crash)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, WireError)


class _NoContent(logging.Filter):
    """pygls' records as their templates: arguments and exception texts withheld."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("pygls"):
            return True
        template = str(record.msg)
        exc = record.exc_info[1] if record.exc_info else None
        if record.args:
            template = _PLACEHOLDER.sub("…", template)
        if exc is not None:
            template = f"{template} ({type(exc).__name__})"
        record.msg = template
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr. pygls stays at WARNING (at INFO it logs every message it sends), and
    whatever it logs goes through ``_NoContent``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_ExpectedErrors())
    handler.addFilter(_NoContent())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("hdcontext").setLevel(level)
    logging.getLogger("pygls").setLevel(logging.WARNING)
