"""``guard audit --html FILE``: the report as one self-contained page a person looks at.

No script, no network, no external font or style: the charts are inline SVG, the commands behind
a row open in a ``<details>`` element, and a Content-Security-Policy forbids anything else. Every
field a record carries came from an agent's sandbox, so each is put through ``display.inert``
(terminal controls, bidirectional overrides and invisible characters become visible escapes)
and then HTML-escaped, quotes included, before it reaches the page — in text and in attributes
alike.
"""

from __future__ import annotations

import html
from typing import Any

from guard.text.display import clip, inert

# One colour per category (a category past the palette gets grey), chosen to stay apart for
# the common forms of colour blindness.
PALETTE = (
    "#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377",
    "#bb5566", "#004488", "#997700", "#117733", "#882255", "#44aa99",
)  # fmt: skip
OTHER = "#bbbbbb"
CHART_W, CHART_H = 960, 260
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.totals{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.totals div{background:#f4f6f8;border-radius:6px;padding:8px 12px;min-width:110px}
.totals b{display:block;font-size:20px}
table{border-collapse:collapse;width:100%}td,th{padding:4px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #eee}
th{font-weight:600;color:#555}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;width:1%}
td.b{width:170px}ul.ids{columns:3;font-size:12px}
.bar{background:#4477aa;height:10px;border-radius:2px;display:inline-block}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-all}
details summary{cursor:pointer}details ol,details ul{margin:4px 0 4px 18px;padding:0}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.muted{color:#777}
"""


def esc(value: object, width: int = 0) -> str:
    """An untrusted value as HTML text or attribute value: neutralised, clipped, escaped."""
    text = inert(value)
    return html.escape(clip(text, width) if width else text, quote=True)


def render_html(data: dict[str, Any], details: dict[str, Any], top_n: int) -> str:
    s = data["summary"]
    period = f"{s['first'][:10]} → {s['last'][:10]} UTC" if s["first"] else "no records"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>guard audit: {esc(period)}</title><style>{STYLE}</style></head><body>",
        f'<h1>guard audit</h1><div class="muted" id="period">{esc(period)}</div>',
        _totals(s, data["retries"]),
        _per_day(data, details),
        _ranked("Refused most, by rule", "rules", data["top"]["rule"], details["commands"].get("rule", {})),
        _never_fired(data["never_fired"]),
        _ranked(
            "Refused most, by category",
            "categories",
            data["top"]["category"],
            details["commands"].get("category", {}),
            column="category",
        ),
        _ranked(
            "Refused most, by normalised command",
            "commands",
            data["top"]["command"],
            details["commands"].get("command", {}),
            code=True,
            column="normalised command",
        ),
        _retries(data["retries"], details["commands"].get("thread", {}), top_n),
        _ranked("Annotations, by rule", "annotations", details["annotations"], {}),
        _trial(data.get("trial") or []),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _totals(s: dict[str, Any], r: dict[str, Any]) -> str:
    cells = [
        ("records", s["records"]),
        ("refusals", s["refusals"]),
        ("annotations", s["annotations"]),
        ("agents", s["agents"]),
        ("threads", s["threads"]),
        ("wasted steps", r["wasted"]),
        ("sources", s["sources"]),
        ("duplicate copies merged", s["duplicates"]),
        ("malformed lines skipped", s["malformed"]),
    ]
    inner = "".join(f"<div><b>{int(v):,}</b>{esc(k)}</div>" for k, v in cells)
    return f'<div class="totals" id="totals">{inner}</div>'


def _colours(details: dict[str, Any]) -> dict[str, str]:
    totals: dict[str, int] = {}
    for row in details["per_day_category"]:
        totals[row["category"]] = totals.get(row["category"], 0) + row["count"]
    order = sorted(totals, key=lambda c: (-totals[c], c))
    return {c: PALETTE[i] if i < len(PALETTE) else OTHER for i, c in enumerate(order)}


def _per_day(data: dict[str, Any], details: dict[str, Any]) -> str:
    days = [d["day"] for d in data["per_day"]]
    head = "<h2>Refusals per day (UTC), by category</h2>"
    if not days:
        return head + '<p class="muted">(none)</p>'
    colours = _colours(details)
    stacks: dict[str, list[tuple[str, int]]] = {d: [] for d in days}
    for row in details["per_day_category"]:
        if row["day"] in stacks:
            stacks[row["day"]].append((row["category"], row["count"]))
    peak = max((sum(n for _, n in v) for v in stacks.values()), default=0) or 1
    left, bottom = 40, 24
    plot_h = CHART_H - bottom - 8
    step = (CHART_W - left) / len(days)
    width = max(1.0, step * 0.8)
    out = [
        f'<svg id="per-day" role="img" aria-label="refusals per day" width="{CHART_W}" height="{CHART_H}"'
        f' viewBox="0 0 {CHART_W} {CHART_H}" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{left}" y1="{8 + plot_h}" x2="{CHART_W}" y2="{8 + plot_h}" stroke="#999"/>',
        f'<text x="{left - 4}" y="14" font-size="11" text-anchor="end">{peak:,}</text>',
        f'<text x="{left - 4}" y="{8 + plot_h}" font-size="11" text-anchor="end">0</text>',
    ]
    label_every = max(1, len(days) // 12)
    for i, day in enumerate(days):
        x = left + i * step + (step - width) / 2
        y = 8 + plot_h
        for category, n in sorted(stacks[day], key=lambda cn: (-cn[1], cn[0])):
            h = n * plot_h / peak
            y -= h
            out.append(
                f'<rect class="seg" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}"'
                f' fill="{colours.get(category, OTHER)}"><title>{esc(day)} {esc(category, 60)}: {n:,}</title></rect>'
            )
        if i % label_every == 0:
            out.append(
                f'<text x="{x + width / 2:.1f}" y="{CHART_H - 6}" font-size="10" text-anchor="middle">{esc(day[5:])}</text>'
            )
    out.append("</svg>")
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{esc(category, 40)}</span>'
        for category, colour in colours.items()
    )
    return head + "".join(out) + f'<div class="legend">{legend}</div>'


def _commands(samples: list[list[Any]]) -> str:
    if not samples:
        return ""
    items = "".join(
        f'<li><code>{esc(c, 400)}</code> <span class="muted">×{int(n):,}</span></li>' for c, n in samples
    )
    return f"<details><summary>commands</summary><ul>{items}</ul></details>"


def _ranked(
    title: str,
    ident: str,
    rows: list[dict[str, Any]],
    commands: dict[str, list[list[Any]]],
    code: bool = False,
    column: str = "rule",
) -> str:
    head = f"<h2>{esc(title)}</h2>"
    if not rows:
        return head + f'<p class="muted" id="{ident}">(none)</p>'
    peak = max(r["count"] for r in rows) or 1
    body = []
    for r in rows:
        key = f"<code>{esc(r['key'], 200)}</code>" if code else esc(r["key"], 120)
        bar = f'<span class="bar" style="width:{max(1, round(160 * r["count"] / peak))}px"></span>'
        body.append(
            f'<tr><td class="n">{r["count"]:,}</td><td class="b">{bar}</td><td>{key}{_commands(commands.get(r["key"], []))}</td></tr>'
        )
    return head + f'<table id="{ident}"><tr><th>count</th><th></th><th>{esc(column)}</th></tr>{"".join(body)}</table>'


def _never_fired(nf: dict[str, Any]) -> str:
    head = "<h2>Rules that never fired</h2>"
    if not nf["known"]:
        return head + '<p class="muted" id="never-fired">unknown (pass --rules-list FILE)</p>'
    if not nf["rules"]:
        return head + '<p id="never-fired">every known rule fired over the period</p>'
    items = "".join(f"<li><code>{esc(r, 80)}</code></li>" for r in nf["rules"])
    return head + f'<p>{len(nf["rules"])} over the period</p><ul class="ids" id="never-fired">{items}</ul>'


def _retries(r: dict[str, Any], runs: dict[str, list[list[Any]]], top_n: int) -> str:
    head = (
        "<h2>Retries after a refusal</h2>"
        f'<p class="muted">A run: refusals in one thread, each within {r["window_minutes"]:g} min of the last; '
        "every refusal after a run's first is a wasted step. "
        f"{r['runs']:,} runs, {r['runs_with_retries']:,} with retries, {r['wasted']:,} wasted steps.</p>"
    )
    retried = [t for t in r["threads"] if t["wasted"]][:top_n]
    if not retried:
        return head + '<p id="retries">no thread retried after a refusal</p>'
    rows = []
    for t in retried:
        run = runs.get(f"{t['agent']}\0{t['thread']}", [])
        steps = "".join(
            f'<li><span class="muted">{esc(when)}</span> <code>{esc(c, 400)}</code></li>' for when, c in run
        )
        longest = f"<details><summary>longest run</summary><ol>{steps}</ol></details>" if steps else ""
        rows.append(
            f"<tr><td>{esc(t['agent'], 40)}</td><td>{esc(t['thread'], 40)}</td>"
            f'<td class="n">{t["refusals"]:,}</td><td class="n">{t["runs"]:,}</td><td class="n">{t["wasted"]:,}</td>'
            f'<td class="n">{t["longest"]:,}</td><td>{esc(t["top_category"], 30)}{longest}</td></tr>'
        )
    return (
        head
        + '<table id="retries"><tr><th>agent</th><th>thread</th><th>refused</th><th>runs</th><th>wasted</th>'
        f"<th>longest</th><th>mostly</th></tr>{''.join(rows)}</table>"
    )


def _trial(rows: list[dict[str, Any]]) -> str:
    """Rules on trial (warn, observe): what they would have refused. Absent when none matched."""
    if not rows:
        return ""
    head = (
        "<h2>Rules on trial (warn, observe)</h2>"
        '<p class="muted">What they would have refused. A repeat: the same thread met the same rule '
        "again within the retry window.</p>"
    )
    body = []
    for r in rows:
        samples = [[c["key"], c["count"]] for c in r["commands"]]
        body.append(
            f"<tr><td><code>{esc(r['rule'], 120)}</code>{_commands(samples)}</td><td>{esc(r['category'], 30)}</td>"
            f'<td class="n">{r["matches"]:,}</td><td class="n">{r["warned"]:,}</td><td class="n">{r["observed"]:,}</td>'
            f'<td class="n">{r["repeats"]:,}</td><td class="n">{r["agents"]:,}</td><td class="n">{r["threads"]:,}</td></tr>'
        )
    return (
        head
        + '<table id="trial"><tr><th>rule</th><th>category</th><th>matches</th><th>warned</th><th>observed</th>'
        f"<th>repeats</th><th>agents</th><th>threads</th></tr>{''.join(body)}</table>"
    )
