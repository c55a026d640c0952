//! The verbs that write assertions: `quarry tag`, `quarry note`, `quarry assertions import` and
//! `quarry judge`, through `quarry_ingest::assertions` and `quarry_ingest::judge`.

use std::path::Path;

use quarry::read::{ReadAnswer, ReadRequest};
use quarry::{Format, Quarry, block_on};
use quarry_archive::location::os_user;
use quarry_ingest::assertions::{self, AssertionError};
use quarry_ingest::judge::{self, EvidencePreview, Judgment, QueueRow, Verdict};

use crate::flags::{Cli, JudgeArgs};
use crate::search::print;
use crate::{Failure, emit, open_archive, options};

/// `quarry tag SESSION TAG`.
pub fn run_tag(cli: &Cli, session: &str, tag: &str) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let id = assertions::tag(archive.conn_mut(), session, tag, os_user().as_deref())
        .map_err(assertion_failure)?;
    emit(&format!("tagged {id} with {tag}\n"));
    Ok(())
}

/// `quarry note SESSION TEXT`.
pub fn run_note(cli: &Cli, session: &str, text: &str) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let id = assertions::note(archive.conn_mut(), session, text, os_user().as_deref())
        .map_err(assertion_failure)?;
    emit(&format!("noted {id}\n"));
    Ok(())
}

/// `quarry assertions import FILE`.
pub fn run_import(cli: &Cli, file: &Path) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let summary = assertions::import(archive.conn_mut(), file).map_err(assertion_failure)?;
    if cli.format() == Format::Json {
        emit(&format!("{}\n", serde_json::json!(summary)));
    } else {
        let mut out = format!(
            "imported {} assertions ({} candidates awaiting judgment, {} kept their judgment)\n",
            summary.imported, summary.candidates, summary.kept_judgments
        );
        for d in &summary.diagnostics {
            out.push_str(&format!(
                "  {}:{}: {} — {}\n",
                d.file,
                d.line.unwrap_or(0),
                d.kind,
                d.reason
            ));
        }
        emit(&out);
    }
    Ok(())
}

/// `quarry judge`: one judgment, or one view of the queue.
pub fn run_judge(cli: &Cli, args: &JudgeArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let mut archive = open_archive(cli.archive.clone())?;
    let target = args.target_ref.as_deref();
    let verdict = [
        (&args.accept, Verdict::Accept),
        (&args.reject, Verdict::Reject),
        (&args.defer, Verdict::Defer),
        (&args.supersede, Verdict::Supersede),
    ]
    .into_iter()
    .find_map(|(r, v)| r.as_deref().map(|r| (r, v)));
    if let Some((candidate, verdict)) = verdict {
        let outcome = judge::judge(
            archive.conn_mut(),
            &Judgment {
                candidate,
                verdict,
                reason: args.reason.as_deref(),
                replacement_kind: args.replacement_kind.as_deref(),
                body: args.body.as_deref(),
                author: os_user().as_deref(),
            },
        )
        .map_err(assertion_failure)?;
        return print(
            json,
            || serde_json::to_string(&outcome),
            || {
                let mut out = format!(
                    "{} is {}; judgment {}\n",
                    outcome.candidate_ref, outcome.status, outcome.judgment_ref
                );
                if let Some(r) = &outcome.replacement_ref {
                    out.push_str(&format!("replaced by {r}\n"));
                }
                out
            },
        );
    }
    if args.status {
        let status = judge::status(archive.conn(), target).map_err(assertion_failure)?;
        return print(
            json,
            || serde_json::to_string(&status),
            || status_text(&status),
        );
    }
    let mut rows = judge::queue(archive.conn(), target, args.review).map_err(assertion_failure)?;
    drop(archive);
    if args.review {
        preview_evidence(cli, &mut rows)?;
    }
    print(
        json,
        || serde_json::to_string(&serde_json::json!({ "rows": rows })),
        || queue_text(&rows, args.review),
    )
}

/// Resolves the first evidence refs of each row, each on its own: one that does not resolve
/// is a state of its preview, not a failure of the view.
fn preview_evidence(cli: &Cli, rows: &mut [QueueRow]) -> Result<(), Failure> {
    if rows.iter().all(|r| r.evidence_refs.is_empty()) {
        return Ok(());
    }
    let quarry = Quarry::open(&options(cli)?).map_err(Failure::runtime)?;
    for row in rows {
        row.evidence_previews = row
            .evidence_refs
            .iter()
            .take(judge::EVIDENCE_PREVIEWS)
            .map(|reference| preview(&quarry, reference))
            .collect();
    }
    Ok(())
}

