//! `quarry judge`: the judgments of candidate claims (accept, reject, defer, supersede) and the
//! views of the queue (awaiting, judged, its health), as docs/judgments.md describes them.
//!
//! A judgment changes the candidate's status and writes a `judgment` assertion about it (the
//! verdict, the reason, who and when), so the history is rows like any other. Accepting or
//! superseding also writes an active claim whose evidence cites the candidate and whose
//! `supersedes` names it.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use quarry_schema::refs::{Ref, RefKind};

use crate::assertions::{
    AssertionError, JUDGMENT, POLICY_JUDGED, TERMINAL_STATUSES, locate, short_hash, upsert_in,
    user_assertion,
};

/// How long a pending candidate waits before it counts as retained backlog.
pub const BACKLOG_AGE_MS: i64 = 60 * 24 * 3600 * 1000;

/// The longest claim summary a view shows, in characters.
pub const SUMMARY_CHARS: usize = 200;

/// How many evidence refs a review row previews.
pub const EVIDENCE_PREVIEWS: usize = 5;

/// The four judgments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The claim holds: an active copy replaces it.
    Accept,
    /// The claim does not hold.
    Reject,
    /// Not decided yet: it leaves the queue, judged `deferred`.
    Defer,
    /// A different claim replaces it.
    Supersede,
}

impl Verdict {
    /// The status the candidate takes.
    pub fn status(self) -> &'static str {
        match self {
            Verdict::Accept => "accepted",
            Verdict::Reject => "rejected",
            Verdict::Defer => "deferred",
            Verdict::Supersede => "superseded",
        }
    }
}

/// The actions a candidate awaiting judgment offers.
pub const ACTIONS: &[&str] = &["accept", "reject", "defer", "supersede"];

/// Why a row with `status` cannot be judged (the disabled-action reason of a review row).
pub fn disabled_reason(status: &str) -> &'static str {
    match status {
        "accepted" => "candidate_already_accepted",
        "rejected" => "candidate_already_rejected",
        "deferred" => "candidate_deferred",
        "superseded" => "candidate_superseded",
        "deleted" => "candidate_deleted",
        _ => "not_a_candidate",
    }
}

/// One judgment to record.
#[derive(Debug, Clone)]
pub struct Judgment<'a> {
    /// The candidate: `assertion:<id>` or its bare id.
    pub candidate: &'a str,
    /// What is decided.
    pub verdict: Verdict,
    /// Why (required but for `supersede`).
    pub reason: Option<&'a str>,
    /// The replacement claim's kind (`supersede`; the candidate's by default).
    pub replacement_kind: Option<&'a str>,
    /// The replacement claim's text (`supersede`, required).
    pub body: Option<&'a str>,
    /// Who judges.
    pub author: Option<&'a str>,
}

/// What a judgment wrote.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeOutcome {
    /// The candidate's ref.
    pub candidate_ref: String,
    /// The status it holds now.
    pub status: &'static str,
    /// The judgment record's ref.
    pub judgment_ref: String,
    /// The active claim that replaces the candidate (`accept`, `supersede`).
    pub replacement_ref: Option<String>,
}

/// The candidate row a judgment reads.
struct Held {
    status: String,
    target_ref: String,
    scope_ref: Option<String>,
    kind: String,
    key: Option<String>,
    value: Option<String>,
    body_text: Option<String>,
    evidence_refs: String,
}

/// The id `candidate` names: `assertion:<id>` or a bare id.
fn assertion_id(candidate: &str) -> Result<String, AssertionError> {
    match Ref::parse(candidate) {
        Some(r) if r.kind == RefKind::Assertion => Ok(r.id),
        Some(r) => Err(AssertionError::Usage(format!(
            "'{candidate}' is a {} ref: give the candidate as assertion:<id>",
            r.kind.name()
        ))),
        None => Ok(candidate.trim().to_string()),
    }
}

