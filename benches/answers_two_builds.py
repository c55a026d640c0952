#!/usr/bin/env python3
"""Do two quarry builds answer the same? Every question of tests/queries/ (its language form and
its SQL form, on the SQLite source) asked of OLD on OLD_ARCHIVE and of NEW on NEW_ARCHIVE, the
answers compared as benches/compare compares engines (benches/answers.py: the columns and order
its `[bench]` table names). For a change of the
archive's layout: each build ingests the same corpus into an archive of its own.

    benches/answers_two_builds.py OLD_BIN OLD_ARCHIVE NEW_BIN NEW_ARCHIVE

Prints one line per question that differs and a count; exits 1 when any differs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import answers  # noqa: E402


def rows(binary: str, archive: str, argv: list[str]):
    """The rows one build answers and its column names, or the error it printed."""
    out = subprocess.run(
        [binary, "--archive", archive, "--source", "sqlite", "--tz", "UTC", "--format", "json", *argv],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return f"exit {out.returncode}: {out.stderr.strip()[-300:]}"
    envelope = json.loads(out.stdout)
    return envelope["rows"], [c["name"] for c in envelope["columns"]]


def main() -> int:
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    old_bin, old_archive, new_bin, new_archive = sys.argv[1:]
    asked = differ = 0
    for path in sorted((HERE.parent / "tests" / "queries").glob("*.toml")):
        question = tomllib.loads(path.read_text())
        for form, argv in (("language", [question.get("quarry")]), ("sql", ["sql", question.get("sql")])):
            if argv[-1] is None:
                continue
            asked += 1
            old, new = rows(old_bin, old_archive, argv), rows(new_bin, new_archive, argv)
            if isinstance(old, str) or isinstance(new, str):
                found = [] if old == new else [f"old: {old}", f"new: {new}"]
            else:
                # The columns and order the question says its answers agree on (a top-k with
                # ties may list any of the tied rows).
                bench = question.get("bench", {})
                (old, names), (new, _) = old, new
                columns = [names.index(c) for c in bench["compare"]] if "compare" in bench else None
                found = answers.differences(old, new, columns, bench.get("ordered", False))
            if found:
                differ += 1
                print(f"{path.stem} ({form}): " + "; ".join(found))
    print(f"{asked} questions asked of both builds, {differ} answered differently")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
