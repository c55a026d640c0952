"""Tests of the answer check (benches/answers.py): it passes equal answers printed in each
engine's own way and fails on a deliberate mismatch. Run by .ci/run:

    python3 -m unittest discover -s benches -p 'test_*.py'
"""

import unittest

import answers

QUARRY = [
    ["assistant", 500, 42.25, 30, 120, 149],
    ["user", 500, 11.0, 10, 19, 20],
    [None, 3, None, None, None, None],
]
# The same answer as sqlite3 -json prints it: other row order, floats where quarry had integers.
SQLITE = [
    ["user", 500, 11.0, 10.0, 19, 20],
    [None, 3, None, None, None, None],
    ["assistant", 500, 42.250000000000004, 30, 120, 149],
]


class AnswerCheck(unittest.TestCase):
    def test_equal_answers_agree_whatever_the_row_order_and_number_type(self):
        self.assertEqual(answers.check({"quarry": QUARRY, "sqlite3": SQLITE}), {})

    def test_a_percentile_one_value_off_fails(self):
        wrong = [row[:] for row in SQLITE]
        wrong[2][4] = 121  # p90 of assistant: 121 where the nearest rank is 120
        found = answers.check({"quarry": QUARRY, "sqlite3": wrong})
        self.assertIn("sqlite3", found)
        self.assertIn("120", found["sqlite3"][0])

    def test_a_float_beyond_the_tolerance_fails(self):
        wrong = [row[:] for row in SQLITE]
        wrong[2][2] = 42.25 * (1 + 1e-7)
        self.assertIn("duckdb", answers.check({"quarry": QUARRY, "duckdb": wrong}))

    def test_a_missing_or_extra_row_fails(self):
        self.assertIn("duckdb", answers.check({"quarry": QUARRY, "duckdb": SQLITE[:2]}))
        self.assertIn("duckdb", answers.check({"quarry": QUARRY, "duckdb": SQLITE + [SQLITE[0]]}))

    def test_null_agrees_only_with_null(self):
        wrong = [row[:] for row in SQLITE]
        wrong[1][2] = 0
        self.assertIn("sqlite3", answers.check({"quarry": QUARRY, "sqlite3": wrong}))

    def test_integers_compare_exactly(self):
        big = 2**53 + 1
        self.assertIn("x", answers.check({"quarry": [[big]], "x": [[big - 1]]}))

    def test_days_and_timestamps_agree_across_spellings(self):
        q = [["2026-01-05T00:00:00Z", 3], ["2026-01-06T10:30:00.250Z", 1]]
        d = [["2026-01-05 00:00:00+00", 3], ["2026-01-06 10:30:00.25+00", 1]]
        s = [["2026-01-05", 3], ["2026-01-06T10:30:00.250", 1]]
        self.assertEqual(answers.check({"quarry": q, "duckdb": d, "sqlite3": s}), {})
        self.assertIn("sqlite3", answers.check({"quarry": q, "sqlite3": [["2026-01-04", 3], s[1]]}))

    def test_an_ordered_answer_fails_on_another_order(self):
        q = [[9, "a"], [7, "b"]]
        self.assertEqual(answers.check({"quarry": q, "x": q[::-1]}), {})
        self.assertIn("x", answers.check({"quarry": q, "x": q[::-1]}, ordered=True))

    def test_only_the_named_columns_are_compared(self):
        q = [[9, "a"], [9, "b"]]
        tie = [[9, "c"], [9, "d"]]
        self.assertEqual(answers.check({"quarry": q, "x": tie}, columns=[0], ordered=True), {})
        self.assertIn("x", answers.check({"quarry": q, "x": tie}, ordered=True))


if __name__ == "__main__":
    unittest.main()
