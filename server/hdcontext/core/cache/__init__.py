"""Prompt caching: what a provider charges for cached input, and when density edits pay."""
