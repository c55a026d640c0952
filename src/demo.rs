//! `quarry gen` (a synthetic corpus in the real formats, from `quarry_synth`) and `quarry demo`
//! (a small one generated, ingested into a temporary archive and asked the showcase questions
//! through the library API).

use std::path::{Path, PathBuf};

use quarry::{Caps, Format, Options, Quarry, block_on};
use quarry_archive::Archive;
use quarry_ingest::{IngestOptions, ingest};
use quarry_synth::{Shape, Size, generate};

use crate::flags::{Cli, GenArgs};
use crate::{Failure, emit};

/// `quarry gen`.
pub fn run_gen(cli: &Cli, args: GenArgs) -> Result<(), Failure> {
    let size = match (args.messages, args.sessions) {
        (_, Some(n)) => Size::Sessions(n),
        (Some(n), None) => Size::Messages(n),
        (None, None) => return Err(Failure::usage("give --messages N or --sessions N")),
    };
    let shape = if args.lean {
        Shape::Lean
    } else {
        Shape::Realistic
    };
    let report = generate(&args.out, size, shape, args.seed).map_err(Failure::runtime)?;
    if cli.format() == Format::Json {
        emit(&format!(
            "{}\n",
            serde_json::to_value(&report).unwrap_or_default()
        ));
    } else {
        emit(&format!(
            "wrote {} sessions ({} files, {} messages, {:.1} MB) to {}\n",
            report.sessions,
            report.files,
            report.messages,
            report.bytes as f64 / 1e6,
            args.out.display()
        ));
    }
    Ok(())
}

/// `quarry demo`.
pub fn run_demo(cli: &Cli) -> Result<(), Failure> {
    emit(&demo(cli.format() == Format::Json).map_err(Failure::runtime)?);
    Ok(())
}

/// Runs every showcase query on the archive at `path` through the library API and renders the
/// answers as tables.
fn showcase(path: &Path) -> Result<String, String> {
    let mut options = Options::new(path);
    options.tz = Some("UTC".into());
    let quarry = Quarry::open(&options).map_err(|e| e.to_string())?;
    let mut out = String::from("\nsome questions, answered exactly over every row:\n");
    for query in quarry_synth::showcase::QUERIES {
        let answer = block_on(quarry.query_collect(query, Caps::default()))
            .and_then(|answer| answer)
            .map_err(|e| format!("{query}: {e}"))?;
        out.push_str(&format!("\n$ quarry '{query}'\n"));
        out.push_str(&quarry::output::render_table(&answer).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Generates, ingests into a temporary archive, and returns what it holds and the showcase's
/// answers (as JSON when `json`).
fn demo(json: bool) -> Result<String, String> {
    let dir = tempfile_dir().map_err(|e| format!("cannot create a temporary folder: {e}"))?;
    let corpus = dir.join("corpus");
    let report =
        generate(&corpus, Size::Sessions(40), Shape::Realistic, 7).map_err(|e| e.to_string())?;
    let mut archive = Archive::open(&dir.join("archive.db")).map_err(|e| e.to_string())?;
    let summary = ingest(
        &mut archive,
        &IngestOptions {
            paths: vec![corpus],
            owner: Some("demo".into()),
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let tables = archive.tables().map_err(|e| e.to_string())?;
    let text = if json {
        let value = serde_json::json!({
            "generated": report,
            "ingest": summary.to_json(),
            "tables": tables.iter().map(|t| serde_json::json!({"name": t.name, "rows": t.rows})).collect::<Vec<_>>(),
        });
        format!("{value}\n")
    } else {
        let mut out = format!(
            "quarry demo: generated {} synthetic sessions ({} files, {:.1} MB) in the real Claude Code and Codex formats\n\n",
            report.sessions,
            report.files,
            report.bytes as f64 / 1e6
        );
        out.push_str(&summary.to_human());
        out.push('\n');
        for t in &tables {
            out.push_str(&format!("  {:<18} {:>8} rows  {}\n", t.name, t.rows, t.doc));
        }
        out.push_str(&demo_facts(&archive).unwrap_or_default());
        out.push_str(&showcase(archive.path())?);
        out.push_str(&format!(
            "\n(archive at {}; removed on exit)\n",
            archive.path().display()
        ));
        out
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok(text)
}

fn demo_facts(archive: &Archive) -> rusqlite::Result<String> {
    let conn = archive.conn();
    let mut out = String::from("\nwhat the archive knows:\n");
    let mut stmt = conn.prepare(
        "SELECT semantic_type, COUNT(*), SUM(is_error) FROM actions GROUP BY semantic_type ORDER BY 2 DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for row in rows {
        let (kind, n, errors) = row?;
        out.push_str(&format!("  actions {kind:<10} {n:>6} ({errors} errors)\n"));
    }
    let (input, output, cache): (i64, i64, i64) = conn.query_row(
        "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens) FROM usage
         WHERE recorded_via <> 'approximate'",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    out.push_str(&format!(
        "  tokens: {input} input, {output} output, {cache} cache reads (each response counted once)\n"
    ));
    let (subagents, uncommitted): (i64, i64) = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM sessions WHERE parent_session_id IS NOT NULL),
                (SELECT COUNT(*) FROM turns WHERE committed = 0)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    out.push_str(&format!(
        "  {subagents} subagent sessions linked to their parents; {uncommitted} unfinished turns hidden from events\n"
    ));
    Ok(out)
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("quarry-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
