"""``hdcontext proxy``: hdcontext in front of any agent that speaks Anthropic's or OpenAI's API.

Agents that call a provider themselves (Claude Code, Cline, Roo, Kilo, Continue, Aider) can be
pointed at another base URL. The proxy answers there, on loopback: each request's conversation
goes to a session (``history/sync`` semantics, since these clients resend everything), is
compacted against the provider's prompt cache, and goes upstream in the provider's format with
everything else of the request as the client sent it and the daemon's cache breakpoints in
place; the answer streams back unchanged and its usage goes to the session.

Never worse than no proxy: whatever hdcontext cannot carry, or fails at, or is too slow for,
goes upstream as it came. The modules: ``anthropic`` and ``openai`` (the two APIs: what of a
request can be carried, the request rebuilt, usage read), ``usage`` (usage from a JSON answer
or an event stream), ``compactor`` (the hdcontext part, over the daemon's sessions),
``upstream`` (forwarding), ``guard`` (who may call), ``app`` (the HTTP server) and ``run``
(the command).
"""