/// Records `judgment` (in one transaction): the candidate's new status, a `judgment` assertion,
/// and for `accept` and `supersede` the active claim that replaces it.
pub fn judge(
    conn: &mut Connection,
    judgment: &Judgment<'_>,
) -> Result<JudgeOutcome, AssertionError> {
    let id = assertion_id(judgment.candidate)?;
    let verdict = judgment.verdict;
    let reason = judgment.reason.map(str::trim).filter(|r| !r.is_empty());
    let body = judgment.body.map(str::trim).filter(|b| !b.is_empty());
    if reason.is_none() && verdict != Verdict::Supersede {
        return Err(AssertionError::Usage(format!(
            "--reason is required to {}",
            match verdict {
                Verdict::Accept => "accept",
                Verdict::Reject => "reject",
                _ => "defer",
            }
        )));
    }
    if judgment.replacement_kind == Some(JUDGMENT) {
        return Err(AssertionError::Usage(
            "kind `judgment` is reserved for judgment records: give the replacement another kind"
                .into(),
        ));
    }
    if verdict == Verdict::Supersede && body.is_none() {
        return Err(AssertionError::Usage(
            "--body (the replacement claim) is required to supersede".into(),
        ));
    }
    let tx = conn.transaction()?;
    let held: Held = tx
        .query_row(
            "SELECT status, target_ref, scope_ref, kind, key, value, body_text, evidence_refs
             FROM assertions WHERE assertion_id = ?1",
            [&id],
            |r| {
                Ok(Held {
                    status: r.get(0)?,
                    target_ref: r.get(1)?,
                    scope_ref: r.get(2)?,
                    kind: r.get(3)?,
                    key: r.get(4)?,
                    value: r.get(5)?,
                    body_text: r.get(6)?,
                    evidence_refs: r.get(7)?,
                })
            },
        )
        .optional()?
        .ok_or_else(|| AssertionError::UnknownAssertion(id.clone()))?;
    if held.status != "candidate" {
        return Err(AssertionError::NotJudgeable {
            id,
            reason: disabled_reason(&held.status),
        });
    }
    let now = chrono::Utc::now().timestamp_millis();
    let candidate_ref = format!("assertion:{id}");
    let stamp = now.to_string();
    let hash = short_hash(&[&id, verdict.status(), &stamp]);
    let mut rows = Vec::new();
    let replacement = matches!(verdict, Verdict::Accept | Verdict::Supersede).then(|| {
        let mut evidence: Vec<Value> =
            serde_json::from_str(&held.evidence_refs).unwrap_or_default();
        evidence.push(Value::String(candidate_ref.clone()));
        let mut claim = user_assertion(
            format!("claim-{hash}"),
            &held.target_ref,
            judgment.replacement_kind.unwrap_or(&held.kind),
            judgment.author,
            now,
        );
        claim.scope_ref = held.scope_ref.clone();
        claim.key = held.key.clone();
        match verdict {
            Verdict::Accept => {
                claim.value = held.value.clone();
                claim.body_text = held.body_text.clone();
            }
            _ => claim.body_text = body.map(str::to_string),
        }
        claim.evidence_refs = Value::Array(evidence).to_string();
        claim.supersedes = Some(id.clone());
        claim
    });
    let replacement_ref = replacement
        .as_ref()
        .map(|c| format!("assertion:{}", c.assertion_id));
    let mut record = user_assertion(
        format!("judgment-{hash}"),
        &candidate_ref,
        JUDGMENT,
        judgment.author,
        now,
    );
    record.key = Some("verdict".into());
    record.value = Some(verdict.status().into());
    record.body_text = reason.map(str::to_string);
    record.evidence_refs = Value::Array(
        std::iter::once(candidate_ref.clone())
            .chain(replacement_ref.clone())
            .map(Value::String)
            .collect(),
    )
    .to_string();
    let judgment_ref = format!("assertion:{}", record.assertion_id);
    tx.execute(
        "UPDATE assertions SET status = ?2, context_policy = ?3, updated_at_ms = ?4
         WHERE assertion_id = ?1",
        params![id, verdict.status(), POLICY_JUDGED, now],
    )?;
    rows.extend(replacement);
    rows.push(record);
    upsert_in(&tx, &rows)?;
    tx.commit()?;
    Ok(JudgeOutcome {
        candidate_ref,
        status: verdict.status(),
        judgment_ref,
        replacement_ref,
    })
}

