"""The answer check of benches/compare: do two engines' answers to one question agree?

Answers are lists of rows (lists of values) as each engine printed them in JSON. Before they are
compared, values are put in one canonical form:

- numbers: integers and floats alike; two numbers agree when they are within 1e-9 of each other
  relative to the larger (so an AVG that SQLite and DataFusion sum in different orders agrees,
  and an exact percentile that is off by one value does not);
- booleans: 0 and 1;
- day-like text (`2026-01-05`, `2026-01-05T00:00:00Z`, `2026-01-05 00:00:00+00`): the date;
  other timestamps: `YYYY-MM-DDTHH:MM:SS[.fff]` in UTC;
- NULL stays NULL and agrees only with NULL.

Rows are compared as a multiset unless the question says its order matters (`ordered`). The
columns compared are every column, or those named in the question's `compare` list (by position
in the first engine's answer, which every engine prints in the same order).

Standard library only, so the harness needs nothing but Python 3.11.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

RELATIVE = 1e-9

_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ]00:00:00(?:\.0+)?(?:Z|[+-]00(?::?00)?)?)?$")
_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$"
)


def canonical(value):
    """One value in the form answers are compared in (see the module docs)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        day = _DAY.match(value)
        if day:
            return day.group(1)
        if _TIMESTAMP.match(value):
            text = value.replace(" ", "T")
            if text.endswith("Z"):
                text = text[:-1] + "+00:00"
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is not None:
                moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
            return moment.isoformat(timespec="milliseconds")
        return value
    return repr(value)


def same(a, b) -> bool:
    """Whether two canonical values agree."""
    if a is None or b is None:
        return a is None and b is None
    number = (int, float)
    if isinstance(a, number) and isinstance(b, number):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= RELATIVE * max(abs(a), abs(b))
    return type(a) is type(b) and a == b


def _sort_key(row):
    # NULLs first, then numbers, then text: any total order works, the same for every engine.
    return [(0, 0) if v is None else (1, v) if isinstance(v, (int, float)) else (2, str(v)) for v in row]


def prepare(rows, columns=None, ordered=False):
    """Canonical rows, keeping `columns` (positions) only, sorted unless `ordered`."""
    out = []
    for row in rows:
        values = [canonical(v) for v in row]
        if columns is not None:
            values = [values[i] for i in columns]
        out.append(values)
    if not ordered:
        out.sort(key=_sort_key)
    return out


def differences(expected, actual, columns=None, ordered=False, limit=5):
    """What differs between two answers, as sentences (empty when they agree)."""
    a = prepare(expected, columns, ordered)
    b = prepare(actual, columns, ordered)
    found = []
    if len(a) != len(b):
        found.append(f"{len(a)} rows against {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        if len(x) != len(y):
            found.append(f"row {i}: {len(x)} columns against {len(y)}")
        elif not all(same(p, q) for p, q in zip(x, y)):
            found.append(f"row {i}: {x} against {y}")
        if len(found) >= limit:
            break
    if len(a) != len(b) and len(found) < limit:
        extra = a[len(b):] if len(a) > len(b) else b[len(a):]
        found.append(f"first unmatched row: {extra[0]}")
    return found


def check(answers: dict, columns=None, ordered=False):
    """Compares every engine's answer with the first one's: {engine: [sentences]} for those
    that differ (empty when all agree)."""
    engines = list(answers)
    if not engines:
        return {}
    reference = answers[engines[0]]
    out = {}
    for engine in engines[1:]:
        found = differences(reference, answers[engine], columns, ordered)
        if found:
            out[engine] = [f"{engine} against {engines[0]}: {s}" for s in found]
    return out
