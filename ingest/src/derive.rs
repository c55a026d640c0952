//! Facts computed at ingest from one session draft: message and block rows, actions (tool_use
//! paired with tool_result), files, turns and their commitment, runs, observed events, context
//! snapshots, delegations, usage rows and the session's counters. Pure: no I/O.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::model::*;
use super::text::{repo_name, semantic_type, word_count};

/// A session's row in `sessions`.
#[derive(Debug, Clone, Default)]
pub struct SessionRow {
    pub session_id: String,
    pub origin: &'static str,
    pub native_id: String,
    pub owner: Option<String>,
    pub parent_session_id: Option<String>,
    pub root_session_id: String,
    pub branch_type: Option<&'static str>,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub repo: Option<String>,
    pub git_branch: Option<String>,
    pub model: Option<String>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub duration_ms: Option<i64>,
    /// The per-message sums.
    pub counters: Counters,
    pub reported_cost_usd: Option<f64>,
}

/// A row of `messages`.
#[derive(Debug, Clone)]
pub struct MessageRow {
    pub message_id: String,
    pub position: i64,
    pub role: &'static str,
    pub kind: &'static str,
    pub material_origin: &'static str,
    pub model: Option<String>,
    pub occurred_at_ms: Option<i64>,
    pub word_count: i64,
    pub text: String,
    pub tokens: Option<Tokens>,
    pub duration_ms: Option<i64>,
    pub stop_reason: Option<String>,
    pub is_sidechain: bool,
    pub turn: Option<usize>,
    pub hidden: bool,
    pub event_seq: i64,
    /// Typed by a person (a user message that is not injected); not stored.
    pub authored: bool,
    /// Holds a tool call; not stored.
    pub uses_tool: bool,
    /// Holds reasoning; not stored.
    pub thinks: bool,
    /// Holds a tool result; not stored.
    pub has_result: bool,
    /// Carries pasted material; not stored.
    pub pasted: bool,
}

/// A row of `blocks` (with the text the full-text index gets).
#[derive(Debug, Clone)]
pub struct BlockRow {
    pub block_id: String,
    pub message_id: String,
    pub position: i64,
    pub block: BlockDraft,
    pub occurred_at_ms: Option<i64>,
}

/// A row of `actions`.
#[derive(Debug, Clone)]
pub struct ActionRow {
    pub action_id: String,
    pub message_id: String,
    pub tool_use_block_id: String,
    pub tool_result_block_id: Option<String>,
    pub tool_name: String,
    pub semantic_type: &'static str,
    pub tool_command: Option<String>,
    pub tool_path: Option<String>,
    pub tool_input: Option<String>,
    pub output_text: Option<String>,
    pub is_error: bool,
    pub exit_code: Option<i64>,
    pub occurred_at_ms: Option<i64>,
    pub duration_ms: Option<i64>,
    pub followup_class: Option<&'static str>,
    pub turn: Option<usize>,
}

/// A row of `files`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileRow {
    pub path: String,
    pub action_count: i64,
    pub first_seen_ms: Option<i64>,
    pub last_seen_ms: Option<i64>,
    pub first_message_id: String,
    pub first_tool_use_block_id: String,
    pub last_tool_use_block_id: String,
}

/// A row of `turns`.
#[derive(Debug, Clone)]
pub struct TurnRow {
    pub turn_id: String,
    pub started_at_ms: Option<i64>,
    pub completed_at_ms: Option<i64>,
    pub committed: bool,
}

/// A row of `observed_events`.
#[derive(Debug, Clone)]
pub struct ObservedRow {
    pub event_id: String,
    pub kind: &'static str,
    pub subject: Option<String>,
    pub object: Option<String>,
    pub handler: Option<String>,
    pub status: Option<&'static str>,
    pub summary: Option<String>,
    pub occurred_at_ms: Option<i64>,
}

/// A row of `delegations`.
#[derive(Debug, Clone)]
pub struct DelegationRow {
    pub delegation_id: String,
    pub parent_message_id: String,
    pub child_session_id: Option<String>,
    pub instruction: Option<String>,
    pub requested_model: Option<String>,
    pub mapping_state: &'static str,
    pub result_status: Option<String>,
    pub is_error: Option<bool>,
    pub occurred_at_ms: Option<i64>,
}