/// The judgment recorded on a judged candidate.
#[derive(Debug, Clone, Serialize)]
pub struct JudgmentRecord {
    /// The `judgment` assertion's ref.
    pub judgment_ref: String,
    /// The status it gave (`accepted`, `rejected`, `deferred`, `superseded`).
    pub verdict: Option<String>,
    /// The reason given.
    pub reason: Option<String>,
    /// Who judged.
    pub judged_by: Option<String>,
    /// When.
    pub judged_at_ms: i64,
    /// The active claim that replaced the candidate.
    pub replacement_ref: Option<String>,
}

/// One evidence ref of a row, as the resolver found it.
#[derive(Debug, Clone, Serialize)]
pub struct EvidencePreview {
    /// The ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// `resolved`, or why not (`not_found`, `out_of_scope`, `invalid_ref`, `error`).
    pub state: String,
    /// The session of what it names.
    pub session_id: Option<String>,
    /// A bounded excerpt of what it names.
    pub excerpt: Option<String>,
}

/// One row of `judge --list` or `judge --review`.
#[derive(Debug, Clone, Serialize)]
pub struct QueueRow {
    /// `assertion:<id>`.
    pub assertion_ref: String,
    /// The claim's kind.
    pub kind: String,
    /// Its key.
    pub key: Option<String>,
    /// Its body (or value), at most [`SUMMARY_CHARS`] characters.
    pub summary: String,
    /// What it is about.
    pub target_ref: String,
    /// The session that is or holds its target.
    pub session_id: Option<String>,
    /// Who wrote it (the source's identity).
    pub author_ref: Option<String>,
    /// What kind of writer.
    pub author_kind: String,
    /// Its status.
    pub status: String,
    /// When it was written.
    pub created_at_ms: i64,
    /// How long ago, in milliseconds.
    pub age_ms: i64,
    /// How many evidence refs it cites.
    pub evidence_count: usize,
    /// Every evidence ref it cites.
    pub evidence_refs: Vec<String>,
    /// The first [`EVIDENCE_PREVIEWS`] refs, resolved (filled by the caller that can resolve).
    pub evidence_previews: Vec<EvidencePreview>,
    /// The judgments it still takes (a candidate awaiting judgment: all four).
    pub actions: Vec<&'static str>,
    /// Why it takes none (a judged row: `candidate_already_accepted`, ...).
    pub disabled_reason: Option<&'static str>,
    /// The judgment it received.
    pub judgment: Option<JudgmentRecord>,
}

