#!/usr/bin/env python3
"""Helper of benches/editor_agents.sh: lays the editor agents' fixtures out where the agents
keep them, and prints quarry's reading of them beside agentsview's, codeburn's and tokscale's.

  editor_agents_compare.py layout NAME FIXTURES HOME
                              copy the fixtures of the home NAME (see LAYOUTS: `editors`,
                              tests/fixtures/agents/{cline,roo,cursor,aider,crush}, and
                              `cline-sdk`, the Cline SDK sessions) into HOME as the agents keep
                              them, and for `editors` write Crush's projects.json
  editor_agents_compare.py compare TMP
                              print one table per agent from the outputs the bench left in
                              TMP/<home> (names in OUTPUTS)

Standard library only. docs/benchmarks.md ("Editor agents beside agentsview, codeburn and
tokscale") explains every difference the tables show.
"""

import json
import shutil
import sqlite3
import sys
from pathlib import Path

# Per home: fixture folder -> where under HOME the agent keeps it. The peers file Cline's
# classic task folders and its SDK sessions under the same name (agentsview's and codeburn's
# `cline`, tokscale's `cline`), so the SDK sessions get a home of their own.
LAYOUTS = {"editors": [
    ("cline/saoudrizwan.claude-dev", ".config/Code/User/globalStorage/saoudrizwan.claude-dev"),
    ("roo/rooveterinaryinc.roo-cline", ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline"),
    ("cursor/User", ".config/Cursor/User"),
    # Cursor's agent transcripts (the cursor-agent CLI's and the IDE agent's).
    ("cursor/projects", ".cursor/projects"),
    # Aider writes its history in the root of the repository it runs in.
    ("aider/aider-ai", "src/aider-ai"),
    ("aider/mozgoslav", "src/mozgoslav"),
    ("aider/traps", "src/aider-traps"),
    # Crush keeps a database per project (<project>/.crush/crush.db) and lists the projects in
    # its global data folder.
    ("crush/exabgp", "src/exabgp"),
    ("crush/dbr", "src/dbr"),
], "cline-sdk": [
    # The Cline CLI's and the Cline 4 extension's sessions (~/.cline/data/sessions).
    ("cline-sdk/sessions", ".cline/data/sessions"),
]}
CRUSH_PROJECTS = ["src/exabgp", "src/dbr"]
# Files the bench writes into TMP/<home> (versions.txt and codeburn-clock.txt into TMP).
OUTPUTS = {
    "archive": "quarry.db",
    "quarry_usage": "quarry-usage.json",
    "agentsview": "home/.agentsview/sessions.db",
    "tokscale_cli": "tokscale-cli.json",
    "tokscale_cli_clients": "tokscale-cli-clients.json",
    "tokscale_sources": "tokscale-sources.json",
    "tokscale_models": "tokscale-models.json",
    "tokscale_models_rc": "tokscale-models.rc",
    "tokscale_models_err": "tokscale-models.err",
    "versions": "versions.txt",
}
# The agents: the home they are read in, title, quarry's origin, agentsview's agent names,
# codeburn's runs (file, what the column title and the short name add), tokscale's client name
# and what its `messageCount` counts there.
AGENTS = [
    {
        "home": "editors",
        "title": "Cline (saoudrizwan.claude-dev, hand-made task of tests/fixtures/agents/cline)",
        "origin": "cline-task",
        "agentsview": ["cline"],
        "codeburn": [("codeburn-cline.json", "", "")],
        "tokscale": "cline",
        "tokscale_counts": "requests",
    },
    {
        "home": "cline-sdk",
        "title": "Cline SDK sessions (~/.cline/data/sessions of tests/fixtures/agents/cline-sdk, a home of their own)",
        "origin": "cline-session",
        "agentsview": ["cline"],
        "codeburn": [("codeburn-cline.json", "", "")],
        "tokscale": "cline",
        "tokscale_counts": "requests",
    },
    {
        "home": "editors",
        "title": "Roo Code (rooveterinaryinc.roo-cline, three real tasks)",
        "origin": "roo-code-task",
        "agentsview": ["roocode"],
        "codeburn": [("codeburn-roo-code.json", "", "")],
        "tokscale": "roocode",
        "tokscale_counts": "requests",
    },
    {
        "home": "editors",
        "title": "Cursor's stores (state.vscdb: a hand-made global store, a real 2024 workspace "
                 "store)",
        "origin": "cursor-chat",
        "agentsview": ["cursor-ide"],
        "codeburn": [
            ("codeburn-cursor.json", "", ""),
            ("codeburn-cursor-clock.json", ", clock at CLOCK", " (clock)"),
        ],
        "tokscale": "cursor",
        "tokscale_counts": "requests",
    },
    {
        "home": "editors",
        "title": "Cursor's agent transcripts (~/.cursor/projects/*/agent-transcripts, hand-made; "
                 "quarry's origin cursor-chat too)",
        "origin": "cursor-chat/transcripts",
        "agentsview": ["cursor"],
        "codeburn": [("codeburn-cursor-agent.json", ", provider cursor-agent", "")],
        # tokscale has no reader of these.
        "tokscale": None,
        "tokscale_counts": "requests",
    },
    {
        "home": "editors",
        "title": "Aider (.aider.chat.history.md: two real histories, one hand-made)",
        "origin": "aider-chat",
        "agentsview": ["aider"],
        "codeburn": [],
        "tokscale": "aider",
        "tokscale_counts": "requests",
    },
    {
        "home": "editors",
        "title": "Crush (.crush/crush.db: two real stores)",
        "origin": "crush-session",
        "agentsview": ["crush"],
        "codeburn": [
            ("codeburn-crush.json", "", ""),
            ("codeburn-crush-array.json", ", list as an array", " (array)"),
        ],
        "tokscale": "crush",
        # tokscale reads a Crush session's total: its count is of assistant messages.
        "tokscale_counts": "assistant",
    },
]
ROWS = [
    ("sessions", "sessions"),
    ("user", "user messages"),
    ("assistant", "assistant messages"),
    ("requests", "usage records (requests)"),
    ("input", "input tokens"),
    ("output", "output tokens"),
    ("cache_read", "cache read tokens"),
    ("cache_write", "cache write tokens"),
    ("cost_recorded", "cost the agent recorded ($)"),
    ("cost_priced", "cost the tool priced ($)"),
]
NOT_READ = "nothing read"


def layout(name: str, fixtures: Path, home: Path) -> None:
    for source, target in LAYOUTS[name]:
        shutil.copytree(fixtures / source, home / target, dirs_exist_ok=True)
    if name != "editors":
        return
    # As Crush (internal/projects) writes it: {"projects": [{path, data_dir, last_accessed}]},
    # data_dir absolute.
    crush = home / ".local/share/crush"
    crush.mkdir(parents=True, exist_ok=True)
    projects = [
        {
            "path": str(home / p),
            "data_dir": str(home / p / ".crush"),
            "last_accessed": "2026-04-01T12:00:00Z",
        }
        for p in CRUSH_PROJECTS
    ]
    (crush / "projects.json").write_text(json.dumps({"projects": projects}, indent=2))


def fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:,.4f}"
    return f"{value:,}"


