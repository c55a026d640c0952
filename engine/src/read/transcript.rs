//! A session as a readable transcript: its messages in order with their blocks (text, thinking,
//! tool calls and their results), each subagent's own transcript nested at the call that
//! delegated to it, and compactions marked where they happened. Pages of messages follow a
//! keyset cursor bound to the session (`next_cursor`).

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::{Reader, SessionHeader};
use crate::error::Error;

/// Messages on a page when none is asked for.
pub const DEFAULT_PAGE: usize = 200;
/// The largest page.
pub const MAX_PAGE: usize = 2000;
/// How deep subagents nest (a subagent's subagent's ...).
const MAX_DEPTH: usize = 4;

/// A transcript request.
#[derive(Debug, Clone, Default)]
pub struct TranscriptRequest {
    /// The session (a ref or an id, a native id or a unique prefix of one).
    pub session: String,
    /// Messages on the page (1 to [`MAX_PAGE`], default [`DEFAULT_PAGE`]); nested subagent
    /// transcripts are whole.
    pub page_size: Option<usize>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

/// One page of a session's transcript.
#[derive(Debug, Clone, Serialize)]
pub struct Transcript {
    /// The session's header.
    pub session: SessionHeader,
    /// Its messages on this page, in order.
    pub messages: Vec<TranscriptMessage>,
    /// Where the context was compacted (a summary replaced what came before).
    pub compactions: Vec<Compaction>,
    /// The next page, absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The archive generation the page was read at.
    pub generation: i64,
}

/// One message.
#[derive(Debug, Clone, Serialize)]
pub struct TranscriptMessage {
    /// Its id (`<session>/m<position>`).
    pub message_id: String,
    /// Its position in the session.
    pub position: i64,
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// When (epoch milliseconds).
    pub time: Option<i64>,
    /// The model that wrote it.
    pub model: Option<String>,
    /// Its blocks, in order.
    pub blocks: Vec<TranscriptBlock>,
}

/// One block of a message.
#[derive(Debug, Clone, Serialize)]
pub struct TranscriptBlock {
    /// Its position in the message.
    pub position: i64,
    /// `text`, `thinking`, `tool_use`, `tool_result`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Its text (masked for a reader).
    pub text: String,
    /// A tool call's or result's tool.
    pub tool_name: Option<String>,
    /// A shell call's command (masked for a reader).
    pub tool_command: Option<String>,
    /// The path a call names.
    pub tool_path: Option<String>,
    /// Whether a result reports a failure.
    pub is_error: Option<bool>,
    /// A result's exit code.
    pub exit_code: Option<i64>,
    /// The subagent this call delegated to, with its own transcript.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent: Option<Box<Subagent>>,
}

/// A hand-off at a tool call, and the subagent's own transcript when the archive holds it and
/// the scope sees it.
#[derive(Debug, Clone, Serialize)]
pub struct Subagent {
    /// The delegation's id.
    pub delegation_id: String,
    /// The subagent's session, when the source names it.
    pub child_session_id: Option<String>,
    /// The instruction handed over (masked for a reader).
    pub instruction: Option<String>,
    /// The subagent's transcript, whole.
    pub transcript: Option<Transcript>,
}

/// A compaction of the context.
#[derive(Debug, Clone, Serialize)]
pub struct Compaction {
    /// When.
    pub time: Option<i64>,
    /// The summary that replaced the context (masked for a reader).
    pub summary: String,
}

/// A tool call's delegation as a block row joins it: its id, the child session and the
/// instruction.
type Delegated = (String, Option<String>, Option<String>);

/// What a transcript cursor holds.
#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    /// The cursor format.
    v: u32,
    /// The session it pages.
    session: String,
    /// The last message position read.
    after: i64,
}