/// A row of `usage_records`: one response as this session's file records it (`usage` is
/// resolved from them across the archive, see `store`).
#[derive(Debug, Clone)]
pub struct UsageRow {
    pub response_key: String,
    pub via: RecordedVia,
    pub subagent_session_id: Option<String>,
    pub message_id: Option<String>,
    pub request_id: Option<String>,
    pub model: Option<String>,
    pub tokens: Tokens,
    pub occurred_at_ms: Option<i64>,
    pub turn: Option<usize>,
    /// Its place among the session's usage rows.
    pub seq: i64,
}

/// A row of `events_raw`.
#[derive(Debug, Clone)]
pub struct EventRow {
    pub seq: i64,
    pub event: EventDraft,
    pub turn: Option<usize>,
}

/// Everything stored for one session.
#[derive(Debug, Clone)]
pub struct SessionRows {
    pub session: SessionRow,
    pub messages: Vec<MessageRow>,
    pub blocks: Vec<BlockRow>,
    pub actions: Vec<ActionRow>,
    pub files: Vec<FileRow>,
    pub turns: Vec<TurnRow>,
    pub observed: Vec<ObservedRow>,
    pub snapshots: Vec<SnapshotDraft>,
    pub delegations: Vec<DelegationRow>,
    pub usage: Vec<UsageRow>,
    pub events: Vec<EventRow>,
    pub run_role: &'static str,
    pub run_agent: Option<String>,
    pub run_status: &'static str,
    pub harness: &'static str,
}

impl SessionRows {
    /// The id of a turn by index.
    pub fn turn_id(&self, turn: Option<usize>) -> Option<&str> {
        turn.and_then(|t| self.turns.get(t))
            .map(|t| t.turn_id.as_str())
    }

    /// Each message's index in these rows, by message id.
    pub fn message_index(&self) -> HashMap<&str, usize> {
        self.messages
            .iter()
            .enumerate()
            .map(|(i, m)| (m.message_id.as_str(), i))
            .collect()
    }

    /// Whether a turn by index is committed (`None` outside any turn).
    pub fn turn_committed(&self, turn: Option<usize>) -> Option<bool> {
        turn.and_then(|t| self.turns.get(t)).map(|t| t.committed)
    }

    /// Total rows this session writes (for the summary).
    pub fn row_count(&self) -> usize {
        1 + self.messages.len()
            + self.blocks.len()
            + self.actions.len()
            + self.files.len()
            + self.turns.len()
            + self.observed.len()
            + self.snapshots.len()
            + self.delegations.len()
            + self.usage.len()
            + self.events.len()
            + 1
    }
}

/// The per-message sums a session row holds (`message_count` … `assistant_words`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub message_count: i64,
    pub word_count: i64,
    pub user_messages: i64,
    pub authored_user_messages: i64,
    pub assistant_messages: i64,
    pub system_messages: i64,
    pub tool_messages: i64,
    pub tool_use_messages: i64,
    pub thinking_messages: i64,
    pub paste_messages: i64,
    pub user_words: i64,
    pub authored_user_words: i64,
    pub assistant_words: i64,
}

impl Counters {
    /// Counts one message.
    fn add(&mut self, m: &MessageRow) {
        self.message_count += 1;
        self.word_count += m.word_count;
        match m.role {
            "user" => {
                self.user_messages += 1;
                self.user_words += m.word_count;
                if m.authored {
                    self.authored_user_messages += 1;
                    self.authored_user_words += m.word_count;
                }
            }
            "assistant" => {
                self.assistant_messages += 1;
                self.assistant_words += m.word_count;
            }
            "system" => self.system_messages += 1,
            _ => self.tool_messages += 1,
        }
        self.tool_use_messages += i64::from(m.uses_tool);
        self.thinking_messages += i64::from(m.thinks);
        self.paste_messages += i64::from(m.pasted);
    }
}