# quarry's origins that the tables split by file: (origin, the part's name, a LIKE pattern on
# the session's source_path). A session of that origin whose file matches is counted under
# "<origin>/<part>", the others under the origin.
PARTS = [("cursor-chat", "transcripts", "%/agent-transcripts/%")]


def quarry_side(tmp: Path) -> dict:
    """quarry's figures per origin (and part, PARTS): the archive's sessions and messages, and
    the usage query's sums (every usage record, Aider's approximate ones included)."""
    db = sqlite3.connect(f"file:{tmp / OUTPUTS['archive']}?mode=ro", uri=True)
    part_of = "CASE " + " ".join(
        f"WHEN s.origin = '{origin}' AND s.source_path LIKE '{like}' THEN '{origin}/{part}'"
        for origin, part, like in PARTS
    ) + " ELSE s.origin END"
    out = {}
    for origin, n, recorded in db.execute(
        f"SELECT {part_of}, count(*), sum(s.reported_cost_usd) FROM sessions s GROUP BY 1"
    ):
        out[origin] = {"sessions": n, "cost_recorded": recorded, "user": 0, "assistant": 0}
    for origin, role, n in db.execute(
        f"SELECT {part_of}, m.role, count(*) FROM messages m JOIN sessions s USING (session_id) "
        "GROUP BY 1, 2"
    ):
        if role in ("user", "assistant"):
            out[origin][role] = n
    # The usage query groups by origin only: a part's usage records would be counted with its
    # origin's. None of them has any (Cursor's transcripts hold no counts); say so if one does.
    for origin, n in db.execute(
        f"SELECT {part_of}, count(*) FROM usage u JOIN sessions s USING (session_id) GROUP BY 1"
    ):
        if "/" in origin and n:
            print(f"note: quarry has {n} usage records in {origin}; "
                  f"the table counts them with {origin.split('/')[0]}")
    usage = json.loads((tmp / OUTPUTS["quarry_usage"]).read_text())
    names = [c["name"] for c in usage["columns"]]
    for row in usage["rows"]:
        r = dict(zip(names, row))
        q = out.setdefault(r["session_origin"], {"sessions": 0, "user": 0, "assistant": 0})
        for key, column in [
            ("requests", "count"),
            ("input", "sum_input_tokens"),
            ("output", "sum_output_tokens"),
            ("cache_read", "sum_cache_read_tokens"),
            ("cache_write", "sum_cache_write_tokens"),
        ]:
            q[key] = q.get(key, 0) + (r[column] or 0)
        if r["recorded_via"] == "approximate":
            q["approximate"] = q.get("approximate", 0) + r["count"]
        if r["sum_cost_usd"] is None:
            q["unpriced"] = q.get("unpriced", 0) + r["count"]
        else:
            q["priced"] = q.get("priced", 0.0) + r["sum_cost_usd"]
    for q in out.values():
        if q.get("requests"):
            priced = q.get("priced")
            unpriced = q.get("unpriced", 0)
            if unpriced:
                q["cost_priced"] = (
                    f"{'none' if priced is None else fmt(priced)} "
                    f"({unpriced} of {q['requests']} unpriced)"
                )
                q["cost_priced_value"] = priced or 0.0
            else:
                q["cost_priced"] = priced
    return out


