#!/usr/bin/env python3
"""Check data/prices.toml against the litellm price JSON it was built from.

Usage:
    python3 data/check_prices.py WHEEL [WHEEL ...] [--corpus DIR]

WHEEL is a litellm wheel (e.g. litellm-1.110.2-cp310-abi3-manylinux_2_28_x86_64.whl,
fetched with `pip download --no-deps litellm==1.110.2`). Pass one wheel for every
[[litellm]] version listed in prices.toml. Standard library only.

Checks:
  * every wheel's sha256 equals the one recorded in prices.toml;
  * every price number equals litellm's USD-per-token value x 1e6, exactly (Decimal),
    and no standard-tier field litellm has for that entry is missing or extra;
  * long-context tiers (fields *_above_<N>k_tokens) match, threshold = N * 1000;
  * multipliers equal litellm's provider_specific_entry;
  * every alias is a litellm key of the same provider with identical imported prices;
  * date periods are well formed (from < until, no overlap, sources present);
  * every model id found in the corpus transcripts is an id/alias or an [[unpriced]] id.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import tomllib
import zipfile
from decimal import Decimal

PRICE_FILE = "litellm/model_prices_and_context_window_backup.json"
MILLION = Decimal(1000000)
# our name -> litellm field (standard tier, no batch/flex/priority suffix)
BASE = {
    "input": "input_cost_per_token",
    "output": "output_cost_per_token",
    "cache_read": "cache_read_input_token_cost",
    "cache_write": "cache_creation_input_token_cost",
    "cache_write_1h": "cache_creation_input_token_cost_above_1hr",
    "cache_write_12h": "cache_creation_input_token_cost_above_12hr",
}
LITELLM_TO_NAME = {v: k for k, v in BASE.items()}
TIER_RE = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost"
    r"|cache_creation_input_token_cost(?:_above_1hr|_above_12hr)?)_above_(\d+)k_tokens$"
)
# corpus keys whose string values are model ids
MODEL_KEYS = {"model", "model_name", "model_slug", "default_model_slug", "fallbackModel", "originalModel"}
BASES = {"release", "read", "secondary"}

errors = []


def err(msg):
    errors.append(msg)


def load_wheel(path):
    with zipfile.ZipFile(path) as z:
        raw = z.read(PRICE_FILE)
    data = json.loads(raw, parse_float=Decimal, parse_int=Decimal)
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    version = os.path.basename(path).split("-")[1]
    return version, sha, data


def expected(entry):
    """Standard-tier prices (per million) and tiers for one litellm entry."""
    base = {n: entry[f] * MILLION for n, f in BASE.items() if f in entry}
    tiers = {}
    for f, v in entry.items():
        m = TIER_RE.match(f)
        if m:
            tiers.setdefault(int(m.group(2)) * 1000, {})[LITELLM_TO_NAME[m.group(1)]] = v * MILLION
    mult = entry.get("provider_specific_entry") or {}
    return base, tiers, {k: Decimal(str(v)) for k, v in mult.items()}


def ours(table):
    """Our prices of a period or tier, without those marked `derived` (a provider rule applied
    where litellm has no field, with its source): the checker compares only what litellm has."""
    derived = table.get("derived", {})
    return {n: table[n] for n in BASE if n in table and n not in derived}


def walk(obj, found, fname):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in MODEL_KEYS and isinstance(v, str):
                found.setdefault(v, set()).add(fname)
            walk(v, found, fname)
    elif isinstance(obj, list):
        for x in obj:
            walk(x, found, fname)


def corpus_models(root):
    found = {}
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith((".json", ".jsonl", ".ndjson")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            text = open(path, encoding="utf-8", errors="replace").read()
            try:
                walk(json.loads(text), found, rel)
            except json.JSONDecodeError:
                for line in text.splitlines():
                    if line.strip():
                        try:
                            walk(json.loads(line), found, rel)
                        except json.JSONDecodeError:
                            err(f"corpus: unparsable line in {rel}")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wheels", nargs="+")
    ap.add_argument("--prices", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "prices.toml"))
    ap.add_argument("--corpus", default="/work/shared/corpus")
    a = ap.parse_args()

    with open(a.prices, "rb") as f:
        toml = tomllib.load(f, parse_float=Decimal)
    if toml.get("schema") != 1:
        err("schema != 1")

    wheels = {}
    for w in a.wheels:
        v, sha, data = load_wheel(w)
        wheels[v] = (sha, data)
    for lit in toml.get("litellm", []):
        v = lit["version"]
        if v not in wheels:
            err(f"no wheel given for litellm {v}")
        elif wheels[v][0] != lit["sha256"]:
            err(f"sha256 mismatch for litellm {v}")

    numbers = 0
    names = {}
    for m in toml["model"]:
        mid = m["id"]
        for n in [mid] + m.get("aliases", []):
            if n in names:
                err(f"{n}: listed by both {names[n]} and {mid}")
            names[n] = mid
        prev_until = None
        for i, p in enumerate(m["price"]):
            where = f"{mid} price[{i}]"
            ver, key = p["litellm_version"], p["litellm_key"]
            if ver not in wheels:
                err(f"{where}: wheel {ver} not given")
                continue
            data = wheels[ver][1]
            if key not in data:
                err(f"{where}: {key} not in litellm {ver}")
                continue
            entry = data[key]
            if entry.get("litellm_provider") != m["provider"]:
                err(f"{where}: provider {entry.get('litellm_provider')} != {m['provider']}")
            if ver not in p["source"] or key not in p["source"]:
                err(f"{where}: source string does not name version/key")
            base, tiers, mult = expected(entry)
            if ours(p) != base:
                err(f"{where}: base prices {ours(p)} != litellm {base}")
            numbers += len(base)
            if p.get("multipliers", {}) != mult:
                err(f"{where}: multipliers {p.get('multipliers')} != {mult}")
            numbers += len(mult)
            if "output_cost_per_reasoning_token" in entry and entry["output_cost_per_reasoning_token"] != entry["output_cost_per_token"]:
                err(f"{where}: litellm reasoning-token price differs from output price but is not imported")
            # tiers: those without litellm_version come from `ver`, others from their own version
            got_tiers = {}
            for t in p.get("tier", []):
                tv = t.get("litellm_version", ver)
                if tv != ver:
                    if tiers:
                        err(f"{where}: tier taken from {tv} although {ver} has its own tiers")
                    other = wheels.get(tv, (None, {}))[1].get(key)
                    if other is None:
                        err(f"{where}: tier source {tv}/{key} missing")
                        continue
                    obase, otiers, _ = expected(other)
                    if obase != base:
                        err(f"{where}: tier source {tv} has different base prices")
                    exp_t = otiers.get(t["above_prompt_tokens"])
                else:
                    exp_t = tiers.get(t["above_prompt_tokens"])
                if exp_t != ours(t):
                    err(f"{where}: tier {t['above_prompt_tokens']} {ours(t)} != litellm {exp_t}")
                numbers += len(ours(t))
                got_tiers[t["above_prompt_tokens"]] = tv
            for th in tiers:
                if th not in got_tiers:
                    err(f"{where}: litellm tier above {th} missing")
            # aliases: same provider, identical imported prices in this version
            for al in m.get("aliases", []):
                ae = data.get(al)
                if ae is None:
                    err(f"{where}: alias {al} not in litellm {ver}")
                    continue
                if ae.get("litellm_provider") != m["provider"]:
                    err(f"{where}: alias {al} has provider {ae.get('litellm_provider')}")
                if expected(ae) != (base, tiers, mult):
                    err(f"{where}: alias {al} prices differ from {key}")
            # dates
            if p["from_basis"] not in BASES:
                err(f"{where}: bad from_basis")
            if p["from_basis"] != "read" and not p.get("from_source"):
                err(f"{where}: from_source missing")
            if "until" in p:
                if not p["until"] > p["from"]:
                    err(f"{where}: until <= from")
                if not p.get("until_source"):
                    err(f"{where}: until_source missing")
            if prev_until is not None and p["from"] < prev_until:
                err(f"{where}: overlaps previous period")
            if i < len(m["price"]) - 1 and "until" not in p:
                err(f"{where}: open-ended period followed by another")
            prev_until = p.get("until")

    unpriced = {u["id"]: u["reason"] for u in toml.get("unpriced", [])}
    found = corpus_models(a.corpus)
    print(f"corpus model ids ({len(found)}) -> match:")
    for mid in sorted(found):
        files = sorted(found[mid])
        if mid in names:
            what = f"priced as {names[mid]}" + ("" if names[mid] == mid else " (alias)")
        elif mid in unpriced:
            what = "UNPRICED (listed in [[unpriced]])"
        else:
            what = "NOT COVERED"
            err(f"corpus id {mid!r} not covered")
        print(f"  {mid!r:34} {what:44} {len(files)} file(s), e.g. {files[0]}")

    print(f"models: {len(toml['model'])}, ids+aliases: {len(names)}, price periods: "
          f"{sum(len(m['price']) for m in toml['model'])}, numbers checked: {numbers}, "
          f"wheels: {', '.join(sorted(wheels, key=lambda s: tuple(map(int, s.split('.')))))}")
    if errors:
        print(f"FAIL: {len(errors)} problem(s)")
        for e in errors:
            print("  -", e)
        return 1
    print("OK: every number equals litellm x 1e6 exactly; every corpus model id is covered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