/// What a derive that continues a session from a cut knows of the rows before the cut (which
/// stay in the archive as they are): how many there are, and the session-wide facts they add to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prefix {
    /// Records before the cut.
    pub events: usize,
    /// Messages before the cut.
    pub messages: usize,
    /// Usage rows before the cut.
    pub usage: usize,
    /// Turns before the cut.
    pub turns: usize,
    /// The sums over the messages before the cut.
    pub counters: Counters,
    /// The title the first authored message gives, if one is before the cut.
    pub first_authored: Option<String>,
    /// The first user message before the cut: its text and time.
    pub first_user: Option<(String, Option<i64>)>,
    /// The `files` rows of the actions before the cut.
    pub files: Vec<FileRow>,
    /// Every turn that ends before the cut is committed.
    pub all_committed: bool,
    /// The turn the cut falls inside (not at its start), if any.
    pub open_turn: Option<OpenTurn>,
}

/// A turn a cut falls inside: what its part before the cut decides about it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OpenTurn {
    /// Its id.
    pub turn_id: String,
    /// When it started.
    pub started_at_ms: Option<i64>,
    /// Its part before the cut holds a tool result.
    pub has_result: bool,
    /// Its part before the cut holds an assistant message.
    pub has_assistant: bool,
    /// Its part before the cut was answered (an assistant message after its last result).
    pub answered: bool,
    /// The time of its last timed message before the cut.
    pub last_time: Option<i64>,
    /// Its first usage row's seq.
    pub usage_from: usize,
}

impl OpenTurn {
    /// The turn's state once `messages` (its next part, in order) join it.
    fn extend<'a>(&self, messages: impl Iterator<Item = &'a MessageRow>) -> OpenTurn {
        let mut next = self.clone();
        for m in messages {
            if m.has_result {
                next.has_result = true;
                next.answered = false;
            }
            if m.role == "assistant" {
                next.has_assistant = true;
                next.answered = true;
            }
            next.last_time = m.occurred_at_ms.or(next.last_time);
        }
        next
    }
}

impl Default for Prefix {
    fn default() -> Self {
        Prefix {
            events: 0,
            messages: 0,
            usage: 0,
            turns: 0,
            counters: Counters::default(),
            first_authored: None,
            first_user: None,
            files: Vec::new(),
            all_committed: true,
            open_turn: None,
        }
    }
}

/// Where a session's rows are cut: the first record, message, usage row and turn after it,
/// counted in the rows being written (local to them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cut {
    pub event: usize,
    pub message: usize,
    pub usage: usize,
    /// The first turn row after the cut: the turn it falls inside, or the next one.
    pub turn: usize,
    /// The turn the cut falls inside (not at its start), if any.
    pub open_turn: Option<usize>,
}

impl Prefix {
    /// The prefix once the rows of `rows` before `cut` join it (`rows` continue `self`).
    pub fn advance(&self, rows: &SessionRows, cut: Cut) -> Prefix {
        let before = rows.messages.get(..cut.message).unwrap_or(&rows.messages);
        let mut counters = self.counters;
        for m in before {
            counters.add(m);
        }
        let local = rows.message_index();
        let actions: Vec<ActionRow> = rows
            .actions
            .iter()
            .filter(|a| {
                local
                    .get(a.message_id.as_str())
                    .is_some_and(|&i| i < cut.message)
            })
            .cloned()
            .collect();
        Prefix {
            events: self.events + cut.event,
            messages: self.messages + cut.message,
            usage: self.usage + cut.usage,
            // Turns started before the cut: those wholly before it and the one it falls
            // inside (a continued turn, row 0, is counted already).
            turns: self.turns + cut.turn + usize::from(cut.open_turn.is_some())
                - usize::from(
                    self.open_turn.is_some() && (cut.turn > 0 || cut.open_turn.is_some()),
                ),
            counters,
            first_authored: if self.counters.authored_user_messages > 0 {
                self.first_authored.clone()
            } else {
                before.iter().find(|m| m.authored).and_then(title_of)
            },
            first_user: self.first_user.clone().or_else(|| {
                before
                    .iter()
                    .find(|m| m.role == "user")
                    .map(|m| (m.text.clone(), m.occurred_at_ms))
            }),
            files: derive_files(self.files.clone(), &actions),
            all_committed: self.all_committed
                && rows.turns.iter().take(cut.turn).all(|t| t.committed),
            open_turn: cut.open_turn.and_then(|t| {
                let turn = rows.turns.get(t)?;
                let start = match (&self.open_turn, t) {
                    (Some(open), 0) => open.clone(),
                    _ => OpenTurn {
                        turn_id: turn.turn_id.clone(),
                        started_at_ms: turn.started_at_ms,
                        usage_from: self.usage
                            + rows
                                .usage
                                .iter()
                                .position(|u| u.turn == Some(t))
                                .unwrap_or(cut.usage),
                        ..OpenTurn::default()
                    },
                };
                Some(start.extend(before.iter().filter(|m| m.turn == Some(t))))
            }),
        }
    }
}

