"""The ``hdcontext`` command line (``main.py``): it may use the core, the formats and the
daemon's edges; nothing imports it."""

from .main import main

__all__ = ["main"]
