//! The differential test: every question file of `tests/queries/` (every aggregate form,
//! percentiles, median and stddev, time buckets, exists, seq, session fields, the scope form,
//! sorts and pages, projections with first/last, the benchmarks' questions) asked of quarry in
//! its language and in its SQL, each answer checked against the file's oracle — hand-written SQL
//! run by rusqlite on the same archive, or an oracle function computed in Rust from plain rows.
//! It runs on the real corpus and on a generated archive of 100,000 messages.

use std::path::Path;

use quarry::Caps;

use crate::support::questions::{self, Answer, Question};
use crate::support::{corpus_archive, engine, ingest_into, rows::sql_rows, runtime};

/// Asks every checked question of `archive` in both languages; panics listing every failure.
fn check_all(archive: &Path) {
    let rt = runtime();
    let engine = engine(archive);
    let questions = questions::checked();
    let mut failures = Vec::new();
    for q in &questions {
        for (form, main_only) in [(q.quarry.as_deref(), false), (q.sql.as_deref(), true)] {
            let Some(text) = form else { continue };
            let result = if main_only {
                rt.block_on(engine.sql_collect(text, Caps::default()))
            } else {
                rt.block_on(engine.query_collect(text, Caps::default()))
            };
            let label = format!(
                "{} ({})",
                q.name,
                if main_only { "sql" } else { "language" }
            );
            match result {
                Ok(result) => {
                    if let Err(e) = q.check(archive, &Answer::of(&result), main_only) {
                        failures.push(format!("{label}: {e}\n    {text}"));
                    }
                }
                Err(e) => failures.push(format!("{label}: {e}\n    {text}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} questions disagree with their oracle:\n{}",
        failures.len(),
        questions.len(),
        failures.join("\n")
    );
}

/// Every question file but the benchmarks' report has an oracle, a language form and an SQL
/// form; today's 51 differential cases (and the benchmarks' questions) are all there.
#[test]
fn every_question_file_is_complete() {
    let all = questions::all();
    let checked: Vec<&Question> = all.iter().filter(|q| q.oracle.is_some()).collect();
    for q in &checked {
        assert!(
            q.quarry.is_some() && q.sql.is_some(),
            "{} lacks a form",
            q.name
        );
    }
    for q in all.iter().filter(|q| q.oracle.is_none()) {
        let kind = q
            .bench
            .as_ref()
            .and_then(|b| b.get("kind"))
            .and_then(|k| k.as_str());
        assert_eq!(kind, Some("report"), "{} has no oracle", q.name);
    }
    assert!(
        checked.len() >= 51 + 8,
        "{} questions with an oracle",
        checked.len()
    );
    eprintln!("question files by oracle: {:?}", questions::census(&all));
}

#[test]
fn differential_on_the_corpus() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    check_all(archive);
}

#[test]
fn differential_on_a_generated_archive_of_100k_messages() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    let report = quarry_synth::generate(
        &corpus,
        quarry_synth::Size::Messages(100_000),
        quarry_synth::Shape::Realistic,
        11,
    )
    .unwrap();
    let archive = ingest_into(dir.path(), vec![corpus]);
    let messages = sql_rows(&archive, "SELECT COUNT(*) FROM messages")[0][0]
        .as_i64()
        .unwrap();
    assert!(
        messages >= 100_000,
        "{messages} messages ({} generated)",
        report.messages
    );
    check_all(&archive);
}
