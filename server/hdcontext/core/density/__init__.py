"""Density: the rules that take provably dead weight out of a history (stale reads, repeated
``@file`` inclusions, old tool output), as passes over one incremental engine."""