/// The title an authored message gives a session with no title of its own.
fn title_of(m: &MessageRow) -> Option<String> {
    let t: String = m.text.chars().take(80).collect();
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    (!t.is_empty()).then_some(t)
}

/// Derives every row of one session.
pub fn derive(draft: SessionDraft, owner: Option<&str>) -> SessionRows {
    derive_after(draft, owner, &Prefix::default())
}

/// Derives the rows of a session after a cut: `draft` holds what follows the cut (its indexes
/// local to it) and the session-wide fields; ids, positions and seqs continue `prefix`.
pub fn derive_after(draft: SessionDraft, owner: Option<&str>, prefix: &Prefix) -> SessionRows {
    let session_id = draft.session_id();
    let (turns, turn_of_event) = derive_turns(&draft, prefix);
    let turn_at = |event_index: usize| turn_of_event.get(event_index).copied().flatten();

    let mut messages = Vec::with_capacity(draft.messages.len());
    let mut blocks = Vec::new();
    for (local, m) in draft.messages.iter().enumerate() {
        let position = prefix.messages + local;
        let message_id = format!("{session_id}/m{position}");
        let text = m
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Text)
            .map(|b| b.text.as_str())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        for (j, b) in m.blocks.iter().enumerate() {
            blocks.push(BlockRow {
                block_id: format!("{message_id}/b{j}"),
                message_id: message_id.clone(),
                position: j as i64,
                block: b.clone(),
                occurred_at_ms: m.occurred_at_ms,
            });
        }
        messages.push(MessageRow {
            message_id,
            position: position as i64,
            role: m.role.as_str(),
            kind: message_type(m),
            material_origin: material_origin(m),
            model: m.model.clone(),
            occurred_at_ms: m.occurred_at_ms,
            word_count: word_count(&text),
            text,
            tokens: m.tokens,
            duration_ms: m.duration_ms,
            stop_reason: m.stop_reason.clone(),
            is_sidechain: m.is_sidechain,
            turn: turn_at(m.event_index),
            hidden: m.hidden,
            event_seq: (prefix.events + m.event_index) as i64,
            authored: is_authored(m),
            uses_tool: m.blocks.iter().any(|b| b.kind == BlockKind::ToolUse),
            thinks: m.blocks.iter().any(|b| b.kind == BlockKind::Thinking),
            has_result: m.blocks.iter().any(|b| b.kind == BlockKind::ToolResult),
            pasted: m.pasted,
        });
    }

    let actions = derive_actions(&draft, &messages, &mut blocks);
    let files = derive_files(prefix.files.clone(), &actions);
    let observed = derive_observed(&session_id, &draft, &actions);
    let mut snapshots = draft.snapshots.clone();
    // A fork continues its origin's context rather than starting from a hand-off.
    let first_user = prefix.first_user.clone().or_else(|| {
        messages
            .iter()
            .find(|m| m.role == "user")
            .map(|m| (m.text.clone(), m.occurred_at_ms))
    });
    if draft.parent_native_id.is_some()
        && draft.branch_type != Some("fork")
        && let Some((text, occurred_at_ms)) = first_user
    {
        snapshots.insert(
            0,
            SnapshotDraft {
                boundary: "subagent_start",
                inheritance_mode: Some(if draft.branch_type == Some("compaction") {
                    "inherited"
                } else {
                    "fresh"
                }),
                segment: Some("prompt"),
                text,
                occurred_at_ms,
            },
        );
    }
    let delegations = draft
        .delegations
        .iter()
        .map(|d| DelegationRow {
            delegation_id: format!("{session_id}/{}", d.tool_id),
            parent_message_id: messages
                .get(d.message_index)
                .map(|m| m.message_id.clone())
                .unwrap_or_default(),
            child_session_id: d
                .child_native_id
                .as_deref()
                .map(|c| super::model::session_id(draft.origin, c)),
            instruction: d.instruction.clone(),
            requested_model: d.requested_model.clone(),
            mapping_state: if d.child_native_id.is_some() {
                "resolved"
            } else {
                "unresolved"
            },
            is_error: d
                .result_status
                .as_deref()
                .map(|s| s == "error" || s == "failed"),
            result_status: d.result_status.clone(),
            occurred_at_ms: d.occurred_at_ms,
        })
        .collect();
    let usage = draft
        .usage
        .iter()
        .enumerate()
        .map(|(i, u)| UsageRow {
            response_key: u
                .response_key
                .clone()
                .unwrap_or_else(|| format!("{session_id}#u{}", prefix.usage + i)),
            via: u.via,
            subagent_session_id: u
                .subagent_native_id
                .as_deref()
                .map(|c| super::model::session_id(draft.origin, c)),
            message_id: u
                .message_index
                .and_then(|i| messages.get(i))
                .map(|m| m.message_id.clone()),
            request_id: u.request_id.clone(),
            model: u.model.clone(),
            tokens: u.tokens,
            occurred_at_ms: u.occurred_at_ms,
            turn: turn_at(u.event_index),
            seq: (prefix.usage + i) as i64,
        })
        .collect::<Vec<_>>();
    // The token sums stay 0 here: they are sums of the usage rows the session owns, which only
    // the archive knows (`store` resolves them after writing the file).
    let session = session_row(&draft, &session_id, owner, &messages, prefix);
    let run_status = if prefix.all_committed && turns.iter().all(|t| t.committed) {
        "completed"
    } else {
        "incomplete"
    };
    let events = draft
        .events
        .into_iter()
        .enumerate()
        .map(|(local, event)| EventRow {
            seq: (prefix.events + local) as i64,
            event,
            turn: turn_at(local),
        })
        .collect();
    SessionRows {
        session,
        messages,
        blocks,
        actions,
        files,
        turns,
        observed,
        snapshots,
        delegations,
        usage,
        events,
        run_role: match (&draft.parent_native_id, draft.branch_type) {
            (Some(_), Some("fork")) => "main",
            (Some(_), _) => "subagent",
            (None, _) => "main",
        },
        run_agent: draft.agent.clone(),
        run_status,
        harness: draft.origin.harness(),
    }
}

