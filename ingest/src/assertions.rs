//! Assertions' sources: `quarry tag`, `quarry note`, `quarry assertions import FILE.jsonl` and
//! the judgments of `quarry judge` ([`crate::judge`]). Every write goes through [`upsert`], which
//! enforces the lifecycle once for all writers (docs/judgments.md): a claim not written by a user
//! lands as a private `candidate` that is not injected and waits for a judgment (tags opt out),
//! and a claim already judged keeps its judgment. Tags also appear in `sessions.tags`, refreshed
//! here whenever a tag changes.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use quarry_archive::schema::ASSERTION_STATUSES;
use quarry_archive::{RECORD_SESSION_CHANGE, RECORD_WHOLE_TABLE_CHANGE, bump_generation};
use quarry_schema::refs::Ref;

use crate::model::Diagnostic;

/// Why an assertion could not be added.
#[derive(Debug, thiserror::Error)]
pub enum AssertionError {
    /// No session matches the reference.
    #[error("no session matches '{0}' (give a session id, a native id or a unique prefix)")]
    UnknownSession(String),
    /// Several sessions match the reference.
    #[error("'{0}' matches {1} sessions; give more of the id")]
    AmbiguousSession(String, usize),
    /// The import file could not be read.
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The archive failed.
    #[error(transparent)]
    Archive(#[from] quarry_archive::ArchiveError),
    /// A status outside the closed vocabulary.
    #[error("unknown assertion status '{0}': the statuses are {vocabulary}", vocabulary = ASSERTION_STATUSES.join(", "))]
    UnknownStatus(String),
    /// No assertion has the id.
    #[error("no assertion '{0}'")]
    UnknownAssertion(String),
    /// The assertion is not a candidate awaiting judgment.
    #[error("assertion '{id}' cannot be judged: {reason}")]
    NotJudgeable {
        /// The assertion.
        id: String,
        /// Why (`candidate_already_accepted`, `not_a_candidate`, ...).
        reason: &'static str,
    },
    /// A judgment lacks what it needs.
    #[error("{0}")]
    Usage(String),
}

/// Resolves a session reference: an exact session id, an exact native id, or a unique prefix of
/// either.
pub fn resolve_session(conn: &Connection, reference: &str) -> Result<String, AssertionError> {
    let exact: Option<String> = conn
        .query_row(
            "SELECT session_id FROM sessions WHERE session_id = ?1 OR native_id = ?1 LIMIT 1",
            [reference],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = exact {
        return Ok(id);
    }
    let pattern = format!("{}%", reference.replace('%', "\\%").replace('_', "\\_"));
    let mut stmt = conn.prepare(
        "SELECT session_id FROM sessions WHERE session_id LIKE ?1 ESCAPE '\\' OR native_id LIKE ?1 ESCAPE '\\' LIMIT 2",
    )?;
    let ids: Vec<String> = stmt
        .query_map([pattern], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    match ids.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(AssertionError::UnknownSession(reference.to_string())),
        more => Err(AssertionError::AmbiguousSession(
            reference.to_string(),
            more.len(),
        )),
    }
}

/// One assertion row, as a writer gives it. [`upsert`] decides its session, and for claims not
/// written by a user, its status, visibility and context policy.
#[derive(Debug, Clone)]
pub struct Assertion {
    pub assertion_id: String,
    /// A ref (`session:<id>`, `message:<id>`, ...); a bare id is read as a session's.
    pub target_ref: String,
    pub scope_ref: Option<String>,
    pub kind: String,
    pub key: Option<String>,
    pub value: Option<String>,
    pub body_text: Option<String>,
    pub author_ref: Option<String>,
    pub author_kind: String,
    pub status: String,
    pub visibility: String,
    pub evidence_refs: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The assertion this one replaces.
    pub supersedes: Option<String>,
}

/// The kind of the records `quarry judge` writes; no other writer may use it.
pub const JUDGMENT: &str = "judgment";

/// The statuses that record a judgment: a row holding one keeps it when written again.
pub const TERMINAL_STATUSES: &[&str] =
    &["accepted", "rejected", "deferred", "superseded", "deleted"];

/// The context policy of a claim that may be injected and needs no judgment.
pub const POLICY_TRUSTED: &str = r#"{"inject":true,"promotion_required":false}"#;
/// The context policy of a candidate: not injected, waiting for a judgment.
pub const POLICY_CANDIDATE: &str = r#"{"inject":false,"promotion_required":true}"#;
/// The context policy of a judged candidate: never injected, no judgment pending.
pub const POLICY_JUDGED: &str = r#"{"inject":false,"promotion_required":false}"#;

/// `status` when it is one of the closed vocabulary.
pub fn check_status(status: &str) -> Result<&'static str, AssertionError> {
    ASSERTION_STATUSES
        .iter()
        .find(|s| **s == status)
        .copied()
        .ok_or_else(|| AssertionError::UnknownStatus(status.to_string()))
}

pub(crate) fn short_hash(parts: &[&str]) -> String {
    let joined = parts.join("\u{1f}");
    let hex = blake3::hash(joined.as_bytes()).to_hex();
    hex.get(..16).unwrap_or_default().to_string()
}

/// Tags a session (idempotent: the same tag twice is one assertion). Returns the session id.
pub fn tag(
    conn: &mut Connection,
    session: &str,
    tag: &str,
    author: Option<&str>,
) -> Result<String, AssertionError> {
    let target = resolve_session(conn, session)?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut a = user_assertion(
        format!("tag-{}", short_hash(&[&target, tag])),
        &format!("session:{target}"),
        "tag",
        author,
        now,
    );
    a.key = Some("tag".into());
    a.value = Some(tag.to_string());
    upsert(conn, &[a])?;
    Ok(target)
}

/// An active, private assertion of `kind` by the user about `target`, with no key, value or body.
pub(crate) fn user_assertion(
    id: String,
    target: &str,
    kind: &str,
    author: Option<&str>,
    now: i64,
) -> Assertion {
    Assertion {
        assertion_id: id,
        target_ref: target.to_string(),
        scope_ref: None,
        kind: kind.to_string(),
        key: None,
        value: None,
        body_text: None,
        author_ref: author.map(str::to_string),
        author_kind: "user".into(),
        status: "active".into(),
        visibility: "private".into(),
        evidence_refs: "[]".into(),
        created_at_ms: now,
        updated_at_ms: now,
        supersedes: None,
    }
}

/// Adds a note to a session. Returns the assertion id.
pub fn note(
    conn: &mut Connection,
    session: &str,
    text: &str,
    author: Option<&str>,
) -> Result<String, AssertionError> {
    let target = resolve_session(conn, session)?;
    let now = chrono::Utc::now().timestamp_millis();
    let id = format!("note-{}", short_hash(&[&target, text, &now.to_string()]));
    let mut a = user_assertion(
        id.clone(),
        &format!("session:{target}"),
        "note",
        author,
        now,
    );
    a.body_text = Some(text.to_string());
    upsert(conn, &[a])?;
    Ok(id)
}

/// What an import wrote.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ImportSummary {
    /// Rows written.
    pub imported: usize,
    /// Of them, claims that landed as candidates awaiting judgment.
    pub candidates: usize,
    /// Of them, rows already judged that kept their judgment.
    pub kept_judgments: usize,
    /// Lines skipped, each with where and why.
    pub diagnostics: Vec<Diagnostic>,
}

