//! Bounded event reads (`../shared/spec/session-query.md` § Bounded event reads): a window of
//! a session's source records around one, each with the messages and blocks it produced.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::{Reader, SessionHeader, resolve, run};
use crate::engine::Session;
use crate::error::Error;

/// The most neighbouring events a window takes on either side.
pub const MAX_NEIGHBOURS: i64 = 200;

/// One source record of a session (the spec's `SessionEvent`, in quarry's fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEvent {
    /// Its 0-based order among the session's records.
    pub seq: i64,
    /// The record type (`user`, `assistant`, `system/compact_boundary`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its time (epoch milliseconds).
    pub time: Option<i64>,
    /// `current`, `shadowed` or `log-only`.
    pub surface: String,
    /// The turn it falls in.
    pub turn_id: Option<String>,
    /// The raw record (`None` for a reader scope, which never sees raw payloads).
    pub payload: Option<serde_json::Value>,
    /// The messages read from the record, their text bounded (and masked for a reader).
    pub messages: Vec<EventMessage>,
}

/// A message a record produced, as a window shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventMessage {
    /// Its id.
    pub message_id: String,
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// Its blocks, in order.
    pub blocks: Vec<EventBlock>,
}

/// A block of a message a record produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventBlock {
    /// `text`, `thinking`, `tool_use`, `tool_result`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// A tool call's or result's tool.
    pub tool_name: Option<String>,
    /// Its text (a tool call's: its command or path), at most [`resolve::MAX_WINDOW_EXCERPT`]
    /// characters (masked for a reader).
    pub text: String,
    /// Whether the text was cut.
    pub truncated: bool,
}

/// The surfaces a record can be on.
pub const SURFACES: [&str; 3] = ["current", "shadowed", "log-only"];

/// A bounded read around one event (the spec's `SessionEventWindow`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventWindow {
    /// The session's header, from the same observation.
    pub session: SessionHeader,
    /// The target event, whole.
    pub target: SessionEvent,
    /// The events from `start_seq` through `end_seq`, the target among them.
    pub events: Vec<SessionEvent>,
    /// The first seq in `events`.
    pub start_seq: i64,
    /// The last seq in `events`.
    pub end_seq: i64,
    /// The archive generation the observation is of.
    pub generation: i64,
}

/// A window request: one event of a session and how many neighbours on each side.
#[derive(Debug, Clone)]
pub struct WindowRequest {
    /// The session (a ref or an id, a native id or a unique prefix of one).
    pub session: String,
    /// The target record: its seq, or a message of the session (the record it was read from).
    pub around: Around,
    /// Preceding events (0 to [`MAX_NEIGHBOURS`]).
    pub before: i64,
    /// Following events (0 to [`MAX_NEIGHBOURS`]).
    pub after: i64,
    /// Only records on these surfaces (of [`SURFACES`]; empty: all); the bounds stay the
    /// window's.
    pub surfaces: Vec<String>,
}

/// What a window is around, as a caller writes it: a seq, or a message (`message:ID` or an id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Around {
    /// A record's seq.
    Seq(i64),
    /// A message of the session: the record it was read from.
    Message(String),
}

impl Around {
    /// A number is a seq; anything else names a message.
    pub fn parse(text: &str) -> Around {
        match text.trim().parse() {
            Ok(seq) => Around::Seq(seq),
            Err(_) => Around::Message(text.trim().to_string()),
        }
    }
}

impl std::fmt::Display for Around {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Around::Seq(seq) => write!(f, "{seq}"),
            Around::Message(message) => write!(f, "{message}"),
        }
    }
}

/// The window `request` asks for, in `session`'s scope, audited.
pub async fn window(session: &Session, request: &WindowRequest) -> Result<EventWindow, Error> {
    let text = format!(
        "read {} --around {} --before {} --after {}",
        request.session, request.around, request.before, request.after
    );
    let rows = |w: &EventWindow| w.events.len();
    run(session, &text, rows, request.clone(), Reader::window).await
}