/// A message's type: what its content is mainly about.
fn message_type(m: &MessageDraft) -> &'static str {
    let has = |k: BlockKind| m.blocks.iter().any(|b| b.kind == k);
    let has_text = m
        .blocks
        .iter()
        .any(|b| b.kind == BlockKind::Text && !b.text.trim().is_empty());
    if m.compaction_summary {
        "summary"
    } else if has(BlockKind::ToolUse) {
        "tool_use"
    } else if has(BlockKind::ToolResult) {
        "tool_result"
    } else if has_text {
        "text"
    } else if has(BlockKind::Thinking) {
        "thinking"
    } else if has(BlockKind::Code) {
        "code"
    } else if has(BlockKind::Image) {
        "image"
    } else if has(BlockKind::Document) {
        "document"
    } else {
        "text"
    }
}

/// Where a message's material comes from: a person, the model, a tool, the system, or context
/// the harness injected.
fn material_origin(m: &MessageDraft) -> &'static str {
    match m.role {
        Role::Assistant => "model",
        Role::Tool => "tool_output",
        Role::System => "system",
        Role::User if m.compaction_summary => "compaction_summary",
        Role::User if m.blocks.iter().any(|b| b.kind == BlockKind::ToolResult) => "tool_output",
        Role::User if m.injected => "injected_context",
        Role::User => "human",
    }
}