/// Imports assertions from JSON Lines (one object per line with the table's columns;
/// `target_ref` and `kind` required; `author_kind` defaults to `import`, so the claims land as
/// candidates). Bad lines (a status outside the vocabulary among them) are reported and
/// skipped; good ones are written in one transaction.
pub fn import(
    conn: &mut Connection,
    path: &std::path::Path,
) -> Result<ImportSummary, AssertionError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AssertionError::Read(name.clone(), e))?;
    let mut diagnostics = Vec::new();
    let lines = crate::lines::read_lines(&name, &bytes, &mut diagnostics);
    let now = chrono::Utc::now().timestamp_millis();
    let mut rows = Vec::new();
    for line in lines {
        match assertion_from_json(&line.value, now) {
            Ok(a) => rows.push(a),
            Err(reason) => diagnostics.push(Diagnostic {
                file: name.clone(),
                line: Some(line.number),
                kind: "invalid_assertion",
                reason,
            }),
        }
    }
    let written = upsert(conn, &rows)?;
    Ok(ImportSummary {
        imported: rows.len(),
        candidates: written.iter().filter(|w| w.status == "candidate").count(),
        kept_judgments: written.iter().filter(|w| w.kept_judgment).count(),
        diagnostics,
    })
}

fn assertion_from_json(v: &Value, now: i64) -> Result<Assertion, String> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let target_ref = text("target_ref").ok_or("missing target_ref")?;
    let kind = text("kind").ok_or("missing kind")?;
    if kind == JUDGMENT {
        return Err("kind `judgment` is reserved for the records `quarry judge` writes".into());
    }
    let value = text("value");
    let body = text("body_text");
    let evidence = match v.get("evidence_refs") {
        None | Some(Value::Null) => "[]".to_string(),
        Some(Value::Array(a)) => Value::Array(a.clone()).to_string(),
        Some(_) => return Err("evidence_refs must be an array".into()),
    };
    let time = |k: &str| match v.get(k) {
        None | Some(Value::Null) => Ok(now),
        Some(t) => crate::text::json_time(Some(t)).ok_or(format!("{k} is not a time")),
    };
    let status = match text("status") {
        Some(s) => check_status(&s).map_err(|e| e.to_string())?.to_string(),
        None => "active".into(),
    };
    let created = time("created_at_ms")?;
    // The id of a claim without one is the same for the same claim, whichever form its
    // target takes.
    let target_ref = Ref::parse_or_session(&target_ref).canonical();
    Ok(Assertion {
        assertion_id: text("assertion_id").unwrap_or_else(|| {
            format!(
                "{kind}-{}",
                short_hash(&[
                    target_ref.strip_prefix("session:").unwrap_or(&target_ref),
                    value.as_deref().unwrap_or(""),
                    body.as_deref().unwrap_or("")
                ])
            )
        }),
        target_ref,
        scope_ref: text("scope_ref"),
        key: text("key"),
        value,
        body_text: body,
        author_ref: text("author_ref"),
        author_kind: text("author_kind").unwrap_or_else(|| "import".into()),
        status,
        visibility: text("visibility").unwrap_or_else(|| "private".into()),
        evidence_refs: evidence,
        created_at_ms: created,
        updated_at_ms: time("updated_at_ms").unwrap_or(created),
        supersedes: text("supersedes"),
        kind,
    })
}