impl Reader {
    fn window(&self, conn: &Connection, request: &WindowRequest) -> Result<EventWindow, Error> {
        for (name, n) in [("before", request.before), ("after", request.after)] {
            if !(0..=MAX_NEIGHBOURS).contains(&n) {
                return Err(Error::InvalidWindow(format!(
                    "--{name} {n} is out of range: a window takes 0 to {MAX_NEIGHBOURS} events on each side"
                )));
            }
        }
        if let Some(bad) = request
            .surfaces
            .iter()
            .find(|s| !SURFACES.contains(&s.as_str()))
        {
            return Err(Error::InvalidSurface(format!(
                "`{bad}` is not a surface: use {}",
                SURFACES.join(", ")
            )));
        }
        let id = self.session_id(conn, &request.session)?;
        let session = self
            .header(conn, &id)?
            .ok_or_else(|| Error::SessionNotFound(id.clone()))?;
        let seq = match &request.around {
            Around::Seq(seq) => *seq,
            Around::Message(message) => self.message_seq(conn, &id, message)?,
        };
        let (start, end) = (
            seq.saturating_sub(request.before),
            seq.saturating_add(request.after),
        );
        // A reader reads what its catalog holds: the `events` view (records of committed
        // turns), without payloads; the admin every record, whole.
        let (table, payload) = if self.visible.is_none() {
            ("events_raw", "payload")
        } else {
            ("events", "NULL")
        };
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT seq, type, time, surface, turn_id, {payload} FROM {table} \
                 WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) \
                 AND seq BETWEEN ?2 AND ?3 ORDER BY seq"
            ))
            .map_err(|e| self.failed(e))?;
        let events: Vec<SessionEvent> = stmt
            .query_map(params![id, start, end], |r| {
                let payload: Option<String> = r.get(5)?;
                Ok(SessionEvent {
                    seq: r.get(0)?,
                    kind: r.get(1)?,
                    time: r.get(2)?,
                    surface: r.get(3)?,
                    turn_id: r.get(4)?,
                    payload: payload.and_then(|p| serde_json::from_str(&p).ok()),
                    messages: Vec::new(),
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.failed(e))?;
        let mut events = events;
        self.attach_messages(conn, &id, start, end, &mut events)?;
        let target = events
            .iter()
            .find(|e| e.seq == seq)
            .cloned()
            .ok_or_else(|| Error::EventNotFound {
                session: id.clone(),
                seq,
            })?;
        let start_seq = events.first().map_or(seq, |e| e.seq);
        let end_seq = events.last().map_or(seq, |e| e.seq);
        if !request.surfaces.is_empty() {
            events.retain(|e| request.surfaces.contains(&e.surface));
        }
        Ok(EventWindow {
            session,
            target,
            start_seq,
            end_seq,
            events,
            generation: self.generation(conn)?,
        })
    }

    /// The seq of the record message `message` of session `id` was read from. A message of
    /// another session, or one the scope does not see, is `not_found` as one that does not
    /// exist; a message whose record is not known (an export archived before schema version 5
    /// and not read since) is `event_not_found`.
    fn message_seq(&self, conn: &Connection, id: &str, message: &str) -> Result<i64, Error> {
        let message = message.strip_prefix("message:").unwrap_or(message);
        let found: Option<(Option<i64>, bool)> = conn
            .prepare_cached(
                "SELECT event_seq, hidden FROM messages WHERE message_id = ?1 \
                 AND session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?2)",
            )
            .and_then(|mut s| {
                s.query_row(params![message, id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.failed(e))?;
        match found {
            Some((seq, hidden)) if !(hidden && self.visible.is_some()) => {
                seq.ok_or_else(|| Error::EventNotFound {
                    session: id.to_string(),
                    seq: -1,
                })
            }
            _ => Err(Error::NotFound(format!(
                "no message `{message}` in session `{id}` in this scope"
            ))),
        }
    }

    /// Gives each record of `events` (seqs `start` to `end`) the messages read from it with
    /// their blocks, texts bounded and, for a reader, masked (hidden messages left out).
    fn attach_messages(
        &self,
        conn: &Connection,
        id: &str,
        start: i64,
        end: i64,
        events: &mut [SessionEvent],
    ) -> Result<(), Error> {
        let hidden = if self.visible.is_some() {
            " AND NOT m.hidden"
        } else {
            ""
        };
        // The messages read from the window's records, then their blocks (the session's, read
        // by its index, kept for those messages).
        let messages: Vec<(i64, String, String)> = conn
            .prepare_cached(&format!(
                "SELECT m.event_seq, m.message_id, m.role FROM messages m \
                 WHERE m.session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) \
                 AND m.event_seq BETWEEN ?2 AND ?3{hidden} \
                 ORDER BY m.position"
            ))
            .and_then(|mut s| {
                s.query_map(params![id, start, end], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect()
            })
            .map_err(|e| self.failed(e))?;
        if messages.is_empty() {
            return Ok(());
        }
        let wanted: HashSet<&str> = messages.iter().map(|(_, m, _)| m.as_str()).collect();
        let mut blocks: std::collections::HashMap<String, Vec<EventBlock>> =
            std::collections::HashMap::new();
        let failed = |e| self.failed(e);
        let mut stmt = conn
            .prepare_cached(
                "SELECT message_id, type, COALESCE(NULLIF(text, ''), tool_command, tool_path, ''), \
                 tool_name FROM blocks WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) \
                 ORDER BY message_id, position",
            )
            .map_err(failed)?;
        let mut rows = stmt.query([id]).map_err(failed)?;
        while let Some(r) = rows.next().map_err(failed)? {
            let message: String = r.get(0).map_err(failed)?;
            if !wanted.contains(message.as_str()) {
                continue;
            }
            let text: String = r.get(2).map_err(failed)?;
            let text = if self.visible.is_some() {
                quarry_udf::mask_credentials(&text).into_owned()
            } else {
                text
            };
            let excerpt = resolve::Excerpt::of(&text, resolve::MAX_WINDOW_EXCERPT);
            blocks.entry(message).or_default().push(EventBlock {
                kind: r.get(1).map_err(failed)?,
                tool_name: r.get(3).map_err(failed)?,
                text: excerpt.text,
                truncated: excerpt.truncated,
            });
        }
        for (seq, message_id, role) in messages {
            let Some(event) = events.iter_mut().find(|e| e.seq == seq) else {
                continue;
            };
            let blocks = blocks.remove(&message_id).unwrap_or_default();
            event.messages.push(EventMessage {
                message_id,
                role,
                blocks,
            });
        }
        Ok(())
    }
}

/// A window as lines: the session, then one line per record (the target marked `>`).
pub fn render_window(window: &EventWindow) -> String {
    let mut out = format!(
        "{} — {} (records {}–{}, generation {})\n",
        window.session.session_id,
        window.session.title.as_deref().unwrap_or("untitled"),
        window.start_seq,
        window.end_seq,
        window.generation
    );
    for event in &window.events {
        let mark = if event.seq == window.target.seq {
            ">"
        } else {
            " "
        };
        out.push_str(&format!(
            "{mark} {:>6}  {:<9} {}  {}\n",
            event.seq,
            event.surface,
            event.time.map_or("-".to_string(), |t| {
                chrono::DateTime::from_timestamp_millis(t).map_or(t.to_string(), |t| {
                    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
                })
            }),
            event.kind
        ));
        for m in &event.messages {
            for b in &m.blocks {
                let line = b.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let short: String = line.chars().take(90).collect();
                let cut = if short.len() < line.len() || b.text.lines().count() > 1 {
                    " …"
                } else {
                    ""
                };
                let tool = b
                    .tool_name
                    .as_deref()
                    .map_or(String::new(), |t| format!(" {t}"));
                out.push_str(&format!(
                    "            {} {}{tool}: {short}{cut}\n",
                    m.role, b.kind
                ));
            }
        }
    }
    out
}
