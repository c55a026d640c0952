//! The queries `quarry demo` runs on its archive: one per kind of question quarry answers
//! (group by with exact percentiles, sorts and limits, exists, seq, the scope form, time
//! buckets, token usage), each printed with its answer.

use std::path::Path;

use crate::api::{Caps, Options, Quarry, block_on};

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

/// Runs every showcase query on the archive at `path` through the library API and renders the
/// answers as tables.
pub fn run(path: &Path) -> Result<String, String> {
    let mut options = Options::new(path);
    options.tz = Some("UTC".into());
    let quarry = Quarry::open(&options).map_err(|e| e.to_string())?;
    let mut out = String::from("\nsome questions, answered exactly over every row:\n");
    for query in QUERIES {
        let answer = block_on(quarry.query_collect(query, Caps::default()))
            .and_then(|answer| answer)
            .map_err(|e| format!("{query}: {e}"))?;
        out.push_str(&format!("\n$ quarry '{query}'\n"));
        out.push_str(&crate::output::render_table(&answer).map_err(|e| e.to_string())?);
    }
    Ok(out)
}
