//! The differential fuzzer (after SQLancer): random valid queries of the language, drawn from the
//! field registry ([`generate`]), asked of quarry and of an oracle that translates them into SQL
//! for SQLite itself, independently of the lowering ([`translate`]), the answers compared under
//! the tolerance rules of `benches/answers.py`. It prints a histogram of the forms it generated,
//! so its reach is visible.
//!
//! - `cargo test --test integration fuzz::` runs a few hundred queries (every test run);
//! - `QUARRY_FUZZ_SECONDS=1800 cargo test --test integration -- --ignored --nocapture
//!   fuzz::fuzz_for_a_while` runs for as long as asked (CI: 60 s), `QUARRY_FUZZ_SEED=N` to
//!   choose the seed, `QUARRY_FUZZ_CASE=I` to ask only case `I` of that seed again;
//! - `fuzz::each_planted_bug_is_found` plants each bug of `quarry::PlantedBug` in the lowering
//!   in turn and fails unless the fuzzer reports a mismatch for it within its time.

mod generate;
mod model;
mod translate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use quarry::{Caps, PlantedBug, Quarry};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use self::generate::{Generator, Histogram, Pool};
use self::translate::{Expected, Mode, nulls_last_values};
use crate::support::rows::{difference, json_rows, keep_columns, sorted};
use crate::support::{corpus, ingest_into, runtime};

/// A query on which quarry and the oracle disagreed, or which one of them could not answer.
#[derive(Debug)]
struct Finding {
    case: u64,
    query: String,
    zone: &'static str,
    sql: String,
    detail: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "case {}: quarry --tz {} '{}'\n    {}\n    oracle SQL: {}",
            self.case, self.zone, self.query, self.detail, self.sql
        )
    }
}

/// What one run found.
struct Report {
    seed: u64,
    queries: u64,
    rust_oracle: u64,
    mismatches: Vec<Finding>,
    errors: Vec<Finding>,
    histogram: Histogram,
    elapsed: Duration,
    /// The slowest queries: (oracle, quarry and comparison time, case, query), slowest first.
    slowest: Vec<(Duration, Duration, Duration, u64, String)>,
}

/// How long and with what to run.
struct Settings {
    seed: u64,
    budget: Duration,
    max_queries: u64,
    planted: Option<PlantedBug>,
    stop_at_first_mismatch: bool,
    only_case: Option<u64>,
}

/// An archive of the whole corpus for the fuzzer alone, with a few tags and notes so the
/// assertions unit has rows.
fn fuzz_archive(dir: &Path) -> Option<PathBuf> {
    let archive = ingest_into(dir, vec![corpus()?]);
    let mut conn = rusqlite::Connection::open(&archive).unwrap();
    let ids: Vec<String> = conn
        .prepare("SELECT session_id FROM sessions ORDER BY session_id LIMIT 6")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (i, id) in ids.iter().enumerate() {
        let tag = ["review", "flaky", "Keep"][i % 3];
        quarry_ingest::assertions::tag(&mut conn, id, tag, Some("fuzzer")).unwrap();
        if i % 2 == 0 {
            quarry_ingest::assertions::note(&mut conn, id, "checked by hand", Some("fuzzer"))
                .unwrap();
        }
    }
    Some(archive)
}

