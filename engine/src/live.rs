//! What changed in the archive since a generation, as one scope sees it: the feed behind
//! `GET /api/live`. A writer (`quarry watch`, an ingest) moves the archive's generation with
//! every file it writes and records that generation on the file (`source_files.generation`);
//! the sessions of the files written after a generation are the ones that changed since. Which
//! of them a caller is told about is decided by a query in the caller's own scope, so a reader
//! hears only of sessions it sees, and nothing of the others (not even that they changed).

use serde::Serialize;

use crate::api::Session;
use crate::error::Error;

/// More than this many changed sessions the scope sees: the feed says `reload` instead of
/// listing them.
pub const MAX_LISTED: usize = 500;

/// The changed sessions are narrowed by the scope in groups of this many ids.
const CHUNK: usize = 1000;

/// What changed since a generation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changes {
    /// The archive's generation the changes are as of.
    pub generation: i64,
    /// The changed sessions the scope sees, newest first.
    pub sessions: Vec<LiveSession>,
    /// More than [`MAX_LISTED`] sessions changed: the caller should read afresh.
    pub reload: bool,
}

/// One changed session, as its scope sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveSession {
    /// Its id.
    pub session_id: String,
    /// Its title.
    pub title: Option<String>,
    /// Its origin.
    pub origin: String,
    /// When it was last written to (epoch ms).
    pub updated_at: Option<i64>,
    /// Its messages.
    pub messages: i64,
    /// Its turns.
    pub turns: i64,
    /// Its committed turns (what `events` shows).
    pub committed_turns: i64,
}

/// The sessions written after generation `since` that `session`'s scope sees.
pub async fn changes(session: &Session, since: i64) -> Result<Changes, Error> {
    let generation = session.archive_generation()?;
    if generation <= since {
        return Ok(Changes {
            generation,
            sessions: Vec::new(),
            reload: false,
        });
    }
    let written = session.sessions_written_after(since, usize::MAX).await?;
    // In the caller's scope, a group of ids at a time: a session it does not see is not there,
    // and how many others changed is not told (`reload` counts only what the scope sees).
    let mut sessions = Vec::new();
    for group in written.chunks(CHUNK) {
        sessions.extend(visible(session, group).await?);
        if sessions.len() > MAX_LISTED {
            return Ok(Changes {
                generation,
                sessions: Vec::new(),
                reload: true,
            });
        }
    }
    sessions.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    Ok(Changes {
        generation,
        sessions,
        reload: false,
    })
}

/// Those of `ids` the session's scope sees, with their counts.
async fn visible(session: &Session, ids: &[String]) -> Result<Vec<LiveSession>, Error> {
    let ids = ids
        .iter()
        .map(|id| format!("'{}'", id.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    let (_, rows) = session
        .sql_rows(&format!(
            "SELECT s.session_id, s.title, s.origin, s.updated_at, s.message_count,
                    COUNT(t.turn_id), SUM(CASE WHEN t.committed THEN 1 ELSE 0 END)
             FROM sessions s LEFT JOIN turns t ON t.session_id = s.session_id
             WHERE s.session_id IN ({ids})
             GROUP BY s.session_id, s.title, s.origin, s.updated_at, s.message_count"
        ))
        .await?;
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_string);
    let number = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_i64);
    let time = |v: Option<&serde_json::Value>| {
        v.and_then(|v| {
            v.as_i64().or_else(|| {
                v.as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.timestamp_millis())
            })
        })
    };
    Ok(rows
        .iter()
        .map(|r| LiveSession {
            session_id: text(r.first()).unwrap_or_default(),
            title: text(r.get(1)),
            origin: text(r.get(2)).unwrap_or_default(),
            updated_at: time(r.get(3)),
            messages: number(r.get(4)).unwrap_or(0),
            turns: number(r.get(5)).unwrap_or(0),
            committed_turns: number(r.get(6)).unwrap_or(0),
        })
        .collect())
}