fn is_authored(m: &MessageDraft) -> bool {
    m.role == Role::User && !m.injected
}

/// Turns and, for each event index, the turn it falls in. Turns started before the draft are
/// `prefix.turns`; the one its first records continue is `prefix.open_turn`.
fn derive_turns(draft: &SessionDraft, prefix: &Prefix) -> (Vec<TurnRow>, Vec<Option<usize>>) {
    let n = draft.events.len();
    let before = prefix.turns;
    let open = prefix
        .open_turn
        .as_ref()
        .filter(|_| !draft.has_turn_markers);
    let event_time = |i: usize| draft.events.get(i).and_then(|e| e.time);
    let mut starts: Vec<(usize, TurnRow)> = Vec::new();
    if let Some(open) = open {
        starts.push((
            0,
            TurnRow {
                turn_id: open.turn_id.clone(),
                started_at_ms: open.started_at_ms,
                completed_at_ms: None,
                committed: false,
            },
        ));
    }
    let continuing = starts.len();
    if draft.has_turn_markers {
        let mut markers = draft.turn_markers.clone();
        markers.sort_by_key(|m| m.start_event);
        for m in markers {
            starts.push((
                m.start_event,
                TurnRow {
                    turn_id: m.turn_id,
                    started_at_ms: m.started_at_ms,
                    completed_at_ms: m.completed_at_ms,
                    committed: m.completed,
                },
            ));
        }
    } else {
        for m in draft.messages.iter().filter(|m| is_authored(m)) {
            let k = before + starts.len() - continuing + 1;
            starts.push((
                m.event_index,
                TurnRow {
                    turn_id: format!("t{k}"),
                    started_at_ms: m.occurred_at_ms,
                    completed_at_ms: None,
                    committed: false,
                },
            ));
        }
    }
    let mut turn_of_event = vec![None; n];
    for (t, (start, _)) in starts.iter().enumerate() {
        let end = starts.get(t + 1).map_or(n, |(s, _)| *s);
        for slot in turn_of_event.iter_mut().take(end).skip(*start) {
            *slot = Some(t);
        }
    }
    let mut turns: Vec<TurnRow> = starts.into_iter().map(|(_, t)| t).collect();
    if !draft.has_turn_markers {
        // Committed: every tool call has its result and an assistant message follows the last
        // tool result (or, with no tool calls, any assistant message answered the prompt).
        for (t, turn) in turns.iter_mut().enumerate() {
            let in_turn: Vec<&MessageDraft> = draft
                .messages
                .iter()
                .filter(|m| turn_of_event.get(m.event_index).copied().flatten() == Some(t))
                .collect();
            let uses: Vec<&str> = in_turn
                .iter()
                .flat_map(|m| m.blocks.iter())
                .filter(|b| b.kind == BlockKind::ToolUse)
                .filter_map(|b| b.tool_id.as_deref())
                .collect();
            let results: std::collections::HashSet<&str> = in_turn
                .iter()
                .flat_map(|m| m.blocks.iter())
                .filter(|b| b.kind == BlockKind::ToolResult)
                .filter_map(|b| b.tool_id.as_deref())
                .collect();
            let last_result = in_turn
                .iter()
                .rposition(|m| m.blocks.iter().any(|b| b.kind == BlockKind::ToolResult));
            let last_assistant = in_turn.iter().rposition(|m| m.role == Role::Assistant);
            // The part of a continued turn before the cut, when this draft's part decides
            // nothing (no result, no assistant message).
            let earlier = open.filter(|_| t == 0);
            let answered = match (last_result, last_assistant) {
                (Some(r), Some(a)) => a > r,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (None, None) => earlier.is_some_and(|o| o.answered),
            };
            let any_assistant =
                last_assistant.is_some() || earlier.is_some_and(|o| o.has_assistant);
            turn.committed = answered && uses.iter().all(|u| results.contains(u));
            if turn.committed {
                turn.completed_at_ms = in_turn
                    .iter()
                    .rev()
                    .find_map(|m| m.occurred_at_ms)
                    .or(earlier.and_then(|o| o.last_time))
                    .or_else(|| {
                        any_assistant
                            .then(|| event_time(n.saturating_sub(1)))
                            .flatten()
                    });
            }
        }
    }
    (turns, turn_of_event)
}