/// The rows of a view: candidates awaiting judgment (`judged` false) or judged ones (`judged`
/// true), oldest first, about `target` when given (a ref: the claims whose target is it, and
/// for a session also those about its objects).
pub fn queue(
    conn: &Connection,
    target: Option<&str>,
    judged: bool,
) -> Result<Vec<QueueRow>, AssertionError> {
    let statuses: Vec<String> = if judged {
        TERMINAL_STATUSES.iter().map(|s| format!("'{s}'")).collect()
    } else {
        vec!["'candidate'".into()]
    };
    let (filter, target_ref, session) = target_filter(conn, target)?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut stmt = conn.prepare(&format!(
        "SELECT assertion_id, kind, key, value, body_text, target_ref, session_id, author_ref,
                author_kind, status, created_at_ms, evidence_refs
         FROM assertions WHERE status IN ({}) AND kind <> 'judgment' {filter}
         ORDER BY created_at_ms, assertion_id",
        statuses.join(", ")
    ))?;
    let rows = stmt.query_map(params![target_ref, session], |r| {
        let id: String = r.get(0)?;
        let value: Option<String> = r.get(3)?;
        let body: Option<String> = r.get(4)?;
        let status: String = r.get(9)?;
        let created: i64 = r.get(10)?;
        let evidence: String = r.get(11)?;
        let evidence_refs: Vec<String> = serde_json::from_str::<Vec<Value>>(&evidence)
            .unwrap_or_default()
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .collect();
        Ok(QueueRow {
            assertion_ref: format!("assertion:{id}"),
            kind: r.get(1)?,
            key: r.get(2)?,
            summary: body
                .or(value)
                .unwrap_or_default()
                .chars()
                .take(SUMMARY_CHARS)
                .collect(),
            target_ref: r.get(5)?,
            session_id: r.get(6)?,
            author_ref: r.get(7)?,
            author_kind: r.get(8)?,
            actions: if judged { Vec::new() } else { ACTIONS.to_vec() },
            disabled_reason: judged.then(|| disabled_reason(&status)),
            status,
            created_at_ms: created,
            age_ms: (now - created).max(0),
            evidence_count: evidence_refs.len(),
            evidence_refs,
            evidence_previews: Vec::new(),
            judgment: None,
        })
    })?;
    let mut out: Vec<QueueRow> = rows.collect::<Result<_, _>>()?;
    if judged {
        for row in &mut out {
            row.judgment = judgment_of(conn, &row.assertion_ref)?;
        }
    }
    Ok(out)
}

/// The SQL condition (over `?1`, the target ref, and `?2`, its session) selecting claims about
/// `target`, with the two values.
fn target_filter(
    conn: &Connection,
    target: Option<&str>,
) -> Result<(&'static str, Option<String>, Option<String>), AssertionError> {
    let Some(target) = target else {
        return Ok(("AND ?1 IS NULL AND ?2 IS NULL", None, None));
    };
    let at = locate(conn, target)?;
    if at.target_ref.starts_with("session:") {
        Ok((
            "AND (target_ref = ?1 OR session_id = ?2)",
            Some(at.target_ref),
            at.session_id,
        ))
    } else {
        Ok((
            "AND target_ref = ?1 AND ?2 IS NULL",
            Some(at.target_ref),
            None,
        ))
    }
}

/// The latest judgment recorded about `candidate_ref`.
fn judgment_of(
    conn: &Connection,
    candidate_ref: &str,
) -> Result<Option<JudgmentRecord>, AssertionError> {
    let id = candidate_ref
        .strip_prefix("assertion:")
        .unwrap_or(candidate_ref);
    Ok(conn
        .query_row(
            "SELECT j.assertion_id, j.value, j.body_text, j.author_ref, j.created_at_ms,
                    (SELECT c.assertion_id FROM assertions c WHERE c.supersedes = ?2
                     ORDER BY c.created_at_ms DESC LIMIT 1)
             FROM assertions j WHERE j.kind = 'judgment' AND j.author_kind = 'user'
               AND j.status = 'active' AND j.target_ref = ?1
             ORDER BY j.created_at_ms DESC, j.assertion_id DESC LIMIT 1",
            [candidate_ref, id],
            |r| {
                Ok(JudgmentRecord {
                    judgment_ref: format!("assertion:{}", r.get::<_, String>(0)?),
                    verdict: r.get(1)?,
                    reason: r.get(2)?,
                    judged_by: r.get(3)?,
                    judged_at_ms: r.get(4)?,
                    replacement_ref: r
                        .get::<_, Option<String>>(5)?
                        .map(|c| format!("assertion:{c}")),
                })
            },
        )
        .optional()?)
}

