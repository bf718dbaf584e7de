"""Conversions from real agents' session formats to IContent."""