/// Runs the fuzzer on `archive`.
fn run(archive: &Path, settings: &Settings) -> Report {
    let rt = runtime();
    let conn = rusqlite::Connection::open(archive).unwrap();
    let mut pool = Pool::new(rusqlite::Connection::open(archive).unwrap());
    let mut engines: HashMap<&'static str, Quarry> = HashMap::new();
    let mut report = Report {
        seed: settings.seed,
        queries: 0,
        rust_oracle: 0,
        mismatches: Vec::new(),
        errors: Vec::new(),
        histogram: Histogram::default(),
        elapsed: Duration::ZERO,
        slowest: Vec::new(),
    };
    let started = Instant::now();
    let mut case = settings.only_case.unwrap_or(0);
    while started.elapsed() < settings.budget && report.queries < settings.max_queries {
        let mut generator = Generator {
            rng: ChaCha8Rng::seed_from_u64(
                settings.seed.wrapping_mul(1_000_003).wrapping_add(case),
            ),
            pool: &mut pool,
            histogram: std::mem::take(&mut report.histogram),
        };
        let q = generator.query();
        report.histogram = generator.histogram;
        let text = q.text();
        // A sessions query whose text leaf is ranked answers with ranked rows: the ranking's
        // own oracle is FTS5's bm25() (tests/search.rs), not this SQL translation.
        let ranked = quarry_grammar::parse(&text)
            .ok()
            .and_then(|parsed| quarry_grammar::ranked::ranked_form(&text, &parsed));
        if ranked.is_some() {
            report
                .histogram
                .add("ranked form, not compared (tests/search.rs)");
            if settings.only_case.is_some() {
                break;
            }
            case += 1;
            continue;
        }
        let engine = engines.entry(q.zone).or_insert_with(|| {
            let mut options = quarry::Options::new(archive);
            options.tz = Some(q.zone.to_string());
            options.source = quarry::SourceChoice::Sqlite;
            options.planted = settings.planted;
            Quarry::open(&options).unwrap()
        });
        report.queries += 1;
        let finding = |sql: &str, detail: String| Finding {
            case,
            query: text.clone(),
            zone: q.zone,
            sql: sql.to_string(),
            detail,
        };
        let asked = Instant::now();
        let oracle = translate::expected(&q, &conn);
        let oracle_time = asked.elapsed();
        let mut quarry_time = Duration::ZERO;
        match oracle {
            Err(e) => report
                .errors
                .push(finding("", format!("the oracle failed: {e}"))),
            Ok(expected) => {
                report.rust_oracle += u64::from(expected.rust);
                let answer = rt.block_on(engine.query_collect(&text, Caps::default()));
                quarry_time = asked.elapsed() - oracle_time;
                match answer {
                    Err(e) => report
                        .errors
                        .push(finding(&expected.sql, format!("quarry failed: {e}"))),
                    Ok(answer) => {
                        if let Err(d) = agree(&json_rows(&answer.batches), &expected) {
                            report.mismatches.push(finding(&expected.sql, d));
                            if settings.stop_at_first_mismatch {
                                break;
                            }
                        }
                    }
                }
            }
        }
        let check_time = asked.elapsed() - oracle_time - quarry_time;
        report
            .slowest
            .push((oracle_time, quarry_time, check_time, case, text.clone()));
        report
            .slowest
            .sort_by_key(|(o, q, c, ..)| std::cmp::Reverse(*o + *q + *c));
        report.slowest.truncate(3);
        if settings.only_case.is_some() {
            break;
        }
        case += 1;
    }
    report.elapsed = started.elapsed();
    report
}

/// Whether quarry's rows agree with the oracle's under the comparison the query allows.
fn agree(got: &[Vec<Value>], expected: &Expected) -> Result<(), String> {
    let want = &expected.rows;
    let found = match &expected.mode {
        Mode::Ordered => difference(got, want),
        Mode::Multiset => difference(&sorted(got.to_vec()), &sorted(want.clone())),
        Mode::OrderedBy { column, desc } => {
            let out_of_order = got.windows(2).position(|w| {
                nulls_last_values(&w[0][*column], &w[1][*column], *desc)
                    == std::cmp::Ordering::Greater
            });
            match out_of_order {
                Some(i) => Some(format!("rows {i} and {} are out of order", i + 1)),
                None => difference(&sorted(got.to_vec()), &sorted(want.clone())),
            }
        }
        Mode::Page { column } => page_difference(got, expected, *column),
    };
    found.map_or(Ok(()), Err)
}