impl Reader {
    /// The page `request` asks for.
    pub(super) fn transcript(
        &self,
        conn: &Connection,
        request: &TranscriptRequest,
    ) -> Result<Transcript, Error> {
        let id = self.session_id(conn, &request.session)?;
        let size = request.page_size.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&size) {
            return Err(Error::BadRequest(format!(
                "page size {size} is out of range: ask for 1 to {MAX_PAGE} messages a page"
            )));
        }
        let after = match &request.cursor {
            None => -1,
            Some(token) => {
                let cursor: Cursor = crate::token::decode(token)
                    .filter(|c: &Cursor| c.v == 1)
                    .ok_or_else(|| {
                        Error::InvalidCursor(
                            "the cursor is not one quarry wrote: pass `next_cursor` back unchanged"
                                .into(),
                        )
                    })?;
                if cursor.session != id {
                    return Err(Error::InvalidCursor(format!(
                        "the cursor pages `{}`, not `{id}`",
                        cursor.session
                    )));
                }
                cursor.after
            }
        };
        let mut page = self.session_transcript(conn, &id, after, Some(size), 0)?;
        page.generation = self.generation(conn)?;
        Ok(page)
    }

    /// Session `id`'s messages after position `after` (`limit` of them, or all), subagents
    /// nested to [`MAX_DEPTH`].
    fn session_transcript(
        &self,
        conn: &Connection,
        id: &str,
        after: i64,
        limit: Option<usize>,
        depth: usize,
    ) -> Result<Transcript, Error> {
        let failed = |e| self.failed(e);
        let session = self
            .header(conn, id)?
            .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
        let mask = |text: String| -> String {
            if self.visible.is_some() {
                quarry_udf::mask_credentials(&text).into_owned()
            } else {
                text
            }
        };
        // One more than the page tells whether there is a next one.
        let take = limit.map_or(i64::MAX, |l| l as i64 + 1);
        let hidden = if self.visible.is_some() {
            " AND NOT hidden"
        } else {
            ""
        };
        let mut messages: Vec<TranscriptMessage> = conn
            .prepare_cached(&format!(
                "SELECT message_id, position, role, occurred_at_ms, model FROM messages \
                 WHERE session_id = ?1 AND position > ?2{hidden} ORDER BY position LIMIT ?3"
            ))
            .and_then(|mut s| {
                s.query_map(params![id, after, take], |r| {
                    Ok(TranscriptMessage {
                        message_id: r.get(0)?,
                        position: r.get(1)?,
                        role: r.get(2)?,
                        time: r.get(3)?,
                        model: r.get(4)?,
                        blocks: Vec::new(),
                    })
                })?
                .collect()
            })
            .map_err(failed)?;
        let more = limit.is_some_and(|l| messages.len() > l);
        if let Some(l) = limit {
            messages.truncate(l);
        }
        let mut blocks = conn
            .prepare_cached(
                "SELECT b.position, b.type, b.text, b.tool_name, b.tool_command, b.tool_path, \
                 b.is_error, b.exit_code, d.delegation_id, d.child_session_id, d.instruction \
                 FROM blocks b LEFT JOIN delegations d ON b.type = 'tool_use' \
                 AND d.parent_session_id = b.session_id AND d.delegation_id = b.session_id || '/' || b.tool_id \
                 WHERE b.session_id = ?1 AND b.message_id = ?2 ORDER BY b.position",
            )
            .map_err(failed)?;
        for message in &mut messages {
            let rows: Vec<(TranscriptBlock, Option<Delegated>)> = blocks
                .query_map(params![id, message.message_id], |r| {
                    let delegation: Option<String> = r.get(8)?;
                    Ok((
                        TranscriptBlock {
                            position: r.get(0)?,
                            kind: r.get(1)?,
                            text: r.get(2)?,
                            tool_name: r.get(3)?,
                            tool_command: r.get(4)?,
                            tool_path: r.get(5)?,
                            is_error: r.get(6)?,
                            exit_code: r.get(7)?,
                            subagent: None,
                        },
                        match delegation {
                            Some(d) => Some((d, r.get(9)?, r.get(10)?)),
                            None => None,
                        },
                    ))
                })
                .and_then(Iterator::collect)
                .map_err(failed)?;
            for (mut block, delegation) in rows {
                block.text = mask(block.text);
                block.tool_command = block.tool_command.map(mask);
                if let Some((delegation_id, child, instruction)) = delegation {
                    let transcript = match &child {
                        Some(child) if depth < MAX_DEPTH && self.sees(child) => {
                            match self.session_transcript(conn, child, -1, None, depth + 1) {
                                Ok(t) => Some(t),
                                Err(Error::SessionNotFound(_)) => None,
                                Err(e) => return Err(e),
                            }
                        }
                        _ => None,
                    };
                    block.subagent = Some(Box::new(Subagent {
                        delegation_id,
                        child_session_id: child,
                        instruction: instruction.map(mask),
                        transcript,
                    }));
                }
                message.blocks.push(block);
            }
        }
        let compactions = conn
            .prepare_cached(
                "SELECT occurred_at_ms, text FROM context_snapshots \
                 WHERE session_id = ?1 AND boundary = 'compaction' ORDER BY occurred_at_ms",
            )
            .and_then(|mut s| {
                s.query_map([id], |r| {
                    Ok(Compaction {
                        time: r.get(0)?,
                        summary: r.get(1)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()
            })
            .map_err(failed)?
            .into_iter()
            .map(|c| Compaction {
                summary: mask(c.summary),
                ..c
            })
            .collect();
        let next_cursor = match (more, messages.last()) {
            (true, Some(last)) => Some(crate::token::encode(&Cursor {
                v: 1,
                session: id.to_string(),
                after: last.position,
            })),
            _ => None,
        };
        Ok(Transcript {
            session,
            messages,
            compactions,
            next_cursor,
            generation: 0,
        })
    }
}

/// A transcript as text for a terminal (`markdown`: as Markdown): each message under its role
/// and time, tool calls and results on their own lines, thinking collapsed to its length unless
/// `thinking`, subagents indented under the call that started them, compactions marked.
pub fn render(transcript: &Transcript, markdown: bool, thinking: bool) -> String {
    let mut out = String::new();
    let title = transcript.session.title.as_deref().unwrap_or("untitled");
    if markdown {
        out.push_str(&format!(
            "# {title}\n\n`{}`\n\n",
            transcript.session.session_id
        ));
    } else {
        out.push_str(&format!("{} — {title}\n\n", transcript.session.session_id));
    }
    write_messages(&mut out, transcript, 0, markdown, thinking);
    if let Some(cursor) = &transcript.next_cursor {
        out.push_str(&format!("\n(more: --cursor {cursor})\n"));
    }
    out
}

fn write_messages(out: &mut String, t: &Transcript, depth: usize, markdown: bool, thinking: bool) {
    let pad = if markdown {
        "> ".repeat(depth)
    } else {
        "    ".repeat(depth)
    };
    let line = |out: &mut String, text: &str| {
        for l in text.lines() {
            out.push_str(&format!("{pad}{l}\n"));
        }
        if text.is_empty() {
            out.push_str(&format!("{pad}\n"));
        }
    };
    let mut compactions = t.compactions.iter().peekable();
    for message in &t.messages {
        while let Some(c) = compactions.next_if(|c| c.time <= message.time) {
            let first = c.summary.lines().next().unwrap_or("");
            line(out, &format!("──── context compacted: {first}"));
        }
        let time = message
            .time
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map_or(String::new(), |t| {
                t.format(" %Y-%m-%d %H:%M:%S").to_string()
            });
        if markdown {
            line(
                out,
                &format!("**{}**{time} `m{}`", message.role, message.position),
            );
        } else {
            line(
                out,
                &format!("[m{}] {}{time}", message.position, message.role),
            );
        }
        for block in &message.blocks {
            match block.kind.as_str() {
                "thinking" if !thinking => line(
                    out,
                    &format!(
                        "  ▸ thinking ({} words)",
                        block.text.split_whitespace().count()
                    ),
                ),
                "tool_use" => {
                    let what = block
                        .tool_command
                        .as_deref()
                        .or(block.tool_path.as_deref())
                        .unwrap_or("");
                    line(
                        out,
                        &format!(
                            "  ⚙ {} {}",
                            block.tool_name.as_deref().unwrap_or("tool"),
                            what.lines().next().unwrap_or("")
                        ),
                    );
                    if let Some(sub) = &block.subagent {
                        let who = sub
                            .child_session_id
                            .as_deref()
                            .unwrap_or("(not in the archive)");
                        line(out, &format!("  ↳ subagent {who}"));
                        if let Some(child) = &sub.transcript {
                            write_messages(out, child, depth + 1, markdown, thinking);
                        }
                    }
                }
                "tool_result" => {
                    let status = if block.is_error == Some(true) {
                        " (error)"
                    } else {
                        ""
                    };
                    let first = block.text.lines().next().unwrap_or("");
                    let more = block.text.lines().count().saturating_sub(1);
                    let tail = if more > 0 {
                        format!(" … ({more} more lines)")
                    } else {
                        String::new()
                    };
                    line(out, &format!("  → result{status}: {first}{tail}"));
                }
                _ if block.text.trim().is_empty() => {}
                _ => {
                    if markdown {
                        line(out, &block.text);
                    } else {
                        for l in block.text.lines() {
                            line(out, &format!("  {l}"));
                        }
                    }
                }
            }
        }
        line(out, "");
    }
    for c in compactions {
        let first = c.summary.lines().next().unwrap_or("");
        line(out, &format!("──── context compacted: {first}"));
    }
}