/// What [`upsert`] stored of one row.
#[derive(Debug, Clone)]
pub struct Written {
    /// The row's id.
    pub assertion_id: String,
    /// The status it holds now.
    pub status: String,
    /// Whether it was already judged and kept that judgment.
    pub kept_judgment: bool,
}

/// Where a target is in the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The target as a canonical ref (a session named by its native id: by its session id).
    pub target_ref: String,
    /// The session it is or belongs to (a session ref's id even when the archive does not
    /// hold the session yet; `None` for an object the archive does not hold).
    pub session_id: Option<String>,
    /// The message it is or belongs to.
    pub message_id: Option<String>,
    /// Whether the archive holds what it names (always for a session ref, which names a
    /// session that may come later).
    pub found: bool,
}

impl Located {
    /// The staleness of a claim about it.
    pub fn staleness(&self) -> &'static str {
        if self.found {
            "current"
        } else {
            "target_missing"
        }
    }
}

/// Finds `target` (a ref; a bare id is a session's) in the archive.
pub fn locate(conn: &Connection, target: &str) -> Result<Located, AssertionError> {
    let r = Ref::parse_or_session(target);
    let Some(table) = r.kind.table() else {
        let own: Option<String> = conn
            .query_row(
                "SELECT session_id FROM sessions WHERE session_id = ?1 OR native_id = ?1
                 ORDER BY session_id = ?1 DESC, session_id LIMIT 1",
                [&r.id],
                |row| row.get(0),
            )
            .optional()?;
        let id = own.unwrap_or(r.id);
        return Ok(Located {
            target_ref: format!("session:{id}"),
            session_id: Some(id),
            message_id: None,
            found: true,
        });
    };
    let message = table.message.unwrap_or("NULL");
    let held: Option<(Option<String>, Option<String>)> = conn
        .query_row(
            &format!(
                "SELECT {}, {message} FROM {} WHERE {} = ?1",
                table.session, table.table, table.id
            ),
            [&r.id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    Ok(Located {
        target_ref: r.canonical(),
        found: held.is_some(),
        session_id: held.as_ref().and_then(|h| h.0.clone()),
        message_id: held.and_then(|h| h.1),
    })
}

/// The context policy of a row holding `status`: trusted when active, waiting when a
/// candidate, neither injected nor waiting otherwise.
fn policy_of(status: &str) -> &'static str {
    match status {
        "active" => POLICY_TRUSTED,
        "candidate" => POLICY_CANDIDATE,
        _ => POLICY_JUDGED,
    }
}

/// Writes assertions (inserting or updating by id), enforcing the lifecycle for every writer:
/// the status must be one of the vocabulary; a claim not written by a user (`author_kind` other
/// than `user`), tags aside, lands as a private candidate that is not injected and waits for a
/// judgment, unless its row already holds a judgment ([`TERMINAL_STATUSES`]), which it keeps
/// with its visibility and policy. A target is stored as a canonical ref with the session and
/// message it belongs to, and whether the archive holds it (`staleness`). Refreshes the
/// affected sessions' tags and bumps the generation, in one transaction.
pub fn upsert(conn: &mut Connection, rows: &[Assertion]) -> Result<Vec<Written>, AssertionError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let tx = conn.transaction()?;
    let written = upsert_in(&tx, rows)?;
    tx.commit()?;
    Ok(written)
}