/// How a page of rows differs from the oracle's: in size, in the sorted column, or in a row
/// the oracle does not have at all (before paging).
fn page_difference(
    got: &[Vec<Value>],
    expected: &Expected,
    column: Option<usize>,
) -> Option<String> {
    let want = &expected.rows;
    if got.len() != want.len() {
        return Some(format!("{} rows, the oracle {}", got.len(), want.len()));
    }
    if let Some(c) = column
        && let Some(d) = difference(
            &keep_columns(got.to_vec(), &[c]),
            &keep_columns(want.clone(), &[c]),
        )
    {
        return Some(format!("the sorted column: {d}"));
    }
    // Rows equal to one of the oracle's are matched through a count per row, in linear time (a
    // page may hold every row of a unit); the rest (numbers within the tolerance) by a scan of
    // the oracle's rows left over.
    let key = |row: &Vec<Value>| serde_json::to_string(row).unwrap();
    let mut left: HashMap<String, usize> = HashMap::new();
    for row in &expected.unpaged {
        *left.entry(key(row)).or_default() += 1;
    }
    let mut inexact = Vec::new();
    for row in got {
        match left.get_mut(&key(row)) {
            Some(n) if *n > 0 => *n -= 1,
            _ => inexact.push(row),
        }
    }
    let mut unused: Vec<&Vec<Value>> = Vec::new();
    for row in &expected.unpaged {
        if let Some(n) = left.get_mut(&key(row))
            && *n > 0
        {
            *n -= 1;
            unused.push(row);
        }
    }
    for row in inexact {
        let Some(i) = unused.iter().position(|r| {
            difference(std::slice::from_ref(row), std::slice::from_ref(*r)).is_none()
        }) else {
            return Some(format!("{row:?} is none of the oracle's rows"));
        };
        unused.swap_remove(i);
    }
    None
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn print_report(report: &Report) {
    eprintln!(
        "fuzzer: seed {}, {} queries in {:.1} s ({} answered in part by the Rust oracle functions), {} mismatches, {} errors",
        report.seed,
        report.queries,
        report.elapsed.as_secs_f64(),
        report.rust_oracle,
        report.mismatches.len(),
        report.errors.len()
    );
    eprintln!("forms generated:");
    for (form, n) in &report.histogram.0 {
        eprintln!("  {n:>8}  {form}");
    }
    for (oracle, quarry, check, case, query) in &report.slowest {
        eprintln!(
            "slow: case {case}, oracle {:.1} s, quarry {:.1} s, comparison {:.1} s: {query}",
            oracle.as_secs_f64(),
            quarry.as_secs_f64(),
            check.as_secs_f64()
        );
    }
    for f in report.mismatches.iter().chain(&report.errors).take(20) {
        eprintln!("{f}");
    }
}

/// Fails on any mismatch or error.
fn assert_clean(report: &Report) {
    assert!(
        report.mismatches.is_empty() && report.errors.is_empty(),
        "{} mismatches, {} errors",
        report.mismatches.len(),
        report.errors.len()
    );
}

/// The settings of a run with no planted bug that goes on after a mismatch.
fn clean(seed: u64, budget: Duration, max_queries: u64, only_case: Option<u64>) -> Settings {
    Settings {
        seed,
        budget,
        max_queries,
        planted: None,
        stop_at_first_mismatch: false,
        only_case,
    }
}

/// A few hundred queries on every test run: none may disagree.
#[test]
fn a_few_hundred_generated_queries_agree_with_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = fuzz_archive(dir.path()) else {
        return;
    };
    let report = run(&archive, &clean(1, Duration::from_secs(600), 300, None));
    if !report.mismatches.is_empty() || !report.errors.is_empty() {
        print_report(&report);
    }
    assert_clean(&report);
}

/// As long as asked (`QUARRY_FUZZ_SECONDS`, default 60): no query may disagree.
#[test]
#[ignore = "runs for QUARRY_FUZZ_SECONDS (CI: 60 s); see the module docs"]
fn fuzz_for_a_while() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = fuzz_archive(dir.path()) else {
        return;
    };
    let seed = env_number("QUARRY_FUZZ_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(7, |d| d.as_secs())
    });
    let budget = Duration::from_secs(env_number("QUARRY_FUZZ_SECONDS").unwrap_or(60));
    let only_case = env_number("QUARRY_FUZZ_CASE");
    let report = run(&archive, &clean(seed, budget, u64::MAX, only_case));
    print_report(&report);
    assert_clean(&report);
}

/// Each planted bug is reported as a mismatch within a minute.
#[test]
#[ignore = "plants each bug in turn, up to 60 s each; CI runs it"]
fn each_planted_bug_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = fuzz_archive(dir.path()) else {
        return;
    };
    let mut missed = Vec::new();
    for bug in PlantedBug::ALL {
        let report = run(
            &archive,
            &Settings {
                seed: 42,
                budget: Duration::from_secs(60),
                max_queries: u64::MAX,
                planted: Some(bug),
                stop_at_first_mismatch: true,
                only_case: None,
            },
        );
        let Some(found) = report.mismatches.first() else {
            missed.push(format!("{bug:?} ({} queries)", report.queries));
            continue;
        };
        eprintln!(
            "planted {bug:?}: found after {} queries ({:.1} s)\n{found}",
            report.queries,
            report.elapsed.as_secs_f64()
        );
        // The same case without the bug agrees: the mismatch is the planted bug's.
        let again = run(
            &archive,
            &clean(42, Duration::from_secs(60), 1, Some(found.case)),
        );
        assert_clean(&again);
    }
    assert!(missed.is_empty(), "planted bugs not found: {missed:?}");
}
