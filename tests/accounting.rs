//! Token accounting over the whole real Claude Code corpus: the archive's `usage` table against
//! the independent oracle (`oracle::claude_tree_usage`), model by model, and session sums against
//! usage sums (no response counted twice by summing sessions).

use std::collections::BTreeMap;

use crate::oracle::{self, ModelUsage, TreeUsage};
use crate::support::{corpus, ingest, open};

/// The token columns compared, in `ModelUsage` order after the response count.
const TOKEN_COLUMNS: [&str; 6] = [
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
];

fn model_usage(counts: [i64; 7]) -> ModelUsage {
    let [responses, input, output, read, write, w5m, w1h] = counts;
    ModelUsage {
        responses,
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
        cache_write_5m_tokens: w5m,
        cache_write_1h_tokens: w1h,
    }
}

fn print_oracle(o: &TreeUsage) {
    eprintln!(
        "oracle over {} files, {} usage records ({} assistant records without message.id, \
         {} progress records without id, {} split/total disagreements, {} ids with conflicting models)",
        o.files,
        o.usage_records,
        o.without_id,
        o.progress_without_id,
        o.split_disagrees,
        o.conflicting_models.len()
    );
    eprintln!(
        "{:<28} {:>9} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "model", "responses", "input", "output", "cache_read", "cache_wr", "wr_5m", "wr_1h"
    );
    let rows = o
        .by_model
        .iter()
        .map(|(m, u)| (m.as_deref().unwrap_or("(none)"), u.clone()))
        .chain([("TOTAL", o.total())]);
    for (m, u) in rows {
        eprintln!(
            "{m:<28} {:>9} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10}",
            u.responses,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.cache_write_5m_tokens,
            u.cache_write_1h_tokens
        );
    }
    eprintln!("progress-only responses: {:?}", o.progress_only);
}

#[test]
fn the_oracle_reads_the_corpus_as_checked_by_hand() {
    // Figures cross-checked with an independent jq and a Python reading of the same files
    // (2026-12-01). If the corpus changes, recompute them the same way before updating.
    let Some(corpus) = corpus() else { return };
    let o = oracle::claude_tree_usage(&corpus.join("claude-code"));
    print_oracle(&o);
    assert!(
        o.conflicting_models.is_empty(),
        "decide how the ingest picks a model for {:?}",
        o.conflicting_models
    );
    assert_eq!(
        (o.without_id, o.progress_without_id, o.split_disagrees),
        (0, 0, 0)
    );
    let expected: BTreeMap<Option<String>, ModelUsage> = [
        (
            "claude-haiku-4-5-20251001",
            [189, 609, 29992, 12421274, 307245, 239968, 67277],
        ),
        (
            "claude-opus-4-6",
            [697, 6080, 165663, 64335015, 1640468, 967869, 672599],
        ),
        (
            "claude-sonnet-4-20250514",
            [287, 1333, 75828, 8377717, 405045, 405045, 0],
        ),
        (
            "claude-sonnet-4-5-20250929",
            [75, 3817, 1342, 2439413, 324226, 282050, 42176],
        ),
    ]
    .into_iter()
    .map(|(m, c)| (Some(m.to_string()), model_usage(c)))
    .collect();
    assert_eq!(o.by_model, expected);
    // The five responses of a subagent whose file is absent (marot-spotter/subagent.jsonl,
    // agent afb92ff) are recorded only in the parent's progress records.
    assert_eq!(
        o.progress_only,
        BTreeMap::from([(Some("claude-haiku-4-5-20251001".to_string()), 5)])
    );
}

#[test]
fn usage_equals_the_oracle_model_by_model() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    usage_equals_the_oracle(&corpus.join("claude-code"), &dir.path().join("archive.db"));
}

