//! A session as a readable transcript: its messages in order with their blocks (text, thinking,
//! tool calls and their results), each subagent's own transcript nested at the call that
//! delegated to it, and compactions marked where they happened. Pages of messages follow a
//! keyset cursor bound to the session and its replacement epoch (`next_cursor`): a session that
//! grows keeps its cursors, one whose rows were replaced since (`--replace`, a re-read export,
//! `quarry reindex`) answers `stale_cursor`.

use std::collections::{HashMap, HashSet};

use quarry_archive::SESSION_NUM_OF;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Reader, SessionHeader};
use crate::error::Error;

/// Messages on a page when none is asked for.
pub const DEFAULT_PAGE: usize = 200;
/// The largest page.
pub const MAX_PAGE: usize = 2000;
/// Messages shown on each side of one in its context.
pub const CONTEXT: i64 = 3;
/// The cursor format (2: bound to the replacement epoch too).
const CURSOR_VERSION: u32 = 2;
/// How deep subagents nest (a subagent's subagent's ...).
const MAX_DEPTH: usize = 4;
/// The most messages of nested subagent transcripts one page holds.
pub const NESTED_BUDGET: usize = 20_000;

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
    /// The message the page is about, when it shows one message in its context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
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
    /// Why `transcript` is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
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
    /// The session's replacement epoch when the cursor was written.
    epoch: i64,
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
            return Err(Error::InvalidLimit(format!(
                "page size {size} is out of range: ask for 1 to {MAX_PAGE} messages a page"
            )));
        }
        let after = match &request.cursor {
            None => -1,
            Some(token) => {
                let cursor: Cursor = crate::token::decode(token)
                    .filter(|c: &Cursor| c.v == CURSOR_VERSION)
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
                let epoch = self
                    .header(conn, &id)?
                    .ok_or_else(|| Error::SessionNotFound(id.clone()))?
                    .replacement_epoch;
                if cursor.epoch != epoch {
                    return Err(Error::StaleCursor(format!(
                        "`{id}` was replaced since this cursor was written (at generation {epoch}: a re-read with --replace, a re-exported document or `quarry reindex`): read it again from the first page"
                    )));
                }
                cursor.after
            }
        };
        let mut nesting = Nesting {
            chain: Vec::new(),
            shown: HashSet::new(),
            budget: NESTED_BUDGET,
            generation: self.generation(conn)?,
        };
        self.session_transcript(conn, &id, after, Some(size), &mut nesting)
    }

    /// The message (or the message of the block) `reference` names, with [`CONTEXT`] messages
    /// on each side: a page of its session's transcript with `focus` set. A message the scope
    /// does not see (its session unseen, or hidden from a reader) is the same `not_found` as one
    /// that does not exist.
    pub(super) fn context(&self, conn: &Connection, reference: &str) -> Result<Transcript, Error> {
        let parsed = super::Ref::parse(reference);
        // Ids hold their session (`<session>/m<n>`, `<message>/b<n>`): each lookup reads the
        // session's rows by its index.
        let parsed_kind = parsed.as_ref().map(|r| r.kind);
        let sql = match parsed_kind {
            Some(super::RefKind::Message) => {
                "SELECT session_id, message_id, position, hidden FROM messages \
                 WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?2) AND message_id = ?1"
            }
            Some(super::RefKind::Block) => {
                "SELECT m.session_id, m.message_id, m.position, m.hidden FROM blocks b \
                 JOIN messages m ON m.session_num = b.session_num AND m.message_id = b.message_id \
                 WHERE b.session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?2) AND b.block_id = ?1"
            }
            _ => {
                return Err(Error::BadRequest(format!(
                    "`{reference}` is not a `message:` or `block:` ref: only a message or a block is shown in its context"
                )));
            }
        };
        let id = parsed.map(|r| r.id).unwrap_or_default();
        let message_of_block = |id: &str| id.rsplit_once("/b").map(|(m, _)| m.to_string());
        let message = match parsed_kind {
            Some(super::RefKind::Block) => message_of_block(&id).unwrap_or_default(),
            _ => id.clone(),
        };
        let owner = message
            .rsplit_once("/m")
            .map_or(String::new(), |(session, _)| session.to_string());
        let found: Option<(String, String, i64, bool)> = conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                s.query_row([&id, &owner], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()
            })
            .map_err(|e| self.failed(e))?;
        let (session, message, position) = match found {
            Some((session, message, position, hidden))
                if self.sees(&session) && !(hidden && self.visible.is_some()) =>
            {
                (session, message, position)
            }
            _ => return Err(Error::NotFound(format!("no `{reference}` in this scope"))),
        };
        let mut nesting = Nesting {
            chain: Vec::new(),
            shown: HashSet::new(),
            budget: NESTED_BUDGET,
            generation: self.generation(conn)?,
        };
        let after = position - CONTEXT - 1;
        let mut page = self.session_transcript(
            conn,
            &session,
            after,
            Some((2 * CONTEXT + 1) as usize),
            &mut nesting,
        )?;
        page.focus = Some(message);
        Ok(page)
    }

    /// Session `id`'s messages after position `after` (`limit` of them, or all), subagents
    /// nested as [`Nesting`] allows.
    fn session_transcript(
        &self,
        conn: &Connection,
        id: &str,
        after: i64,
        limit: Option<usize>,
        nesting: &mut Nesting,
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
                 WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) \
                 AND position > ?2{hidden} ORDER BY position LIMIT ?3"
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
        // The session's blocks in one read, each delegating call with its one delegation (a
        // resolved one first, should the source record the call twice).
        let mut blocks: HashMap<String, Vec<(TranscriptBlock, Option<Delegated>)>> = HashMap::new();
        if !messages.is_empty() {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT b.message_id, b.position, b.type, b.text, b.tool_name, b.tool_command, \
                     b.tool_path, b.is_error, b.exit_code, d.delegation_id, d.child_session_id, \
                     d.instruction FROM blocks b LEFT JOIN delegations d ON d.rowid = ( \
                       SELECT rowid FROM delegations WHERE b.type = 'tool_use' \
                       AND parent_session_id = b.session_id \
                       AND delegation_id = b.session_id || '/' || b.tool_id \
                       ORDER BY mapping_state = 'resolved' DESC, rowid LIMIT 1) \
                     WHERE b.session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) \
                     ORDER BY b.message_id, b.position",
                )
                .map_err(failed)?;
            let wanted: HashSet<&str> = messages.iter().map(|m| m.message_id.as_str()).collect();
            let mut rows = stmt.query([id]).map_err(failed)?;
            while let Some(r) = rows.next().map_err(failed)? {
                let message: String = r.get(0).map_err(failed)?;
                if !wanted.contains(message.as_str()) {
                    continue;
                }
                let block = (|| -> rusqlite::Result<(TranscriptBlock, Option<Delegated>)> {
                    let delegation: Option<String> = r.get(9)?;
                    Ok((
                        TranscriptBlock {
                            position: r.get(1)?,
                            kind: r.get(2)?,
                            text: r.get(3)?,
                            tool_name: r.get(4)?,
                            tool_command: r.get(5)?,
                            tool_path: r.get(6)?,
                            is_error: r.get(7)?,
                            exit_code: r.get(8)?,
                            subagent: None,
                        },
                        match delegation {
                            Some(d) => Some((d, r.get(10)?, r.get(11)?)),
                            None => None,
                        },
                    ))
                })()
                .map_err(failed)?;
                blocks.entry(message).or_default().push(block);
            }
        }
        nesting.chain.push(id.to_string());
        for message in &mut messages {
            for (mut block, delegation) in blocks.remove(&message.message_id).unwrap_or_default() {
                block.text = mask(block.text);
                block.tool_command = block.tool_command.map(mask);
                if let Some((delegation_id, child, instruction)) = delegation {
                    let (transcript, omitted) = match &child {
                        Some(child) if self.sees(child) => self.nested(conn, child, nesting)?,
                        Some(_) => (None, Some(Omitted::NotInArchive)),
                        None => (None, Some(Omitted::NotNamed)),
                    };
                    block.subagent = Some(Box::new(Subagent {
                        delegation_id,
                        child_session_id: child,
                        instruction: instruction.map(mask),
                        transcript,
                        omitted,
                    }));
                }
                message.blocks.push(block);
            }
        }
        nesting.chain.pop();
        // The compactions that happened within the page: after the previous page's last
        // message, up to this page's last (the last page takes the rest).
        let since = match after {
            -1 => None,
            _ => conn
                .prepare_cached(
                    "SELECT occurred_at_ms FROM messages \
                     WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) AND position = ?2",
                )
                .and_then(|mut s| s.query_row(params![id, after], |r| r.get::<_, Option<i64>>(0)))
                .optional()
                .map_err(failed)?
                .flatten(),
        };
        let until = if more {
            messages.last().and_then(|m| m.time)
        } else {
            None
        };
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
            .filter(|c| {
                since.is_none_or(|s| c.time.is_some_and(|t| t > s))
                    && until.is_none_or(|u| c.time.is_none_or(|t| t <= u))
            })
            .map(|c| Compaction {
                summary: mask(c.summary),
                ..c
            })
            .collect();
        let next_cursor = match (more, messages.last()) {
            (true, Some(last)) => Some(crate::token::encode(&Cursor {
                v: CURSOR_VERSION,
                session: id.to_string(),
                epoch: session.replacement_epoch,
                after: last.position,
            })),
            _ => None,
        };
        Ok(Transcript {
            session,
            messages,
            compactions,
            next_cursor,
            focus: None,
            generation: nesting.generation,
        })
    }

    /// A subagent's whole transcript, or why it is left out.
    fn nested(
        &self,
        conn: &Connection,
        child: &str,
        nesting: &mut Nesting,
    ) -> Result<(Option<Transcript>, Option<Omitted>), Error> {
        if nesting.chain.iter().any(|s| s == child) {
            return Ok((None, Some(Omitted::Cycle)));
        }
        if nesting.chain.len() > MAX_DEPTH {
            return Ok((None, Some(Omitted::Depth)));
        }
        if !nesting.shown.insert(child.to_string()) {
            return Ok((None, Some(Omitted::ShownAbove)));
        }
        let messages: i64 = conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM messages WHERE session_num = {SESSION_NUM_OF}"
            ))
            .and_then(|mut s| s.query_row([child], |r| r.get(0)))
            .map_err(|e| self.failed(e))?;
        if messages as usize > nesting.budget {
            return Ok((None, Some(Omitted::PageBudget)));
        }
        nesting.budget -= messages as usize;
        match self.session_transcript(conn, child, -1, None, nesting) {
            Ok(t) => Ok((Some(t), None)),
            Err(Error::SessionNotFound(_)) => Ok((None, Some(Omitted::NotInArchive))),
            Err(e) => Err(e),
        }
    }
}

