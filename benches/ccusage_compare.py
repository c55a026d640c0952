#!/usr/bin/env python3
"""Helper of benches/ccusage.sh: lays the corpus out the way ccusage reads it, and compares
ccusage's `daily --json --by-agent` report with quarry's usage per model and day.

  ccusage_compare.py layout CORPUS HOME         copy CORPUS/claude-code and CORPUS/codex into
                                                HOME/claude/projects/... and HOME/codex/sessions/...,
                                                the pi sessions of tests/fixtures/agents/pi into
                                                HOME/.pi/agent/sessions/--fixtures--/, and the
                                                Qwen Code, Kimi CLI and Copilot CLI
                                                trees of tests/fixtures/agents/
                                                {qwen,kimi,copilot} into HOME/.qwen/,
                                                HOME/.kimi/ and HOME/.copilot/, and
                                                OpenCode's database and its older
                                                JSON files (legacy/storage) into
                                                HOME/.local/share/opencode/, Goose's
                                                database and Amp's threads likewise
  ccusage_compare.py compare CCUSAGE.json QUARRY.json [QUARRY_VIA.json]
                                                print the comparison tables

Standard library only.
"""

import json
import shutil
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

# Token kinds both sides report: (label, ccusage key, quarry column).
KINDS = [
    ("input", "inputTokens", "sum_input_tokens"),
    ("output", "outputTokens", "sum_output_tokens"),
    ("cache_read", "cacheReadTokens", "sum_cache_read_tokens"),
    ("cache_write", "cacheCreationTokens", "sum_cache_write_tokens"),
]
AGENT_OF_ORIGIN = {
    "claude-code-session": "claude",
    "codex-session": "codex",
    "pi-session": "pi",
    "qwen-code-session": "qwen",
    "kimi-cli-session": "kimi",
    "copilot-cli-session": "copilot",
    "opencode-session": "opencode",
    "kilo-session": "kilo",
    "goose-session": "goose",
    "amp-thread": "amp",
}
# The session files of other agents (tests/fixtures/agents/MANIFEST.tsv): agent folder and where
# the agent keeps its contents under HOME (subfolders kept).
AGENT_FIXTURES = [
    ("pi", Path(".pi/agent/sessions/--fixtures--")),
    ("qwen", Path(".qwen")),
    ("kimi", Path(".kimi")),
    ("copilot", Path(".copilot")),
    ("opencode", Path(".local/share/opencode")),
]
# Kilo CLI keeps OpenCode's tables under another name: the OpenCode database again, as Kilo's.
AGENT_COPIES = [(Path("opencode/opencode.db"), Path(".local/share/kilo/kilo.db"))]
# Folders copied whole where the agent keeps them: OpenCode's JSON files of releases before 1.2.
AGENT_TREES = [
    (Path("opencode/legacy/storage"), Path(".local/share/opencode/storage")),
    (Path("amp/threads"), Path(".local/share/amp/threads")),
]
# Databases kept as SQL scripts (hand-made fixtures), built where the agent keeps its database.
AGENT_SCRIPTS = [(Path("goose/sessions.sql"), Path(".local/share/goose/sessions/sessions.db"))]
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "agents"


def claude_target(rel: Path) -> Path:
    """Where a file of the Claude Code corpus goes under projects/: its source folder (and any
    folders above the session file) become one project folder; a subagent file keeps its
    `<session>/subagents/...` tail."""
    parts = rel.parts
    if "subagents" in parts:
        i = parts.index("subagents")
        project, tail = parts[: i - 1], parts[i - 1 :]
    else:
        project, tail = parts[:-1], parts[-1:]
    return Path("-".join(project)).joinpath(*tail)