/// The benchmarks' generated sessions (`quarry gen --lean`) carry what real ones do: tool calls
/// with failures, both cache lifetimes, subagents whose responses also stream into the parent's
/// progress records, and now and then a subagent whose own file is missing. The archive counts
/// them as the oracle does.
#[test]
fn generated_lean_sessions_are_counted_as_the_oracle_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    let size = quarry_synth::Size::Messages(40_000);
    quarry_synth::generate(&corpus, size, quarry_synth::Shape::Lean, 11).unwrap();
    let archive = dir.path().join("archive.db");
    let expected = usage_equals_the_oracle(&corpus.join("claude"), &archive);
    let total = expected.total();
    assert!(total.cache_write_5m_tokens > 0 && total.cache_write_1h_tokens > 0);
    assert!(
        !expected.progress_only.is_empty(),
        "some subagent responses are known only from progress records"
    );
    let conn = open(&archive);
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    let actions = count("SELECT COUNT(*) FROM actions");
    let failed = count("SELECT COUNT(*) FROM actions WHERE is_error = 1");
    let messages = count("SELECT COUNT(*) FROM messages");
    assert!(
        failed > 0 && failed < actions,
        "{failed} of {actions} actions fail"
    );
    assert!(
        actions * 20 > messages && actions * 4 < messages,
        "{actions} tool calls in {messages} messages"
    );
    assert!(count("SELECT COUNT(*) FROM sessions WHERE branch_type = 'subagent'") > 0);
    assert!(
        count("SELECT COUNT(*) FROM usage WHERE recorded_via = 'transcript' AND record_count > 1")
            > 0,
        "responses both in a subagent's file and in its parent's progress records count once"
    );
}

/// Ingests the Claude Code tree `tree` into `archive` and checks its usage against the oracle's
/// reading of the same files; returns that reading.
fn usage_equals_the_oracle(tree: &std::path::Path, archive: &std::path::Path) -> TreeUsage {
    let expected = oracle::claude_tree_usage(tree);
    print_oracle(&expected);
    ingest(archive, &[tree]);
    let conn = open(archive);

    let sums = TOKEN_COLUMNS.map(|c| format!("SUM({c})")).join(", ");
    let sql = format!("SELECT model, COUNT(*), {sums} FROM usage GROUP BY model");
    let mut stmt = conn.prepare(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let got: BTreeMap<Option<String>, ModelUsage> = stmt
        .query_map([], |r| {
            let mut c = [0_i64; 7];
            for (i, v) in c.iter_mut().enumerate() {
                *v = r.get::<_, Option<i64>>(i + 1)?.unwrap_or(0);
            }
            Ok((r.get::<_, Option<String>>(0)?, model_usage(c)))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        got, expected.by_model,
        "usage per model differs from the oracle"
    );

    let progress_only: BTreeMap<Option<String>, i64> = conn
        .prepare("SELECT model, COUNT(*) FROM usage WHERE recorded_via = 'progress' GROUP BY model")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        progress_only, expected.progress_only,
        "progress-only responses"
    );

    let check = |sql: &str| -> i64 {
        conn.query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    assert_eq!(
        check(
            "SELECT COUNT(*) FROM usage \
             WHERE cache_write_5m_tokens + cache_write_1h_tokens != cache_write_tokens"
        ),
        0,
        "5m + 1h must equal the cache-write total on every row"
    );
    assert_eq!(
        check("SELECT COUNT(*) - COUNT(DISTINCT response_key) FROM usage"),
        0,
        "every response key once (none NULL)"
    );
    assert_eq!(
        check(
            "SELECT COUNT(*) FROM usage \
             WHERE recorded_via NOT IN ('transcript', 'progress') OR recorded_via IS NULL"
        ),
        0
    );

    // Summing sessions counts no response twice: each session sums the usage rows it owns.
    let total = |table: &str| -> Vec<i64> {
        let sql = format!("SELECT {sums} FROM {table}");
        conn.query_row(&sql, [], |r| {
            (0..TOKEN_COLUMNS.len())
                .map(|i| Ok(r.get::<_, Option<i64>>(i)?.unwrap_or(0)))
                .collect()
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    let usage = total("usage");
    assert_eq!(
        total("sessions"),
        usage,
        "SUM(sessions.*) over {TOKEN_COLUMNS:?} must equal SUM(usage.*)"
    );
    expected
}
