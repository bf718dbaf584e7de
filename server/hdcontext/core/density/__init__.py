"""Density: the rules that take provably dead weight out of a history (stale reads, repeated
``@file`` inclusions, old tool output, output the model has already read), as passes over one
incremental engine."""