def agentsview_side(tmp: Path) -> dict:
    path = tmp / OUTPUTS["agentsview"]
    if not path.exists():
        return {}
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = {}
    for agent, n in db.execute("SELECT agent, count(*) FROM sessions GROUP BY agent"):
        out[agent] = {"sessions": n, "user": 0, "assistant": 0}
    for agent, role, n in db.execute(
        "SELECT s.agent, m.role, count(*) FROM messages m JOIN sessions s ON s.id = m.session_id "
        "GROUP BY 1, 2"
    ):
        if role in ("user", "assistant"):
            out[agent][role] = n
    # Token usage, where agentsview records any for these agents.
    for agent, n, i, o, cr, cw, cost in db.execute(
        "SELECT s.agent, count(*), sum(u.input_tokens), sum(u.output_tokens), "
        "sum(u.cache_read_input_tokens), sum(u.cache_creation_input_tokens), "
        "sum(u.cost_microdollars) FROM usage_events u JOIN sessions s ON s.id = u.session_id "
        "GROUP BY 1"
    ):
        out[agent].update(
            requests=n, input=i, output=o, cache_read=cr, cache_write=cw,
            cost_recorded=None if cost is None else cost / 1e6,
        )
    # Where it has no usage events, the counts it keeps per message (`token_usage`, as the
    # agent wrote them: Cline's SDK sessions), a record per message that has them.
    for agent, n, i, o, cr, cw in db.execute(
        "SELECT s.agent, count(*), sum(json_extract(m.token_usage, '$.input_tokens')), "
        "sum(json_extract(m.token_usage, '$.output_tokens')), "
        "sum(json_extract(m.token_usage, '$.cache_read_input_tokens')), "
        "sum(json_extract(m.token_usage, '$.cache_creation_input_tokens')) "
        "FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.token_usage != '' "
        "GROUP BY 1"
    ):
        if "requests" not in out[agent]:
            out[agent].update(requests=n, input=i, output=o, cache_read=cr, cache_write=cw)
    return out