/// What a page's nesting of subagents has used: the sessions being rendered (a subagent that
/// is one of them would repeat forever), those nested already (a resumed subagent is nested at
/// its first call only), and the nested messages a page may still hold.
struct Nesting {
    chain: Vec<String>,
    shown: HashSet<String>,
    budget: usize,
    generation: i64,
}

/// Why a subagent's transcript is not nested at its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Omitted {
    /// The source does not name the subagent's session.
    NotNamed,
    /// The archive does not hold it, or the scope does not see it.
    NotInArchive,
    /// It is nested at an earlier call on this page (a resumed subagent).
    ShownAbove,
    /// It is one of the sessions it would be nested in.
    Cycle,
    /// Nested deeper than [`MAX_DEPTH`].
    Depth,
    /// The page holds [`NESTED_BUDGET`] nested messages already: read it on its own.
    PageBudget,
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
        let focus = if t.focus.as_deref() == Some(message.message_id.as_str()) {
            " ◀"
        } else {
            ""
        };
        if markdown {
            line(
                out,
                &format!("**{}**{time} `m{}`{focus}", message.role, message.position),
            );
        } else {
            line(
                out,
                &format!("[m{}] {}{time}{focus}", message.position, message.role),
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
                        let why = match sub.omitted {
                            Some(Omitted::ShownAbove) => " (nested above)",
                            Some(Omitted::NotInArchive | Omitted::NotNamed) => {
                                " (not in the archive)"
                            }
                            Some(Omitted::Cycle) => " (a cycle: not nested again)",
                            Some(Omitted::Depth) => " (too deep: read it on its own)",
                            Some(Omitted::PageBudget) => " (the page is full: read it on its own)",
                            None => "",
                        };
                        line(out, &format!("  ↳ subagent {who}{why}"));
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
