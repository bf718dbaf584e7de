"""The savings page: one HTML document, its figures in as JSON (``core.stats.page_json``).

One function (``render``) makes it for everyone who shows it: the proxy's ``GET /``,
``hdcontext stats --serve``, and the editor's webview, which can also hand it new figures
later (``window.postMessage({type: "hdcontext.stats", figures})``) without reloading it.

It needs no network: its style and its script are inline, its charts SVG drawn by that
script; nothing is fetched. It carries no conversation: the figures are counts, prices and
session ids, and the script puts every string into the page as text (never as HTML), so a
session id a client chose cannot become markup. The figures sit in a ``<script
type="application/json">`` element with ``<``, ``>`` and ``&`` escaped, so no value can end it.

``CONTENT_SECURITY_POLICY`` is what a server sends with it: no source at all but the page's
own script (by its hash) and inline style.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Mapping
from typing import Any

DATA_ID = "hdcontext-stats-data"
MESSAGE_TYPE = "hdcontext.stats"

_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #656d76; --bg: #ffffff;
  --card: #f6f8fa; --line: #d0d7de; --with: #0969da; --without: #afb8c1; --read: #1a7f37;
  --refresh: #bc4c00; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0;
  --bg: #0d1117; --card: #161b22; --line: #30363d; --with: #4493f8; --without: #59636e;
  --read: #3fb950; --refresh: #f0883e; } }
body.vscode-light, body.vscode-dark, body.vscode-high-contrast { --bg: transparent; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.meta, .note { color: var(--muted); font-size: 12px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr));
  gap: 12px; margin-top: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; }
.card .value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .sub { color: var(--muted); font-size: 12px; }
.saved .value { color: var(--read); }
svg { width: 100%; height: auto; display: block; }
svg text { fill: var(--muted); font-size: 11px; }
svg .grid { stroke: var(--line); stroke-width: 1; }
.bar-with { fill: var(--with); } .bar-without { fill: var(--without); }
.bar-agent { fill: var(--without); } .bar-model { fill: var(--with); }
.bar-read { fill: var(--read); } .bar-refresh { fill: var(--refresh); }
.legend { display: flex; gap: 16px; font-size: 12px; color: var(--muted); margin: 4px 0; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 4px; vertical-align: -1px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: right;
  white-space: nowrap; }
th { color: var(--muted); font-weight: 500; font-size: 12px; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
td.id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px;
  max-width: 26ch; overflow: hidden; text-overflow: ellipsis; }
tbody tr { cursor: pointer; } tbody tr:hover, tbody tr.chosen { background: var(--card); }
.empty { color: var(--muted); padding: 16px 0; }
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var chosen = null;
  var figures = null;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function money(v) {
    if (v === null || v === undefined) return "\u2013";
    var sign = v < 0 ? "-" : "";
    v = Math.abs(v);
    if (v > 0 && v < 0.005) return sign + "<$0.01";
    return sign + "$" + v.toLocaleString("en-US",
      {minimumFractionDigits: 2, maximumFractionDigits: 2});
  }
  function axisMoney(max) {
    // The axis's steps are a quarter of its top: with a small top, cents would print the
    // same label twice, so the labels take the digits the step needs.
    var step = max / 4;
    var digits = step > 0 && step < 0.01 ? Math.min(6, Math.ceil(-Math.log10(step))) : 2;
    return function (v) {
      return "$" + v.toLocaleString("en-US",
        {minimumFractionDigits: digits, maximumFractionDigits: digits});
    };
  }
  function tokens(n) {
    if (n === null || n === undefined) return "\u2013";
    var a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(1) + "B";
    if (a >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return Math.round(n / 1e3) + "k";
    return n.toLocaleString("en-US");
  }
  function plural(n, noun) {
    return n.toLocaleString("en-US") + " " + noun + (n === 1 ? "" : "s");
  }
  function percent(ratio) {
    return ratio === null || ratio === undefined ? "" : Math.round((1 - ratio) * 100) + "%";
  }
  function niceMax(v) {
    if (!(v > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= v) return steps[i] * p;
    return 10 * p;
  }
  function card(label, value, sub, id, extra) {
    var c = el("div", {"class": "card" + (extra ? " " + extra : "")});
    c.appendChild(el("div", {"class": "label"}, label));
    c.appendChild(el("div", {"class": "value", "data-testid": id}, value));
    if (sub) c.appendChild(el("div", {"class": "sub", "data-testid": id + "-sub"}, sub));
    return c;
  }

  function axes(root, w, h, pad, max, fmt) {
    for (var i = 0; i <= 4; i++) {
      var y = pad.top + (h - pad.top - pad.bottom) * (1 - i / 4);
      root.appendChild(svg("line", {"class": "grid", x1: pad.left, x2: w - pad.right,
        y1: y, y2: y}));
      root.appendChild(svg("text", {x: pad.left - 6, y: y + 4, "text-anchor": "end"},
        fmt(max * i / 4)));
    }
  }

  function dailyChart(days) {
    var w = 760, h = 240, pad = {top: 10, right: 10, bottom: 28, left: 64};
    var root = svg("svg", {id: "daily-chart", viewBox: "0 0 " + w + " " + h,
      role: "img", "aria-label": "cost per day with and without hdcontext"});
    var priced = days.filter(function (d) { return d.cost !== null; });
    var max = niceMax(Math.max.apply(null, priced.map(function (d) {
      return Math.max(d.cost, d.without);
    }).concat([0])));
    axes(root, w, h, pad, max, axisMoney(max));
    var n = Math.max(days.length, 1);
    var slot = (w - pad.left - pad.right) / n;
    var bar = Math.max(1, Math.min(28, slot * 0.36));
    var every = Math.ceil(n / 12);
    var scale = (h - pad.top - pad.bottom) / max;
    days.forEach(function (d, i) {
      var x = pad.left + slot * i + slot / 2;
      var base = h - pad.bottom;
      if (d.cost !== null) {
        var tw = Math.max(d.without, 0) * scale, tc = Math.max(d.cost, 0) * scale;
        var a = svg("rect", {"class": "bar-without", x: x - bar, y: base - tw, width: bar,
          height: tw, "data-day": d.day});
        a.appendChild(svg("title", {}, d.day + ": " + money(d.without) + " without hdcontext"));
        root.appendChild(a);
        var b = svg("rect", {"class": "bar-with", x: x, y: base - tc, width: bar, height: tc,
          "data-day": d.day});
        b.appendChild(svg("title", {}, d.day + ": " + money(d.cost) + " with hdcontext"));
        root.appendChild(b);
      }
      if (i % every === 0) {
        root.appendChild(svg("text", {x: x, y: h - 8, "text-anchor": "middle"},
          d.day.slice(5)));
      }
    });
    return root;
  }

  function sessionChart(session) {
    var w = 760, h = 240, pad = {top: 10, right: 10, bottom: 28, left: 64};
    var calls = session.series || [];
    var root = svg("svg", {id: "session-chart", viewBox: "0 0 " + w + " " + h, role: "img",
      "aria-label": "each call's input tokens: sent by the agent, sent to the model, "
        + "read from the cache"});
    var max = niceMax(Math.max.apply(null, calls.map(function (c) {
      return Math.max(c[3], c[4]);
    }).concat([0])));
    axes(root, w, h, pad, max, tokens);
    var n = Math.max(calls.length, 1);
    var slot = (w - pad.left - pad.right) / n;
    var bar = Math.max(1, slot * 0.7);
    var every = Math.ceil(n / 12);
    var scale = (h - pad.top - pad.bottom) / max;
    calls.forEach(function (c, i) {
      var x = pad.left + slot * i + (slot - bar) / 2;
      var base = h - pad.bottom;
      var refresh = c[2] === "refresh";
      var title = "call " + (i + 1) + (refresh ? " (refresh)" : "") + ": agent sent "
        + tokens(c[3]) + ", to the model " + tokens(c[4]) + ", cache read " + tokens(c[5]);
      [["bar-agent", c[3]], [refresh ? "bar-refresh" : "bar-model", c[4]],
       ["bar-read", Math.min(c[5], c[4])]].forEach(function (part) {
        var t = Math.max(part[1], 0) * scale;
        var r = svg("rect", {"class": part[0], x: x, y: base - t, width: bar, height: t});
        r.appendChild(svg("title", {}, title));
        root.appendChild(r);
      });
      if (refresh) {  // its read covers it: a mark on top says what it was
        var top = base - Math.max(c[3], c[4], 0) * scale;
        root.appendChild(svg("rect", {"class": "bar-refresh", x: x, y: top - 4, width: bar,
          height: 4}));
      }
      if (i % every === 0) {
        root.appendChild(svg("text", {x: x + bar / 2, y: h - 8, "text-anchor": "middle"},
          String(i + 1)));
      }
    });
    return root;
  }

  function legend(items) {
    var box = el("div", {"class": "legend"});
    items.forEach(function (item) {
      var span = el("span");
      var swatch = el("i");
      swatch.style.background = "var(" + item[0] + ")";
      span.appendChild(swatch);
      span.appendChild(document.createTextNode(item[1]));
      box.appendChild(span);
    });
    return box;
  }

  function showSession(id) {
    chosen = id;
    var box = document.getElementById("session-detail");
    box.textContent = "";
    var session = (figures.sessions || []).filter(function (s) {
      return s.sessionId === id;
    })[0];
    var rows = document.querySelectorAll("#sessions tbody tr");
    for (var i = 0; i < rows.length; i++) {
      rows[i].classList.toggle("chosen", rows[i].getAttribute("data-session") === id);
    }
    if (!session) return;
    box.appendChild(el("h2", {"data-testid": "session-title"}, "Session " + session.sessionId));
    box.appendChild(el("div", {"class": "note"}, (session.model || "no model") + " \u00b7 "
      + plural((session.series || []).length, "call") + " \u00b7 " + (session.first || "")
      + " \u2192 " + (session.last || "")));
    box.appendChild(legend([["--without", "sent by the agent"], ["--with", "sent to the model"],
      ["--read", "read from the cache"], ["--refresh", "refresh call"]]));
    box.appendChild(sessionChart(session));
  }

  function render(data) {
    figures = data;
    var root = document.getElementById("app");
    root.textContent = "";
    var t = data.totals;
    root.appendChild(el("h1", {}, "hdcontext: what it saved"));
    var since = data.since ? " since " + data.since : "";
    root.appendChild(el("div", {"class": "meta"}, "Storage " + data.storageDir + since
      + " \u00b7 prices of " + data.pricesChecked + " (" + data.currency + ")"));
    var cards = el("div", {"class": "cards"});
    var est = t.estimatedCalls ? "of which " + money(t.estimatedCost) + " estimated ("
      + plural(t.estimatedCalls, "call") + " without usage)" : "as billed";
    cards.appendChild(card("Cost with hdcontext", money(t.cost), est, "total-cost"));
    cards.appendChild(card("Without hdcontext", money(t.without),
      "the same calls, nothing taken out", "total-without"));
    cards.appendChild(card("Saved", money(t.saved), t.ratio === null ? "" : percent(t.ratio)
      + " of what it would have cost", "total-saved", "saved"));
    cards.appendChild(card("Model calls", t.calls.toLocaleString("en-US"),
      t.refreshCalls ? plural(t.refreshCalls, "refresh call") + " (" + money(t.refreshCost) + ")"
        : "",
      "total-calls"));
    cards.appendChild(card("Input tokens", tokens(t.tokens.agent) + " \u2192 "
      + tokens(t.tokens.model), "sent by the agent \u2192 to the model; "
      + tokens(t.tokens.cacheRead) + " read from the cache", "total-tokens"));
    cards.appendChild(card("Masked outputs", t.maskedOutputs.toLocaleString("en-US"),
      t.fetchedBack.toLocaleString("en-US") + " fetched back by the model", "total-masked"));
    root.appendChild(cards);
    if (t.unpricedCalls) {
      var why = t.unpriced.map(function (u) { return u.why; }).filter(function (w, i, all) {
        return all.indexOf(w) === i;
      }).join("; ");
      root.appendChild(el("p", {"class": "note", "data-testid": "unpriced"},
        plural(t.unpricedCalls, "call") + " shown in tokens only: " + why));
    }

    // The requests hdcontext did not carry: those the storage counted in the period, or,
    // where it counted none yet, those the running proxy counted since it started.
    var stored = data.passed;
    var proxy = stored && (stored.asSent || stored.notForwarded || stored.passedThrough)
      ? stored : data.proxy;
    var when = proxy === stored ? "" : " since the proxy started";
    function listed(reasons) {
      return reasons.map(function (r) {
        return r.why + " (" + r.requests.toLocaleString("en-US") + ")";
      }).join("; ");
    }
    if (proxy && proxy.asSent) {
      root.appendChild(el("p", {"class": "note", "data-testid": "as-sent"},
        plural(proxy.asSent, "request") + when + " went to the model "
          + "as the agent sent them, nothing taken out: " + listed(proxy.reasons)));
    }
    if (proxy && proxy.notForwarded) {
      root.appendChild(el("p", {"class": "note", "data-testid": "not-forwarded"},
        plural(proxy.notForwarded, "request") + when + " "
          + (proxy.notForwarded === 1 ? "was" : "were") + " answered by the proxy and "
          + "forwarded nowhere: " + listed(proxy.notForwardedReasons)));
    }
    if (proxy && proxy.passedThrough) {
      root.appendChild(el("p", {"class": "note", "data-testid": "passed-through"},
        plural(proxy.passedThrough, "request") + when + " of no model call "
          + (proxy.passedThrough === 1 ? "was" : "were") + " passed to the provider as "
          + (proxy.passedThrough === 1 ? "it" : "they") + " came: "
          + listed(proxy.passedThroughReasons)));
    }

    root.appendChild(el("h2", {}, "Cost per day"));
    root.appendChild(legend([["--without", "without hdcontext"], ["--with", "with hdcontext"]]));
    if (data.days.length) root.appendChild(dailyChart(data.days));
    else root.appendChild(el("div", {"class": "empty"}, "No calls kept yet."));

    root.appendChild(el("h2", {}, "Sessions"));
    var table = el("table", {id: "sessions"});
    var head = el("tr");
    ["Session", "Model", "Last used", "Calls", "Agent \u2192 model", "Cost", "Without",
     "Saved"].forEach(function (name) { head.appendChild(el("th", {}, name)); });
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el("tbody");
    (data.sessions || []).forEach(function (s) {
      var tr = el("tr", {"data-session": s.sessionId, tabindex: "0"});
      tr.appendChild(el("td", {"class": "id", title: s.sessionId}, s.sessionId));
      tr.appendChild(el("td", {}, s.model || "\u2013"));
      tr.appendChild(el("td", {}, s.last || ""));
      tr.appendChild(el("td", {}, s.calls + (s.refreshCalls ? " +" + s.refreshCalls : "")));
      tr.appendChild(el("td", {}, tokens(s.tokens.agent) + " \u2192 " + tokens(s.tokens.model)));
      tr.appendChild(el("td", {}, money(s.cost) + (s.estimatedCalls ? "*" : "")));
      tr.appendChild(el("td", {}, money(s.without)));
      tr.appendChild(el("td", {}, s.saved === null ? "tokens only" : money(s.saved)
        + " (" + percent(s.ratio) + ")"));
      tr.addEventListener("click", function () { showSession(s.sessionId); });
      tr.addEventListener("keydown", function (e) {
        if (e.key === "Enter") showSession(s.sessionId);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    root.appendChild(table);
    if (!(data.sessions || []).length) {
      root.appendChild(el("div", {"class": "empty"}, "No sessions with calls kept."));
    }
    root.appendChild(el("p", {"class": "note"}, "* includes calls without reported usage, "
      + "estimated from hdcontext's own count (input only). \"Without hdcontext\" is each call "
      + "with what hdcontext took out put back, priced at the same model's prices."));
    root.appendChild(el("div", {id: "session-detail"}));
    var first = (data.sessions || [])[0];
    var keep = (data.sessions || []).some(function (s) { return s.sessionId === chosen; });
    if (keep) showSession(chosen); else if (first) showSession(first.sessionId);
  }

  window.hdcontextStats = {render: render};
  window.addEventListener("message", function (event) {
    var m = event.data;
    if (m && m.type === "hdcontext.stats" && m.figures) render(m.figures);
  });
  var data = document.getElementById("hdcontext-stats-data");
  if (data && data.textContent.trim()) render(JSON.parse(data.textContent));
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src '{SCRIPT_HASH}'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""For a server to send with the page: nothing loads from anywhere, only its own script runs."""


def figures_json(figures: Mapping[str, Any] | None) -> str:
    """The figures as the page embeds them: JSON in which ``<``, ``>`` and ``&`` are escaped,
    so nothing in it can close the element that holds it."""
    if figures is None:
        return ""
    text = json.dumps(figures, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render(figures: Mapping[str, Any] | None, *, nonce: str | None = None) -> str:
    """The page, showing ``figures`` (``core.stats.page_json``'s shape); ``None``: empty
    until figures are posted to it. ``nonce``: put on its script and its style, for a host
    whose content security policy allows them by nonce only (the editor's webview)."""
    nonce_attr = f' nonce="{html.escape(nonce, quote=True)}"' if nonce else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        "<title>hdcontext: what it saved</title>"
        f"<style{nonce_attr}>{_STYLE}</style></head>"
        '<body><main id="app"></main>'
        f'<script type="application/json" id="{DATA_ID}">{figures_json(figures)}</script>'
        f"<script{nonce_attr}>{_SCRIPT}</script>"
        "</body></html>\n"
    )