/// [`upsert`] inside the caller's transaction.
pub(crate) fn upsert_in(
    tx: &rusqlite::Transaction<'_>,
    rows: &[Assertion],
) -> Result<Vec<Written>, AssertionError> {
    let mut written = Vec::with_capacity(rows.len());
    let mut tagged: Vec<String> = Vec::new();
    {
        let mut held = tx.prepare(
            "SELECT status, visibility, context_policy FROM assertions WHERE assertion_id = ?1",
        )?;
        // A target no longer found keeps the session and message it was last found in.
        let mut stmt = tx.prepare(
            "INSERT INTO assertions (assertion_id, target_ref, scope_ref, kind, key, value, body_text,
                author_ref, author_kind, status, visibility, evidence_refs, created_at_ms,
                updated_at_ms, session_id, message_id, supersedes, context_policy, staleness)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19)
             ON CONFLICT (assertion_id) DO UPDATE SET target_ref = excluded.target_ref,
               scope_ref = excluded.scope_ref, kind = excluded.kind, key = excluded.key,
               value = excluded.value, body_text = excluded.body_text, author_ref = excluded.author_ref,
               author_kind = excluded.author_kind, status = excluded.status,
               visibility = excluded.visibility, evidence_refs = excluded.evidence_refs,
               updated_at_ms = excluded.updated_at_ms,
               session_id = COALESCE(excluded.session_id, session_id),
               message_id = COALESCE(excluded.message_id, message_id),
               supersedes = excluded.supersedes, context_policy = excluded.context_policy,
               staleness = excluded.staleness, original_status = NULL",
        )?;
        for a in rows {
            check_status(&a.status)?;
            let at = locate(tx, &a.target_ref)?;
            let before: Option<(String, String, String)> = held
                .query_row([&a.assertion_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            let machine = a.author_kind != "user" && a.kind != "tag";
            let (status, visibility, policy, kept) = match before {
                Some((judged, visibility, policy))
                    if machine && TERMINAL_STATUSES.contains(&judged.as_str()) =>
                {
                    (judged, visibility, policy, true)
                }
                _ if machine || a.status == "candidate" => (
                    "candidate".to_string(),
                    "private".to_string(),
                    POLICY_CANDIDATE.to_string(),
                    false,
                ),
                _ => (
                    a.status.clone(),
                    a.visibility.clone(),
                    policy_of(&a.status).to_string(),
                    false,
                ),
            };
            stmt.execute(params![
                a.assertion_id,
                at.target_ref,
                a.scope_ref,
                a.kind,
                a.key,
                a.value,
                a.body_text,
                a.author_ref,
                a.author_kind,
                status,
                visibility,
                a.evidence_refs,
                a.created_at_ms,
                a.updated_at_ms,
                at.session_id,
                at.message_id,
                a.supersedes,
                policy,
                at.staleness()
            ])?;
            if a.kind == "tag"
                && let Some(s) = &at.session_id
                && !tagged.contains(s)
            {
                tagged.push(s.clone());
            }
            written.push(Written {
                assertion_id: a.assertion_id.clone(),
                status,
                kept_judgment: kept,
            });
        }
    }
    finish_write(tx, &tagged)?;
    Ok(written)
}