fn preview(quarry: &Quarry, reference: &str) -> EvidencePreview {
    let request = ReadRequest::Resolve(reference.to_string());
    let failed = |state: &str| EvidencePreview {
        reference: reference.to_string(),
        state: state.to_string(),
        session_id: None,
        excerpt: None,
    };
    match block_on(quarry.read(&request)).and_then(|r| r) {
        Ok(ReadAnswer::Resolution(r)) if r.resolved => EvidencePreview {
            reference: reference.to_string(),
            state: "resolved".into(),
            session_id: r.session_id.clone(),
            excerpt: r.object.as_ref().and_then(|o| {
                ["text", "body_text", "output_text", "title", "value"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(|v| v.as_str()))
                    .map(|t| t.chars().take(judge::SUMMARY_CHARS).collect())
            }),
        },
        Ok(ReadAnswer::Resolution(r)) => failed(r.reason.unwrap_or("not_found")),
        Ok(_) => failed("error"),
        Err(e) => failed(e.code()),
    }
}

fn queue_text(rows: &[QueueRow], judged: bool) -> String {
    if rows.is_empty() {
        return if judged {
            "no judged candidates\n".into()
        } else {
            "no candidates awaiting judgment\n".into()
        };
    }
    let mut out = String::new();
    for r in rows {
        out.push_str(&format!(
            "{}  {}  {}  by {}{}  {} evidence  {} days old\n    {}\n",
            r.assertion_ref,
            r.status,
            r.kind,
            r.author_kind,
            r.author_ref
                .as_deref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default(),
            r.evidence_count,
            r.age_ms / 86_400_000,
            r.summary
        ));
        if let Some(reason) = r.disabled_reason {
            out.push_str(&format!("    no action: {reason}\n"));
        }
        if let Some(j) = &r.judgment {
            out.push_str(&format!(
                "    judged {} by {}: {}{}\n",
                j.verdict.as_deref().unwrap_or("?"),
                j.judged_by.as_deref().unwrap_or("?"),
                j.reason.as_deref().unwrap_or(""),
                j.replacement_ref
                    .as_deref()
                    .map(|c| format!(" → {c}"))
                    .unwrap_or_default()
            ));
        }
        for p in &r.evidence_previews {
            out.push_str(&format!(
                "    {} [{}] {}\n",
                p.reference,
                p.state,
                p.excerpt.as_deref().unwrap_or("")
            ));
        }
    }
    out
}

fn status_text(s: &judge::QueueStatus) -> String {
    let days = |ms: Option<i64>| {
        ms.map_or("-".to_string(), |m| {
            format!("{:.1}", m as f64 / 86_400_000.0)
        })
    };
    let map = |m: &std::collections::BTreeMap<String, i64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "queue: {} ({} pending; oldest {} days, newest {} days; {} older than 60 days)\n\
         pending by kind: {}\npending by source: {}\nby status: {}\nby kind: {}\n\
         judgments: {}\nstatuses outside the vocabulary (now inactive): {}\nnot recorded: {}\n",
        s.state,
        s.pending,
        days(s.oldest_pending_age_ms),
        days(s.newest_pending_age_ms),
        s.retained_backlog,
        map(&s.pending_by_kind),
        map(&s.pending_by_source),
        map(&s.by_status),
        map(&s.by_kind),
        map(&s.judgments),
        map(&s.outside_vocabulary),
        s.unobserved.join("; ")
    )
}

fn assertion_failure(e: AssertionError) -> Failure {
    match e {
        AssertionError::UnknownSession(_) => {
            Failure::of_class(quarry::ErrorClass::NotFound, "not_found", e)
        }
        AssertionError::UnknownAssertion(_) => {
            Failure::of_class(quarry::ErrorClass::NotFound, "not_found", e)
        }
        AssertionError::NotJudgeable { reason, .. } => {
            Failure::of_class(quarry::ErrorClass::Conflict, reason, e)
        }
        AssertionError::AmbiguousSession(..)
        | AssertionError::Usage(_)
        | AssertionError::UnknownStatus(_) => Failure::usage(e),
        other => Failure::runtime(other),
    }
}