/// `judge --status`: the queue's health from what the archive holds.
#[derive(Debug, Clone, Serialize)]
pub struct QueueStatus {
    /// `pending` when candidates await judgment, else `empty_unverified`: quarry records no
    /// producer runs or heartbeats that could show an empty queue is healthy.
    pub state: &'static str,
    /// Candidates awaiting judgment.
    pub pending: i64,
    /// The oldest pending candidate's age, in milliseconds.
    pub oldest_pending_age_ms: Option<i64>,
    /// The newest pending candidate's age, in milliseconds.
    pub newest_pending_age_ms: Option<i64>,
    /// Pending candidates older than 60 days (kept, never dropped).
    pub retained_backlog: i64,
    /// Pending candidates by kind.
    pub pending_by_kind: BTreeMap<String, i64>,
    /// Pending candidates by source (`author_kind`, and `author_ref` when known).
    pub pending_by_source: BTreeMap<String, i64>,
    /// Claims (judgments aside) by status.
    pub by_status: BTreeMap<String, i64>,
    /// Claims (judgments aside) by kind.
    pub by_kind: BTreeMap<String, i64>,
    /// Judgments recorded, by verdict.
    pub judgments: BTreeMap<String, i64>,
    /// Statuses outside the vocabulary that the version 6 migration made `inactive`, by
    /// the value kept in `original_status`.
    pub outside_vocabulary: BTreeMap<String, i64>,
    /// What quarry does not record.
    pub unobserved: Vec<&'static str>,
}

/// The queue's health, about `target` when given.
pub fn status(conn: &Connection, target: Option<&str>) -> Result<QueueStatus, AssertionError> {
    let (filter, target_ref, session) = target_filter(conn, target)?;
    let now = chrono::Utc::now().timestamp_millis();
    let counts = |select: &str, condition: &str| -> Result<BTreeMap<String, i64>, AssertionError> {
        let mut stmt = conn.prepare(&format!(
            "SELECT {select}, COUNT(*) FROM assertions WHERE {condition} {filter} GROUP BY 1"
        ))?;
        let rows = stmt.query_map(params![target_ref, session], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                r.get(1)?,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    };
    let pending_cond = "status = 'candidate' AND kind <> 'judgment'";
    let (pending, oldest, newest, backlog): (i64, Option<i64>, Option<i64>, i64) = conn.query_row(
        &format!(
            "SELECT COUNT(*), MIN(created_at_ms), MAX(created_at_ms),
                    COALESCE(SUM(created_at_ms < ?3), 0)
             FROM assertions WHERE {pending_cond} {filter}"
        ),
        params![target_ref, session, now - BACKLOG_AGE_MS],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    Ok(QueueStatus {
        state: if pending > 0 {
            "pending"
        } else {
            "empty_unverified"
        },
        pending,
        oldest_pending_age_ms: oldest.map(|t| (now - t).max(0)),
        newest_pending_age_ms: newest.map(|t| (now - t).max(0)),
        retained_backlog: backlog,
        pending_by_kind: counts("kind", pending_cond)?,
        pending_by_source: counts(
            "author_kind || COALESCE(':' || author_ref, '')",
            pending_cond,
        )?,
        by_status: counts("status", "kind <> 'judgment'")?,
        by_kind: counts("kind", "kind <> 'judgment'")?,
        judgments: counts(
            "value",
            "kind = 'judgment' AND author_kind = 'user' AND status = 'active'",
        )?,
        outside_vocabulary: counts("original_status", "original_status IS NOT NULL")?,
        unobserved: vec![
            "producer runs: quarry records no runs of the tools that write candidates",
            "scheduler heartbeat: quarry runs no scheduler",
            "convergence debt and retention outcome: candidates are never dropped",
        ],
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_judged_status_names_why_it_takes_no_action() {
        assert_eq!(disabled_reason("accepted"), "candidate_already_accepted");
        assert_eq!(disabled_reason("rejected"), "candidate_already_rejected");
        assert_eq!(disabled_reason("deferred"), "candidate_deferred");
        assert_eq!(disabled_reason("superseded"), "candidate_superseded");
        assert_eq!(disabled_reason("active"), "not_a_candidate");
        assert_eq!(assertion_id("assertion:a:b").unwrap(), "a:b");
        assert_eq!(assertion_id(" x1 ").unwrap(), "x1");
        assert!(assertion_id("message:m").is_err());
    }
}