/// The end of every assertion write: refreshes the tags of `tagged` sessions, bumps the
/// generation and records the snapshot partitions it changed (the assertions table, and the
/// tagged sessions').
pub(crate) fn finish_write(
    tx: &rusqlite::Transaction<'_>,
    tagged: &[String],
) -> Result<(), AssertionError> {
    let mut refresh = tx.prepare(
        "UPDATE sessions SET tags = (SELECT COALESCE(json_group_array(value), '[]') FROM
            (SELECT DISTINCT value FROM assertions
             WHERE session_id = ?1 AND kind = 'tag' AND status = 'active' ORDER BY value))
         WHERE session_id = ?1",
    )?;
    for session in tagged {
        refresh.execute([session])?;
    }
    bump_generation(tx)?;
    tx.execute(RECORD_WHOLE_TABLE_CHANGE, [])?;
    let mut record = tx.prepare(RECORD_SESSION_CHANGE)?;
    for session in tagged {
        record.execute([session])?;
    }
    Ok(())
}

/// After a write of `sessions`' rows (new, grown, replaced or removed): sets `staleness` of
/// the claims about their objects (`current` when the object the target names is there,
/// `target_missing` when it is not), and finds the targets of claims written before the
/// archive held them. Claims about a session itself stay as they are. Returns how many rows
/// changed.
pub(crate) fn refresh_targets(
    conn: &Connection,
    sessions: &[&str],
) -> Result<usize, AssertionError> {
    let mut changed = 0;
    if !sessions.is_empty() {
        let exists: Vec<String> = quarry_schema::refs::KINDS
            .into_iter()
            .filter_map(|kind| {
                let table = kind.table()?;
                let prefix = format!("{}:", kind.name());
                Some(format!(
                    "WHEN o.target_ref GLOB '{prefix}*' THEN EXISTS (SELECT 1 FROM {} t \
                     WHERE t.{} = substr(o.target_ref, {}))",
                    table.table,
                    table.id,
                    prefix.len() + 1
                ))
            })
            .collect();
        let mut stmt = conn.prepare_cached(&format!(
            "UPDATE assertions SET staleness = s.now FROM
                (SELECT o.assertion_id AS id, CASE WHEN CASE {} ELSE 1 END THEN 'current'
                     ELSE 'target_missing' END AS now
                 FROM assertions o
                 WHERE o.session_id = ?1 AND o.target_ref NOT GLOB 'session:*') AS s
             WHERE assertions.assertion_id = s.id AND assertions.staleness <> s.now",
            exists.join(" ")
        ))?;
        // Only a session some claim names is looked at: the UPDATE opens a statement journal,
        // and with it the full-text index flushes what it holds of the open transaction.
        let mut claimed = conn.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM assertions
                            WHERE session_id = ?1 AND target_ref NOT GLOB 'session:*')",
        )?;
        for session in sessions {
            if claimed.query_row([session], |r| r.get::<_, bool>(0))? {
                changed += stmt.execute([session])?;
            }
        }
    }
    // Claims whose object the archive did not hold when they were written.
    let pending: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT assertion_id, target_ref FROM assertions
             WHERE session_id IS NULL AND target_ref NOT GLOB 'session:*'",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut found = conn.prepare_cached(
        "UPDATE assertions SET session_id = ?2, message_id = ?3, staleness = 'current'
         WHERE assertion_id = ?1",
    )?;
    for (id, target) in pending {
        let at = locate(conn, &target)?;
        if at.found {
            changed += found.execute(params![id, at.session_id, at.message_id])?;
        }
    }
    Ok(changed)
}
