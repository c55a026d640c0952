//! The questions `quarry demo` asks of its generated corpus: one per kind of question quarry
//! answers (group by with exact percentiles, sorts and limits, exists, seq, the scope form, time
//! buckets, token usage). The command line runs them; the tests check each parses and answers.

/// The showcase, in the order it is shown.
pub const QUERIES: &[&str] = &[
    "messages | group by role | agg count, avg:word_count, p50:word_count, p90:word_count, p99:word_count",
    "actions | group by tool | agg count, avg:is_error, p90:duration_ms | sort by count desc | limit 5",
    "sessions where exists action(is_error:true) | group by repo | count",
    "sessions where seq(tool:Edit -> tool:Bash) | count",
    "sessions where repo:quarry | actions where is_error:true | group by tool | count",
    "usage | group by model | agg count, sum:output_tokens, p90:output_tokens",
    "messages where role:user | group by time:week | count | limit 4",
];