/// Pairs each tool_use with its tool_result (by tool id) and classifies what followed errors.
fn derive_actions(
    draft: &SessionDraft,
    messages: &[MessageRow],
    blocks: &mut [BlockRow],
) -> Vec<ActionRow> {
    let mut result_of: HashMap<String, usize> = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        if b.block.kind == BlockKind::ToolResult
            && let Some(id) = &b.block.tool_id
        {
            result_of.entry(id.clone()).or_insert(i);
        }
    }
    let message_index: HashMap<&str, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.message_id.as_str(), i))
        .collect();
    let mut actions = Vec::new();
    let mut names_for_results: Vec<(usize, String)> = Vec::new();
    for b in blocks.iter() {
        if b.block.kind != BlockKind::ToolUse {
            continue;
        }
        let tool_name = b
            .block
            .tool_name
            .clone()
            .unwrap_or_else(|| "unknown".to_string());
        let result = b
            .block
            .tool_id
            .as_ref()
            .and_then(|id| result_of.get(id))
            .and_then(|&i| {
                names_for_results.push((i, tool_name.clone()));
                blocks.get(i)
            });
        let is_error = result.is_some_and(|r| {
            r.block.is_error == Some(true) || r.block.exit_code.is_some_and(|c| c != 0)
        });
        let use_message = message_index.get(b.message_id.as_str()).copied();
        let followup_class = if is_error {
            result
                .and_then(|r| message_index.get(r.message_id.as_str()).copied())
                .map(|after| followup(draft, after, &tool_name))
        } else {
            None
        };
        actions.push(ActionRow {
            action_id: b.block_id.clone(),
            message_id: b.message_id.clone(),
            tool_use_block_id: b.block_id.clone(),
            tool_result_block_id: result.map(|r| r.block_id.clone()),
            semantic_type: semantic_type(&tool_name, b.block.tool_command.as_deref()),
            tool_name,
            tool_command: b.block.tool_command.clone(),
            tool_path: b.block.tool_path.clone(),
            tool_input: b.block.tool_input.clone(),
            output_text: result.map(|r| r.block.text.clone()),
            is_error,
            exit_code: result.and_then(|r| r.block.exit_code),
            occurred_at_ms: b.occurred_at_ms,
            duration_ms: match (b.occurred_at_ms, result.and_then(|r| r.occurred_at_ms)) {
                (Some(a), Some(z)) if z >= a => Some(z - a),
                _ => None,
            },
            followup_class,
            turn: use_message
                .and_then(|i| messages.get(i))
                .and_then(|m| m.turn),
        });
    }
    for (i, name) in names_for_results {
        if let Some(r) = blocks.get_mut(i)
            && r.block.tool_name.is_none()
        {
            r.block.tool_name = Some(name);
        }
    }
    actions
}

/// What the next assistant step did after an error result in message `after`.
fn followup(draft: &SessionDraft, after: usize, tool: &str) -> &'static str {
    let next = draft
        .messages
        .iter()
        .skip(after + 1)
        .find(|m| m.role == Role::Assistant);
    let Some(next) = next else { return "stop" };
    if let Some(next_tool) = next
        .blocks
        .iter()
        .find(|b| b.kind == BlockKind::ToolUse)
        .and_then(|b| b.tool_name.as_deref())
    {
        return if next_tool == tool { "retry" } else { "change" };
    }
    let said = next
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Text)
        .map(|b| b.text.to_lowercase())
        .collect::<String>();
    if [
        "error",
        "fail",
        "couldn't",
        "could not",
        "unable",
        "didn't work",
    ]
    .iter()
    .any(|w| said.contains(w))
    {
        "stop"
    } else {
        "silent_proceed"
    }
}

