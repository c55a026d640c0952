//! The ingest summary: what was read, written, skipped and why; printed for people or as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::model::Diagnostic;

/// What one ingest did.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// Candidate files looked at.
    pub files_seen: usize,
    /// Files ingested for the first time.
    pub files_new: usize,
    /// Files whose content changed and whose sessions were replaced.
    pub files_changed: usize,
    /// Of the changed files, those that grew and were read from where they were left.
    pub files_continued: usize,
    /// Grown files read whole rather than from where they were left, by reason.
    pub read_whole: BTreeMap<String, usize>,
    /// Files already in the archive with the same size and hash.
    pub files_unchanged: usize,
    /// Append-only files rewritten since they were archived (kept out; `--replace` takes them).
    pub files_rewritten: usize,
    /// Files of a format quarry does not read.
    pub files_unsupported: usize,
    /// Files that could not be read or written.
    pub files_failed: usize,
    /// Bytes looked at (the files' sizes).
    pub bytes: u64,
    /// Bytes read from them: a grown file is read from where it was left, and an unchanged one
    /// only as far as its check needs.
    pub bytes_read: u64,
    /// Records read from new or changed files.
    pub records: usize,
    /// Rows written.
    pub rows_written: usize,
    /// Sessions written by this run, per origin.
    pub sessions_ingested: BTreeMap<String, usize>,
    /// Sessions in the archive after the run, per origin.
    pub archive_sessions: BTreeMap<String, i64>,
    /// Record types the adapters did not know (kept as raw events), with counts.
    pub unknown_records: BTreeMap<String, usize>,
    /// Subagent sessions whose parent session is not in the archive: (child, parent).
    pub missing_parents: Vec<(String, String)>,
    /// Problems, each naming file, line and reason.
    pub diagnostics: Vec<Diagnostic>,
    /// What re-deriving the archive's sessions under this version's rules changed, when the
    /// archive asked for it (written by an older quarry).
    pub rederived: Option<super::reindex::ReindexSummary>,
    /// Generation before the run.
    pub generation_before: i64,
    /// Generation after the run.
    pub generation_after: i64,
    /// Wall time.
    pub elapsed_ms: u64,
}

impl Summary {
    /// Throughput over the bytes looked at, in MB/s (10^6 bytes).
    pub fn mb_per_s(&self) -> f64 {
        if self.elapsed_ms == 0 {
            return 0.0;
        }
        self.bytes as f64 / 1e6 / (self.elapsed_ms as f64 / 1000.0)
    }

    /// The summary as a JSON value (with the throughput).
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(obj) = value.as_object_mut() {
            obj.insert(
                "mb_per_s".into(),
                serde_json::json!((self.mb_per_s() * 10.0).round() / 10.0),
            );
        }
        value
    }

    /// The summary for people.
    pub fn to_human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "ingested {} files ({} new, {} changed, {} unchanged, {} rewritten and kept out, {} unsupported, {} failed): {:.1} MB in {:.2}s ({:.1} MB/s)",
            self.files_seen,
            self.files_new,
            self.files_changed,
            self.files_unchanged,
            self.files_rewritten,
            self.files_unsupported,
            self.files_failed,
            self.bytes as f64 / 1e6,
            self.elapsed_ms as f64 / 1000.0,
            self.mb_per_s()
        );
        if self.files_continued > 0 || !self.read_whole.is_empty() {
            let _ = writeln!(
                out,
                "{} grown files read from where they were left; {:.1} MB read from the files",
                self.files_continued,
                self.bytes_read as f64 / 1e6
            );
            for (why, n) in &self.read_whole {
                let _ = writeln!(out, "  {n} grown files read whole: {why}");
            }
        }
        if let Some(r) = &self.rederived {
            out.push_str(&r.to_human());
        }
        let _ = writeln!(
            out,
            "{} records read, {} new rows, generation {} -> {}",
            self.records, self.rows_written, self.generation_before, self.generation_after
        );
        if !self.archive_sessions.is_empty() {
            let _ = writeln!(out, "sessions by origin (this run / archive):");
            for (origin, total) in &self.archive_sessions {
                let now = self.sessions_ingested.get(origin).copied().unwrap_or(0);
                let _ = writeln!(out, "  {origin:<22} {now:>6} / {total}");
            }
        }
        if !self.unknown_records.is_empty() {
            let _ = writeln!(out, "unknown record types (kept as raw events):");
            for (kind, n) in &self.unknown_records {
                let _ = writeln!(out, "  {kind}: {n}");
            }
        }
        if !self.missing_parents.is_empty() {
            let _ = writeln!(out, "subagent sessions whose parent is not in the archive:");
            for (child, parent) in &self.missing_parents {
                let _ = writeln!(out, "  {child} (parent {parent})");
            }
        }
        if !self.diagnostics.is_empty() {
            let _ = writeln!(out, "{} problems:", self.diagnostics.len());
            for d in &self.diagnostics {
                let at = d.line.map(|l| format!(":{l}")).unwrap_or_default();
                let _ = writeln!(out, "  {}{at}: {} — {}", d.file, d.kind, d.reason);
            }
        }
        out
    }
}
