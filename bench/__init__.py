"""hdcontext's benchmark: density on real agent sessions, latency and memory of the daemon.

Run it with ``make bench`` (or ``python -m bench`` from the repository root).
"""
