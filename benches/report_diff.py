"""The daily cost report of quarry (`report daily --by model --format json`) against ccusage's
(`daily --json --offline --breakdown`), per day and model: tokens must agree exactly; costs are
compared to the cent and every difference is listed, since the two price with different tables
(quarry: the dated table of data/prices.toml; ccusage: the LiteLLM snapshot of its release,
today's price for every day). docs/cost.md explains the differences.

Standard library only.
"""

from __future__ import annotations

import re

KINDS = ["input", "output", "cache_read", "cache_write"]


def ccusage_rows(report: dict):
    """(day, model, input, output, cache read, cache write, cost) rows from `daily --json
    --breakdown`."""
    rows = []
    for day in report.get("daily", []):
        breakdowns = day.get("modelBreakdowns")
        if breakdowns is None:
            breakdowns = [b for a in day.get("agents", []) for b in a.get("modelBreakdowns", [])]
        for b in breakdowns:
            rows.append(
                [
                    day.get("period") or day.get("date"),
                    # ccusage labels some agents' models (`[pi] claude-opus-4-5`).
                    re.sub(r"^\[[^\]]+\] ", "", b["modelName"]),
                    int(b.get("inputTokens") or 0),
                    int(b.get("outputTokens") or 0),
                    int(b.get("cacheReadTokens") or 0),
                    int(b.get("cacheCreationTokens") or 0),
                    float(b.get("cost") or 0.0),
                ]
            )
    return rows


def quarry_rows(report: dict):
    """(day, model, input, output, cache read, cache write, cost or None) from quarry's report."""
    return [
        [
            r["period"],
            r["model"],
            r["input_tokens"],
            r["output_tokens"],
            r["cache_read_tokens"],
            r["cache_write_tokens"],
            r["cost_usd"],
        ]
        for r in report["rows"]
    ]


def diff(quarry: list, ccusage: list) -> list[str]:
    """Sentences on every (day, model) where the two reports differ, then a summary line. Only
    the models ccusage reports are compared (it is given the Claude Code transcripts)."""
    ours = {(r[0], r[1]): r for r in quarry}
    theirs = {(r[0], r[1]): r for r in ccusage}
    models = {k[1] for k in theirs}
    keys = sorted(k for k in set(ours) | set(theirs) if k[1] in models)
    lines, token_rows, cost_rows = [], 0, 0
    total_ours = total_theirs = 0.0
    for key in keys:
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None:
            lines.append(f"{key[0]} {key[1]}: only in {'ccusage' if a is None else 'quarry'}")
            continue
        tokens = [
            f"{kind} {x:,} vs {y:,}" for kind, x, y in zip(KINDS, a[2:6], b[2:6]) if x != y
        ]
        if tokens:
            token_rows += 1
            lines.append(f"{key[0]} {key[1]}: tokens differ: " + ", ".join(tokens))
        ca, cb = a[6], b[6]
        total_ours += ca or 0.0
        total_theirs += cb or 0.0
        if ca is None or round(ca, 2) != round(cb or 0.0, 2):
            cost_rows += 1
            shown = "NULL" if ca is None else f"${ca:,.2f}"
            lines.append(f"{key[0]} {key[1]}: cost quarry {shown} vs ccusage ${cb or 0:,.2f}")
    lines.append(
        f"{len(keys)} day-model rows compared: tokens differ on {token_rows}, cost (to the cent) on "
        f"{cost_rows}; totals quarry ${total_ours:,.2f}, ccusage ${total_theirs:,.2f}"
    )
    return lines