/// The `files` rows: `files` (those of earlier actions) extended with `actions`.
fn derive_files(mut files: Vec<FileRow>, actions: &[ActionRow]) -> Vec<FileRow> {
    let mut index: HashMap<String, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.clone(), i))
        .collect();
    for a in actions {
        let Some(path) = a.tool_path.as_deref() else {
            continue;
        };
        match index.get(path).and_then(|&i| files.get_mut(i)) {
            Some(f) => {
                f.action_count += 1;
                f.first_seen_ms = min_opt(f.first_seen_ms, a.occurred_at_ms);
                f.last_seen_ms = max_opt(f.last_seen_ms, a.occurred_at_ms);
                f.last_tool_use_block_id = a.tool_use_block_id.clone();
            }
            None => {
                index.insert(path.to_string(), files.len());
                files.push(FileRow {
                    path: path.to_string(),
                    action_count: 1,
                    first_seen_ms: a.occurred_at_ms,
                    last_seen_ms: a.occurred_at_ms,
                    first_message_id: a.message_id.clone(),
                    first_tool_use_block_id: a.tool_use_block_id.clone(),
                    last_tool_use_block_id: a.tool_use_block_id.clone(),
                });
            }
        }
    }
    files
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn derive_observed(
    session_id: &str,
    draft: &SessionDraft,
    actions: &[ActionRow],
) -> Vec<ObservedRow> {
    let mut rows = vec![ObservedRow {
        event_id: format!("{session_id}/session_started"),
        kind: "session_started",
        subject: Some(session_id.to_string()),
        object: draft.cwd.clone(),
        handler: Some(draft.origin.harness().to_string()),
        status: Some("ok"),
        summary: draft.title.clone(),
        occurred_at_ms: draft.created_at,
    }];
    for a in actions.iter().filter(|a| a.tool_result_block_id.is_some()) {
        let handler = match a.tool_name.strip_prefix("mcp__") {
            Some(rest) => rest.split("__").next().unwrap_or(rest).to_string(),
            None => a.tool_name.clone(),
        };
        rows.push(ObservedRow {
            event_id: format!("{}/finished", a.action_id),
            kind: "tool_finished",
            subject: Some(a.action_id.clone()),
            object: a.tool_path.clone().or_else(|| a.tool_command.clone()),
            handler: Some(handler),
            status: Some(if a.is_error { "error" } else { "ok" }),
            summary: a
                .output_text
                .as_deref()
                .and_then(|t| t.lines().find(|l| !l.trim().is_empty()))
                .map(|l| l.chars().take(200).collect()),
            occurred_at_ms: match (a.occurred_at_ms, a.duration_ms) {
                (Some(t), Some(d)) => Some(t + d),
                (t, _) => t,
            },
        });
    }
    rows
}

fn session_row(
    draft: &SessionDraft,
    session_id: &str,
    owner: Option<&str>,
    messages: &[MessageRow],
    prefix: &Prefix,
) -> SessionRow {
    let parent = draft
        .parent_native_id
        .as_deref()
        .map(|p| super::model::session_id(draft.origin, p));
    let row = SessionRow {
        session_id: session_id.to_string(),
        origin: draft.origin.as_str(),
        native_id: draft.native_id.clone(),
        owner: owner.map(str::to_string),
        root_session_id: parent.clone().unwrap_or_else(|| session_id.to_string()),
        parent_session_id: parent,
        branch_type: draft.branch_type,
        title: draft.title.clone().or_else(|| {
            if prefix.counters.authored_user_messages > 0 {
                prefix.first_authored.clone()
            } else {
                messages.iter().find(|m| m.authored).and_then(title_of)
            }
        }),
        cwd: draft.cwd.clone(),
        repo: repo_name(draft.git_remote.as_deref(), draft.cwd.as_deref()),
        git_branch: draft.git_branch.clone(),
        model: draft.model.clone(),
        created_at: draft.created_at,
        updated_at: draft.updated_at,
        duration_ms: match (draft.created_at, draft.updated_at) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        },
        reported_cost_usd: draft.reported_cost_usd,
        ..SessionRow::default()
    };
    let mut counters = prefix.counters;
    for m in messages {
        counters.add(m);
    }
    SessionRow { counters, ..row }
}