def codeburn_side(path: Path) -> dict:
    try:
        ov = json.loads(path.read_text())["overview"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not ov or (not ov["sessions"] and not ov["calls"]):
        return {}
    t = ov["tokens"]
    return {
        "sessions": ov["sessions"],
        "requests": ov["calls"],
        "input": t["input"],
        "output": t["output"],
        "cache_read": t["cacheRead"],
        "cache_write": t["cacheWrite"],
        "cost_priced": ov["cost"],
    }


def tokscale_side(path: Path) -> dict:
    """tokscale's figures per client; `_counts` is its messageCount (see AGENTS)."""
    out = {}
    try:
        entries = json.loads(path.read_text()).get("entries", [])
    except (OSError, ValueError, AttributeError):
        return out
    for e in entries:
        c = out.setdefault(e["client"], {"_sessions": set(), "input": 0, "output": 0,
                                         "cache_read": 0, "cache_write": 0,
                                         "cost_recorded": 0.0, "_count": 0})
        c["_sessions"].add(e["sessionId"])
        c["input"] += e["input"]
        c["output"] += e["output"]
        c["cache_read"] += e["cacheRead"]
        c["cache_write"] += e["cacheWrite"]
        c["cost_recorded"] += e["cost"]
        c["_count"] += e["messageCount"]
    for c in out.values():
        c["sessions"] = len(c.pop("_sessions"))
        c["_counts"] = c.pop("_count")
    return out


def table(title: str, columns: list, rows: list) -> list:
    """Markdown-style table lines: columns is a list of titles, rows a list of cell lists."""
    widths = [max(len(str(r[i])) for r in [columns] + rows) for i in range(len(columns))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    return [title, "", line(columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [
        line(r) for r in rows
    ]


def compare(tmp: Path) -> None:
    homes = sorted({agent["home"] for agent in AGENTS})
    quarry = {h: quarry_side(tmp / h) for h in homes}
    av = {h: agentsview_side(tmp / h) for h in homes}
    ts_all = {h: tokscale_side(tmp / h / OUTPUTS["tokscale_cli"]) for h in homes}
    ts = {}
    clock_file = tmp / "codeburn-clock.txt"
    clock = clock_file.read_text().strip() if clock_file.exists() else "?"
    versions = {}
    if (tmp / OUTPUTS["versions"]).exists():
        for line in (tmp / OUTPUTS["versions"]).read_text().splitlines():
            name, _, version = line.partition(" ")
            versions[name] = version
    for agent in AGENTS:
        figures = dict(ts_all[agent["home"]].get(agent["tokscale"], {})) if agent["tokscale"] else {}
        if figures:
            figures[agent["tokscale_counts"]] = figures.pop("_counts")
        ts[agent["origin"]] = figures

    print(f"quarry {versions.get('quarry', '?')}, agentsview {versions.get('agentsview', '?')}, "
          f"codeburn {versions.get('codeburn', '?')}, tokscale {versions.get('tokscale', '?')} "
          f"and {versions.get('tokscale-cli', '?')}, on tests/fixtures/agents")
    print()
    # What tokscale 1.4.3 could do offline.
    print(f"tokscale {versions.get('tokscale', '1.4.3')} (npm `tokscale`, TypeScript on Bun):")
    editors = tmp / "editors"
    sources_path = editors / OUTPUTS["tokscale_sources"]
    if sources_path.exists():
        try:
            scanned = [s["source"] for s in json.loads(sources_path.read_text())["sources"]]
            print(f"  scans {', '.join(scanned)}: none of Cline, Roo Code, Aider or Crush, and")
            print("  Cursor only as the usage export its `cursor` login fetches from cursor.com.")
        except (ValueError, KeyError):
            print("  `sources --json` gave no list.")
    def text(name):
        path = editors / OUTPUTS[name]
        return path.read_text() if path.exists() else ""

    try:
        report = json.loads(text("tokscale_models") or "null")
    except ValueError:
        report = None
    if not report:
        err = text("tokscale_models_err")
        reason = ("its report needs LiteLLM's price list from the network" if "LiteLLM" in err
                  else "see tokscale-models.err")
        print(f"  `models --json` prints no report offline (exit {text('tokscale_models_rc').strip()},"
              f" the error on stderr): {reason}.")
    print(f"The columns `tokscale` below are tokscale {versions.get('tokscale-cli', '4.17.0')}, "
          "the Rust CLI of @tokscale/cli-linux-x64-gnu.")
    clients = editors / OUTPUTS["tokscale_cli_clients"]
    if clients.exists():
        try:
            for c in json.loads(clients.read_text())["clients"]:
                if c["client"] == "cursor":
                    print(f"  It reads Cursor from ~/.config/{c['sessionsPath'].split('/.config/')[-1]} "
                          "(the usage export `tokscale cursor sync` fetches), not from state.vscdb "
                          "nor ~/.cursor/projects.")
        except (ValueError, KeyError):
            pass
    print()

    for agent in AGENTS:
        origin, home = agent["origin"], agent["home"]
        q = quarry[home].get(origin, {})
        # (column title, short name, figures or None when the peer read nothing of this agent)
        peers = []
        a = {}
        for name in agent["agentsview"]:
            for k, v in av[home].get(name, {}).items():
                a[k] = (a.get(k) or 0) + v if isinstance(v, (int, float)) else v
        peers.append((f"agentsview {versions.get('agentsview', '')}", "agentsview", a or None))
        for file, title, short in agent["codeburn"] or [("", "", "")]:
            title = title.replace("CLOCK", clock)
            figures = codeburn_side(tmp / home / file) if file else {}
            peers.append((f"codeburn {versions.get('codeburn', '')}{title}", f"codeburn{short}",
                          figures or None))
        peers.append((f"tokscale {versions.get('tokscale-cli', '')}", "tokscale",
                      ts.get(origin) or None))
        columns = ["", "quarry"] + [p[0] for p in peers] + ["differences from quarry"]
        rows = []
        for key, label in ROWS:
            qv = q.get(key)
            base = q.get(key + "_value", qv)
            cells = [label, fmt(qv)]
            diffs, alone = [], []
            for _, short, fig in peers:
                pv = None if fig is None else fig.get(key)
                cells.append(NOT_READ if fig is None else fmt(pv))
                if pv is None:
                    continue
                if base is None:
                    alone.append(f"{short} {fmt(pv)}")
                    continue
                delta = pv - base
                if isinstance(delta, float):
                    if abs(delta) >= 0.00005:
                        diffs.append(f"{short} {delta:+,.4f}")
                elif delta:
                    diffs.append(f"{short} {delta:+,}")
            if alone:
                diffs.insert(0, "quarry none: " + ", ".join(alone))
            if key == "requests" and q.get("approximate"):
                diffs.insert(0, f"quarry's {q['approximate']} are approximate (Aider's reports)")
            compared = any(fig is not None and fig.get(key) is not None for _, _, fig in peers)
            cells.append("; ".join(diffs) if diffs else ("equal" if compared else ""))
            rows.append(cells)
        for line in table(agent["title"], columns, rows):
            print(line)
        print()


def main(argv: list) -> int:
    if len(argv) == 5 and argv[1] == "layout" and argv[2] in LAYOUTS:
        layout(argv[2], Path(argv[3]), Path(argv[4]))
        return 0
    if len(argv) == 3 and argv[1] == "compare":
        compare(Path(argv[2]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
