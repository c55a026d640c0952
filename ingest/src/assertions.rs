//! Assertions' sources: `quarry tag`, `quarry note` and `quarry assertions import FILE.jsonl`.
//! Tags also appear in `sessions.tags`, refreshed here whenever a tag changes.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use quarry_archive::{RECORD_SESSION_CHANGE, RECORD_WHOLE_TABLE_CHANGE, bump_generation};

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

/// One assertion row.
#[derive(Debug, Clone)]
pub struct Assertion {
    pub assertion_id: String,
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
}

fn short_hash(parts: &[&str]) -> String {
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
        &target,
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
fn user_assertion(
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
    let mut a = user_assertion(id.clone(), &target, "note", author, now);
    a.body_text = Some(text.to_string());
    upsert(conn, &[a])?;
    Ok(id)
}

/// Imports assertions from JSON Lines (one object per line with the table's columns;
/// `target_ref` and `kind` required). Bad lines are reported and skipped; good ones are written
/// in one transaction. Returns (rows written, diagnostics).
pub fn import(
    conn: &mut Connection,
    path: &std::path::Path,
) -> Result<(usize, Vec<Diagnostic>), AssertionError> {
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
    upsert(conn, &rows)?;
    Ok((rows.len(), diagnostics))
}

fn assertion_from_json(v: &Value, now: i64) -> Result<Assertion, String> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let target_ref = text("target_ref").ok_or("missing target_ref")?;
    let kind = text("kind").ok_or("missing kind")?;
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
    let created = time("created_at_ms")?;
    Ok(Assertion {
        assertion_id: text("assertion_id").unwrap_or_else(|| {
            format!(
                "{kind}-{}",
                short_hash(&[
                    &target_ref,
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
        status: text("status").unwrap_or_else(|| "active".into()),
        visibility: text("visibility").unwrap_or_else(|| "private".into()),
        evidence_refs: evidence,
        created_at_ms: created,
        updated_at_ms: time("updated_at_ms").unwrap_or(created),
        kind,
    })
}

/// Inserts or replaces assertions, refreshes affected sessions' tags, bumps the generation.
pub fn upsert(conn: &mut Connection, rows: &[Assertion]) -> Result<(), AssertionError> {
    if rows.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare(
            "INSERT INTO assertions (assertion_id, target_ref, scope_ref, kind, key, value, body_text,
                author_ref, author_kind, status, visibility, evidence_refs, created_at_ms, updated_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT (assertion_id) DO UPDATE SET target_ref = excluded.target_ref,
               scope_ref = excluded.scope_ref, kind = excluded.kind, key = excluded.key,
               value = excluded.value, body_text = excluded.body_text, author_ref = excluded.author_ref,
               author_kind = excluded.author_kind, status = excluded.status,
               visibility = excluded.visibility, evidence_refs = excluded.evidence_refs,
               updated_at_ms = excluded.updated_at_ms",
        )?;
        for a in rows {
            stmt.execute(params![
                a.assertion_id,
                a.target_ref,
                a.scope_ref,
                a.kind,
                a.key,
                a.value,
                a.body_text,
                a.author_ref,
                a.author_kind,
                a.status,
                a.visibility,
                a.evidence_refs,
                a.created_at_ms,
                a.updated_at_ms
            ])?;
        }
        let mut refresh = tx.prepare(
            "UPDATE sessions SET tags = (SELECT COALESCE(json_group_array(value), '[]') FROM
                (SELECT DISTINCT value FROM assertions
                 WHERE target_ref = ?1 AND kind = 'tag' AND status = 'active' ORDER BY value))
             WHERE session_id = ?1",
        )?;
        for a in rows.iter().filter(|a| a.kind == "tag") {
            refresh.execute([&a.target_ref])?;
        }
    }
    bump_generation(&tx)?;
    // The snapshot partitions this changed: the assertions table, and the tagged sessions'.
    tx.execute(RECORD_WHOLE_TABLE_CHANGE, [])?;
    {
        let mut record = tx.prepare(RECORD_SESSION_CHANGE)?;
        for a in rows.iter().filter(|a| a.kind == "tag") {
            record.execute([&a.target_ref])?;
        }
    }
    tx.commit()?;
    Ok(())
}