def layout(corpus: Path, home: Path) -> None:
    claude = corpus / "claude-code"
    files = 0
    for src in sorted(claude.rglob("*.jsonl")):
        dest = home / "claude" / "projects" / claude_target(src.relative_to(claude))
        if dest.exists():
            sys.exit(f"layout: two corpus files map to {dest}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        files += 1
    # Codex: every `<source>/sessions/YYYY/MM/DD/rollout-*.jsonl` into one sessions tree.
    codex = corpus / "codex"
    for src in sorted(codex.glob("*/sessions/**/*.jsonl")):
        # <source>/sessions/YYYY/MM/DD/<file> -> sessions/YYYY/MM/DD/<file>
        dest = home / "codex" / "sessions" / Path(*src.relative_to(codex).parts[2:])
        if dest.exists():
            sys.exit(f"layout: two corpus files map to {dest}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        files += 1
    for agent, target in AGENT_FIXTURES:
        sources = (FIXTURES / agent).rglob("*")
        for src in sorted(s for s in sources if s.suffix in (".jsonl", ".db")):
            dest = home / target / src.relative_to(FIXTURES / agent)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            files += 1
    for src, dest in AGENT_COPIES:
        (home / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(FIXTURES / src, home / dest)
        files += 1
    for src, dest in AGENT_TREES:
        shutil.copytree(FIXTURES / src, home / dest, dirs_exist_ok=True)
        files += sum(1 for f in (home / dest).rglob("*.json"))
    for script, dest in AGENT_SCRIPTS:
        (home / dest).parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(home / dest) as db:
            db.executescript((FIXTURES / script).read_text())
        files += 1
    print(f"laid out {files} files under {home}", file=sys.stderr)


def ccusage_rows(report: dict) -> dict:
    """(agent, model, day) -> {kind: tokens} from `daily --json --by-agent`."""
    rows = defaultdict(lambda: defaultdict(int))
    for day in report.get("daily", []):
        period = day["period"]
        for agent in day.get("agents") or [{"agent": "?", **day}]:
            for b in agent.get("modelBreakdowns", []):
                # ccusage labels some agents' models (`[pi] claude-opus-4-5`).
                model = b["modelName"].removeprefix(f"[{agent['agent']}] ")
                r = rows[(agent["agent"], model, period)]
                for label, key, _ in KINDS:
                    r[label] += int(b.get(key) or 0)
    return rows


def quarry_rows(envelope: dict) -> tuple:
    """(agent, model, day) -> {kind: tokens, responses, extras} from quarry's JSON envelope."""
    names = [c["name"] for c in envelope["columns"]]
    extras = [n for n in names if n.startswith("sum_") and n not in {k[2] for k in KINDS}]
    rows = defaultdict(lambda: defaultdict(int))
    for values in envelope["rows"]:
        v = dict(zip(names, values))
        agent = AGENT_OF_ORIGIN.get(v["session_origin"], v["session_origin"])
        r = rows[(agent, v["model"], v["time_day"][:10])]
        r["responses"] += int(v["count"] or 0)
        for label, _, col in KINDS:
            r[label] += int(v[col] or 0)
        for col in extras:
            r[col[4:]] += int(v[col] or 0)
    return rows, [e[4:] for e in extras]


def fold(rows: dict, key) -> dict:
    """Sums rows under a shorter key (e.g. (agent, model) from (agent, model, day))."""
    out = defaultdict(lambda: defaultdict(int))
    for k, r in rows.items():
        for name, value in r.items():
            out[key(k)][name] += value
    return out


def progress_only(envelope: dict) -> dict:
    """(agent, model, day) -> {"progress_only": responses recorded only in progress records}."""
    names = [c["name"] for c in envelope["columns"]]
    rows = defaultdict(lambda: defaultdict(int))
    for values in envelope["rows"]:
        v = dict(zip(names, values))
        if v["recorded_via"] == "progress":
            agent = AGENT_OF_ORIGIN.get(v["session_origin"], v["session_origin"])
            rows[(agent, v["model"], v["time_day"][:10])]["progress_only"] += int(v["count"])
    return rows


def table(title: str, head: list, q: dict, c: dict, extras: list, via: dict) -> int:
    """Prints one comparison table; returns the number of figures that differ."""
    print(f"\n## {title}\n")
    kinds = [k[0] for k in KINDS]
    print(" | ".join(head + ["responses (quarry)"] + [f"{k}: quarry / ccusage / diff" for k in kinds]
                     + [f"{e} (quarry)" for e in extras]))
    differ = 0
    for key in sorted(set(q) | set(c), key=lambda k: tuple(str(x) for x in k)):
        qr, cr = q.get(key), c.get(key)
        responses = str(qr["responses"]) if qr else "-"
        if key in via:
            responses += f" ({via[key]['progress_only']} progress-only)"
        cells = list(key) + [responses]
        for k in kinds:
            if qr is None or cr is None:
                cells.append(f"{qr[k] if qr else '-'} / {cr[k] if cr else '-'} / one side only *")
                differ += 1
                continue
            d = qr[k] - cr[k]
            differ += d != 0
            cells.append(f"{qr[k]} / {cr[k]} / {d:+d}" + (" *" if d else ""))
        cells += [str(qr[e]) if qr else "-" for e in extras]
        print(" | ".join(str(x) for x in cells))
    print(f"\n{differ} figure(s) differ")
    return differ


def compare(ccusage_json: Path, quarry_json: Path, via_json: Path | None) -> None:
    c = ccusage_rows(json.loads(ccusage_json.read_text()))
    q, extras = quarry_rows(json.loads(quarry_json.read_text()))
    via = progress_only(json.loads(via_json.read_text())) if via_json else {}
    print("tokens: quarry / ccusage / quarry - ccusage (* marks a difference). Responses"
          + (", progress-only responses and cache-write tiers" if extras else "")
          + " are quarry's alone (ccusage reports none)"
          + ("" if extras else "; this quarry has no cache-write tiers"))
    views = [
        ("per agent and model", ["agent", "model"], lambda k: k[:2]),
        ("per agent, model and day (UTC)", ["agent", "model", "day"], lambda k: k),
        ("per agent", ["agent"], lambda k: k[:1]),
    ]
    differ = 0
    for title, head, key in views:
        differ += table(title, head, fold(q, key), fold(c, key), extras, fold(via, key))
    if differ:
        print("\nsome figures differ: docs/benchmarks.md (ccusage) says which side is right")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "layout":
        layout(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "compare":
        compare(Path(sys.argv[2]), Path(sys.argv[3]),
                Path(sys.argv[4]) if len(sys.argv) == 5 else None)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
