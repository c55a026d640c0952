//! GitHub Copilot CLI sessions (`github/copilot-cli`; the event types as the Copilot SDK,
//! `github/copilot-sdk`, declares them in `nodejs/src/generated/session-events.ts`):
//! `${COPILOT_HOME:-~/.copilot}/session-state/<session id>/events.jsonl` (before that,
//! `session-state/<session id>.jsonl`), the session's event log, appended to as it runs and
//! again when it is resumed. Every line is `{type, data, id, timestamp, parentId}` (and
//! `agentId` on a subagent's events): `session.start {sessionId, copilotVersion, startTime,
//! selectedModel?, context {cwd, gitRoot?, branch?, repository?}}`, `user.message {content,
//! source?}`, `assistant.reasoning {content}`, `assistant.message {content, reasoningText?,
//! toolRequests [{toolCallId, name, arguments}], model?}`, `tool.execution_complete
//! {toolCallId, success, result {content}, error {message}}`, `session.model_change
//! {newModel}`, `session.resume`, `session.shutdown`, and many notices that hold no message.
//!
//! Usage: the log keeps no per-call usage (`assistant.usage` is an ephemeral event, never
//! written). Each run of the session that ends cleanly writes one `session.shutdown` whose
//! `modelMetrics {<model>: {requests {count}, usage {inputTokens, outputTokens,
//! cacheReadTokens, cacheWriteTokens, reasoningTokens?}}}` totals that run's calls per model;
//! from Copilot CLI 1.0.66 the runtime restores the last shutdown's totals when it resumes a
//! session, so its shutdowns hold the session's running total instead ([`Accounting`], told
//! apart by the run's `session.resume`). quarry records one usage row per model per run, the
//! run's share, keyed `copilot:<session>:<shutdown event id>:<model>` so a copy of the log adds
//! nothing.
//! `inputTokens` includes both cache counts, so the uncached input is
//! `inputTokens - cacheReadTokens - cacheWriteTokens`. A run that was killed writes no
//! shutdown, and its calls are nowhere in the log: they are not counted.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{flatten_text, json_time, str_field};

/// The namespaces of Copilot CLI's event types (`session.start`, `tool.execution_complete`,
/// ...): an event of one of them that quarry does not read is a notice, not an unknown record.
const NAMESPACES: &[&str] = &[
    "session",
    "user",
    "assistant",
    "tool",
    "tool_search",
    "subagent",
    "hook",
    "skill",
    "system",
    "permission",
    "user_input",
    "elicitation",
    "sampling",
    "mcp",
    "mcp_app",
    "external_tool",
    "command",
    "commands",
    "capabilities",
    "model",
    "pending_messages",
    "auto_mode_switch",
    "session_limits_exhausted",
    "exit_plan_mode",
    "factory",
    "ui",
    "abort",
];

/// Whether a JSONL line is a Copilot CLI event: a dotted `type` (or `abort`), a `data` object,
/// an `id` and a `timestamp`, and the `parentId` chain (null on the first event).
pub fn is_line(value: &Value) -> bool {
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return false;
    };
    (kind.contains('.') || kind == "abort")
        && value.get("data").is_some_and(Value::is_object)
        && value.get("id").is_some_and(Value::is_string)
        && value.get("timestamp").is_some_and(Value::is_string)
        && value.get("parentId").is_some()
}

/// How a `session.shutdown`'s `modelMetrics` relate to the runs before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accounting {
    /// The totals of this run alone.
    PerRun,
    /// The session's totals since it was created: this run's share is the difference from the
    /// previous shutdown.
    Cumulative,
}

/// How the runtime that ran a session's run accounts, from the event that opened the run.
/// Copilot CLI 1.0.66 began restoring the last shutdown's totals on resume (its usage tracker
/// reads `session.shutdown`); the same release began writing `sessionLimits` (`null` when no
/// limit is set) on every `session.resume`, which no earlier release writes. A run opened by
/// `session.start` has no totals before it, so both readings agree.
fn opened_by(kind: &str, data: &Value) -> Accounting {
    if kind == "session.resume" && data.get("sessionLimits").is_some() {
        Accounting::Cumulative
    } else {
        Accounting::PerRun
    }
}

/// One model's totals in a `modelMetrics` entry: requests, then the tokens as written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Metric {
    requests: i64,
    input: i64,
    output: i64,
    cache_read: i64,
    cache_write: i64,
    reasoning: Option<i64>,
}

impl Metric {
    fn read(entry: &Value) -> Option<Metric> {
        let usage = entry.get("usage").filter(|u| u.is_object())?;
        let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64).unwrap_or(0);
        Some(Metric {
            requests: entry.get("requests").map_or(0, |r| n(r, "count")),
            input: n(usage, "inputTokens"),
            output: n(usage, "outputTokens"),
            cache_read: n(usage, "cacheReadTokens"),
            cache_write: n(usage, "cacheWriteTokens"),
            reasoning: usage.get("reasoningTokens").and_then(Value::as_i64),
        })
    }

    /// `self - earlier`, each count; `None` when one of them went down (then `self` is not a
    /// running total over `earlier`).
    fn minus(self, earlier: Metric) -> Option<Metric> {
        let d = |a: i64, b: i64| (a >= b).then(|| a.saturating_sub(b));
        Some(Metric {
            requests: d(self.requests, earlier.requests)?,
            input: d(self.input, earlier.input)?,
            output: d(self.output, earlier.output)?,
            cache_read: d(self.cache_read, earlier.cache_read)?,
            cache_write: d(self.cache_write, earlier.cache_write)?,
            reasoning: match (self.reasoning, earlier.reasoning) {
                (Some(a), b) => Some(d(a, b.unwrap_or(0))?),
                (None, _) => None,
            },
        })
    }

    fn is_empty(&self) -> bool {
        self.requests == 0
            && self.input == 0
            && self.output == 0
            && self.cache_read == 0
            && self.cache_write == 0
    }

    /// The counts in quarry's meaning: `inputTokens` holds the cache reads and writes.
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self
                .input
                .saturating_sub(self.cache_read)
                .saturating_sub(self.cache_write)
                .max(0),
            output: self.output,
            reasoning: self.reasoning,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
            cache_write_1h: 0,
        }
    }
}

/// The per-model totals of a shutdown's `modelMetrics`.
fn metrics(data: &Value) -> BTreeMap<String, Metric> {
    data.get("modelMetrics")
        .and_then(Value::as_object)
        .map(|models| {
            models
                .iter()
                .filter_map(|(model, entry)| Some((model.clone(), Metric::read(entry)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The reading of one log: the session, its subagents' sessions, and what is carried between
/// events.
struct Reader {
    sessions: Vec<SessionDraft>,
    /// Index into `sessions` of each subagent's, by its key (`agentId` or the spawning tool
    /// call's id).
    agents: BTreeMap<String, usize>,
    /// Each subagent's configured name, by the id of the tool call that spawned it
    /// (`subagent.started`).
    names: BTreeMap<String, String>,
    /// The model selected now (`session.start`, `session.resume`, `session.model_change`).
    model: Option<String>,
    /// Reasoning shown before the message it belongs to (`assistant.reasoning`), per session.
    reasoning: BTreeMap<usize, Vec<String>>,
    /// The last shutdown's totals, per model.
    last_totals: BTreeMap<String, Metric>,
    /// How the run now being read accounts: set by the event that opened it, and by what only a
    /// cumulative writer writes (`session.usage_checkpoint`, from 1.0.66; a shutdown's
    /// `agentMetrics`, from 1.0.81).
    run: Accounting,
}

/// Reads one `events.jsonl` (or a legacy `<session id>.jsonl`).
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let native = lines
        .iter()
        .find(|l| l.value.get("type").and_then(Value::as_str) == Some("session.start"))
        .and_then(|l| l.value.get("data"))
        .and_then(|d| str_field(d, "sessionId"))
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| id_from_path(name));
    let mut reader = Reader {
        sessions: vec![SessionDraft::new(Origin::CopilotCli, native)],
        agents: BTreeMap::new(),
        names: BTreeMap::new(),
        model: None,
        reasoning: BTreeMap::new(),
        last_totals: BTreeMap::new(),
        run: Accounting::PerRun,
    };
    for line in lines {
        parsed.records += 1;
        reader.event(name, line, parsed);
    }
    // A hand-off names its child only when the child's events carry the spawning call's id.
    let agents = &reader.agents;
    for d in &mut reader.sessions[0].delegations {
        if !agents.contains_key(&d.tool_id) {
            d.child_native_id = None;
        }
    }
    parsed.sessions.append(&mut reader.sessions);
}

/// The session id a log's place names: the folder of `<id>/events.jsonl`, else the name of a
/// legacy `<id>.jsonl`.
fn id_from_path(name: &str) -> String {
    let path = Path::new(name);
    let part = if path.file_name().is_some_and(|f| f == "events.jsonl") {
        path.parent().and_then(Path::file_name)
    } else {
        path.file_stem()
    };
    part.and_then(|p| p.to_str())
        .filter(|p| !p.is_empty())
        .unwrap_or("session")
        .to_string()
}

impl Reader {
    fn event(&mut self, name: &str, line: Line, parsed: &mut ParsedFile) {
        let value = &line.value;
        let time = json_time(value.get("timestamp"));
        let kind = str_field(value, "type").unwrap_or_else(|| "unknown".to_string());
        let data = value.get("data").unwrap_or(&Value::Null);
        let at = self.session_of(value, data, time);
        let known = NAMESPACES.contains(&kind.split('.').next().unwrap_or(""));
        if !known || !data.is_object() {
            *parsed
                .unknown_records
                .entry(format!("copilot:{kind}"))
                .or_default() += 1;
            self.sessions[at].push_event(&kind, time, Surface::LogOnly, line.text);
            return;
        }
        let surface = match kind.as_str() {
            "user.message" | "assistant.message" | "tool.execution_complete" => Surface::Current,
            _ => Surface::LogOnly,
        };
        let event_index = self.sessions[at].push_event(&kind, time, surface, line.text);
        let session = &mut self.sessions[at];
        match kind.as_str() {
            "session.start" => {
                self.run = opened_by(&kind, data);
                session.created_at = json_time(data.get("startTime")).or(time);
                read_context(session, data.get("context"));
                self.model = str_field(data, "selectedModel").or(self.model.take());
            }
            "session.resume" => {
                self.run = opened_by(&kind, data);
                read_context(session, data.get("context"));
                self.model = str_field(data, "selectedModel").or(self.model.take());
            }
            "session.context_changed" => read_context(session, Some(data)),
            "session.model_change" => self.model = str_field(data, "newModel"),
            "session.title_changed" => {
                session.title = str_field(data, "title").filter(|t| !t.trim().is_empty());
            }
            "user.message" => {
                let mut m = MessageDraft::new(Role::User, time, event_index);
                m.blocks.push(BlockDraft::text(
                    BlockKind::Text,
                    str_field(data, "content").unwrap_or_default(),
                ));
                // Copilot CLI names where a message it wrote itself came from (a skill's
                // injection, another agent's prompt, autopilot); a person's has no source.
                m.injected = str_field(data, "source").is_some_and(|s| s != "user")
                    || data.get("isAutopilotContinuation").and_then(Value::as_bool) == Some(true);
                session.messages.push(m);
            }
            "assistant.reasoning" => {
                if let Some(text) = str_field(data, "content").filter(|t| !t.is_empty()) {
                    self.reasoning.entry(at).or_default().push(text);
                }
            }
            "assistant.message" => {
                let mut m = MessageDraft::new(Role::Assistant, time, event_index);
                m.model = str_field(data, "model").or_else(|| self.model.clone());
                let shown = self.reasoning.remove(&at).unwrap_or_default();
                let thinking = match str_field(data, "reasoningText").filter(|t| !t.is_empty()) {
                    Some(text) => vec![text],
                    None => shown,
                };
                for text in thinking {
                    m.blocks.push(BlockDraft::text(BlockKind::Thinking, text));
                }
                if let Some(text) = str_field(data, "content").filter(|t| !t.is_empty()) {
                    m.blocks.push(BlockDraft::text(BlockKind::Text, text));
                }
                for call in data
                    .get("toolRequests")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                {
                    m.blocks.push(BlockDraft::tool_use(
                        str_field(call, "name"),
                        str_field(call, "toolCallId"),
                        call.get("arguments").unwrap_or(&Value::Null),
                    ));
                }
                session.messages.push(m);
            }
            "tool.execution_complete" => {
                let result = data.get("result").unwrap_or(&Value::Null);
                let error = data.get("error").filter(|e| !e.is_null());
                let text = match error {
                    Some(e) => str_field(e, "message").unwrap_or_else(|| flatten_text(Some(e))),
                    None => str_field(result, "content")
                        .or_else(|| str_field(result, "detailedContent"))
                        .unwrap_or_default(),
                };
                let mut block = BlockDraft::text(BlockKind::ToolResult, text);
                block.tool_id = str_field(data, "toolCallId");
                block.is_error = data
                    .get("success")
                    .and_then(Value::as_bool)
                    .map(|ok| !ok)
                    .or(error.map(|_| true));
                let mut m = MessageDraft::new(Role::Tool, time, event_index);
                m.blocks.push(block);
                session.messages.push(m);
            }
            "session.compaction_complete" => {
                if let Some(summary) = str_field(data, "summaryContent").filter(|s| !s.is_empty()) {
                    session
                        .snapshots
                        .push(SnapshotDraft::compaction(summary, time));
                }
            }
            "subagent.started" => self.delegate(data, time),
            "subagent.completed" | "subagent.failed" => {
                let status = if kind == "subagent.failed" {
                    "failed"
                } else {
                    "completed"
                };
                let tool_id = str_field(data, "toolCallId");
                if let Some(d) = session
                    .delegations
                    .iter_mut()
                    .rfind(|d| Some(&d.tool_id) == tool_id.as_ref())
                {
                    d.result_status = Some(status.to_string());
                }
            }
            "session.usage_checkpoint" => self.run = Accounting::Cumulative,
            "session.shutdown" => {
                let at = (name, line.number);
                self.shutdown(at, value, data, time, event_index, parsed);
            }
            _ => {}
        }
    }

    /// A hand-off to a subagent (`subagent.started {toolCallId, agentName}`), from the
    /// assistant message whose tool call spawned it.
    fn delegate(&mut self, data: &Value, time: Option<i64>) {
        let Some(tool_id) = str_field(data, "toolCallId").filter(|t| !t.is_empty()) else {
            return;
        };
        if let Some(name) = str_field(data, "agentName") {
            self.names.insert(tool_id.clone(), name);
        }
        let main = &mut self.sessions[0];
        let Some(message_index) = main.messages.iter().rposition(|m| {
            m.blocks
                .iter()
                .any(|b| b.kind == BlockKind::ToolUse && b.tool_id.as_ref() == Some(&tool_id))
        }) else {
            return;
        };
        let input = main.messages[message_index]
            .blocks
            .iter()
            .find(|b| b.tool_id.as_ref() == Some(&tool_id))
            .and_then(|b| b.tool_input.as_deref())
            .and_then(|i| serde_json::from_str::<Value>(i).ok())
            .unwrap_or(Value::Null);
        main.delegations.push(DelegationDraft {
            message_index,
            child_native_id: Some(format!("{}/agent-{tool_id}", main.native_id)),
            tool_id,
            instruction: str_field(&input, "prompt"),
            requested_model: str_field(data, "model").or_else(|| str_field(&input, "model")),
            result_status: None,
            occurred_at_ms: time,
        });
    }

    /// The session an event belongs to: a subagent's (keyed by the deprecated
    /// `parentToolCallId`, the id of the call that spawned it, else `agentId`), made when first
    /// seen, else the log's own.
    fn session_of(&mut self, value: &Value, data: &Value, time: Option<i64>) -> usize {
        // The session's own lifecycle (start, resume, shutdown) is the log's, whoever wrote it.
        let lifecycle = value
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|k| k.starts_with("session."));
        let key = str_field(data, "parentToolCallId")
            .or_else(|| str_field(value, "agentId"))
            .filter(|k| !k.is_empty() && !lifecycle);
        let at = match key {
            None => 0,
            Some(key) => match self.agents.get(&key) {
                Some(&at) => at,
                None => {
                    let parent = self.sessions[0].native_id.clone();
                    let mut child =
                        SessionDraft::new(Origin::CopilotCli, format!("{parent}/agent-{key}"));
                    child.parent_native_id = Some(parent);
                    child.branch_type = Some("subagent");
                    child.agent = Some(self.names.get(&key).cloned().unwrap_or(key.clone()));
                    child.cwd = self.sessions[0].cwd.clone();
                    self.sessions.push(child);
                    self.agents.insert(key, self.sessions.len() - 1);
                    self.sessions.len() - 1
                }
            },
        };
        if time.is_some() {
            let s = &mut self.sessions[at];
            s.created_at = s.created_at.min(time).or(time);
            s.updated_at = s.updated_at.max(time);
        }
        at
    }

    /// One usage row per model with calls in the run this shutdown ends.
    fn shutdown(
        &mut self,
        (name, number): (&str, usize),
        value: &Value,
        data: &Value,
        time: Option<i64>,
        event_index: usize,
        parsed: &mut ParsedFile,
    ) {
        let totals = metrics(data);
        if data.get("agentMetrics").is_some() {
            self.run = Accounting::Cumulative;
        }
        let mode = self.run;
        let main = &mut self.sessions[0];
        let event_id = str_field(value, "id").unwrap_or_else(|| format!("e{event_index}"));
        for (model, total) in &totals {
            let run = match mode {
                Accounting::PerRun => Some(*total),
                Accounting::Cumulative => {
                    total.minus(self.last_totals.get(model).copied().unwrap_or_default())
                }
            };
            let Some(run) = run else {
                parsed.diagnostics.push(Diagnostic {
                    file: name.to_string(),
                    line: Some(number),
                    kind: "bad_record",
                    reason: format!(
                        "a Copilot CLI session.shutdown whose running total for {model} is below \
                         the previous shutdown's: counted whole"
                    ),
                });
                push_usage(main, &event_id, model, total, time, event_index);
                continue;
            };
            if !run.is_empty() {
                push_usage(main, &event_id, model, &run, time, event_index);
            }
        }
        self.last_totals = totals;
    }
}

fn push_usage(
    session: &mut SessionDraft,
    event_id: &str,
    model: &str,
    run: &Metric,
    time: Option<i64>,
    event_index: usize,
) {
    let key = format!("copilot:{}:{event_id}:{model}", session.native_id);
    session.usage.push(UsageDraft::keyed(
        key,
        Some(model.to_string()),
        run.tokens(),
        time,
        event_index,
    ));
}

/// The working folder and git context of `session.start`, `session.resume` or
/// `session.context_changed`.
fn read_context(session: &mut SessionDraft, context: Option<&Value>) {
    let Some(context) = context.filter(|c| c.is_object()) else {
        return;
    };
    if let Some(cwd) = str_field(context, "cwd").filter(|c| !c.is_empty()) {
        session.cwd = Some(cwd);
    }
    if let Some(branch) = str_field(context, "branch").filter(|b| !b.is_empty()) {
        session.git_branch = Some(branch);
    }
    if let Some(repository) = str_field(context, "repository").filter(|r| !r.is_empty()) {
        let host = str_field(context, "repositoryHost").unwrap_or_else(|| "github.com".into());
        session.git_remote = Some(format!("https://{host}/{repository}"));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    const LOG: &[u8] = include_bytes!(
        "../../tests/fixtures/agents/copilot/session-state/1a1a1a1a-0000-4000-8000-000000000001/events.jsonl"
    );
    const NAME: &str = "session-state/1a1a1a1a-0000-4000-8000-000000000001/events.jsonl";

    /// Usage rows, messages, and the lines reported (a log that kept no message is also
    /// reported, once, as a whole: not counted).
    fn rows(bytes: &[u8]) -> (usize, usize, Vec<usize>) {
        let (_, parsed) = crate::parse_bytes(NAME, bytes);
        let usage = parsed.sessions.iter().map(|s| s.usage.len()).sum();
        let messages = parsed.sessions.iter().map(|s| s.messages.len()).sum();
        let lines = parsed.diagnostics.iter().filter_map(|d| d.line).collect();
        (usage, messages, lines)
    }

    /// The log cut at every seventh byte: never a panic, at most the cut line reported, and no
    /// more usage or messages than the whole log has (a cut never invents a run).
    #[test]
    fn a_log_cut_anywhere_keeps_what_came_before() {
        let (usage, messages, reported) = rows(LOG);
        assert_eq!((usage, reported.len()), (5, 0));
        let mut last = (0, 0);
        for cut in (0..LOG.len()).step_by(7) {
            let (u, m, d) = rows(&LOG[..cut]);
            assert!(d.len() <= 1, "cut at {cut}: lines {d:?} reported");
            assert!(u <= usage && m <= messages, "cut at {cut}");
            assert!(
                u >= last.0 && m >= last.1,
                "cut at {cut}: a longer prefix lost rows"
            );
            last = (u, m);
        }
    }

    /// A running total below the previous shutdown's (a log that is not what Copilot CLI
    /// writes) is counted whole and reported with its line.
    #[test]
    fn a_running_total_that_went_down_is_counted_whole_and_reported() {
        let shutdown = |id: &str, input: i64| {
            format!(
                r#"{{"type":"session.shutdown","id":"{id}","timestamp":"2026-03-01T10:00:00Z","parentId":null,"data":{{"modelMetrics":{{"gpt-5":{{"requests":{{"count":1}},"usage":{{"inputTokens":{input},"outputTokens":1,"cacheReadTokens":0,"cacheWriteTokens":0}}}}}}}}}}"#
            )
        };
        let log = [
            r#"{"type":"session.start","id":"a","timestamp":"2026-03-01T09:00:00Z","parentId":null,"data":{"sessionId":"s"}}"#.to_string(),
            shutdown("b", 1000),
            r#"{"type":"session.resume","id":"c","timestamp":"2026-03-01T09:30:00Z","parentId":"b","data":{"sessionLimits":null}}"#.to_string(),
            shutdown("d", 500),
        ]
        .join("\n");
        let (_, parsed) = crate::parse_bytes("s/events.jsonl", log.as_bytes());
        let inputs: Vec<i64> = parsed.sessions[0]
            .usage
            .iter()
            .map(|u| u.tokens.input)
            .collect();
        assert_eq!(inputs, [1000, 500]);
        let lines: Vec<_> = parsed.diagnostics.iter().filter_map(|d| d.line).collect();
        assert_eq!(lines, [4]);
    }

    /// One byte changed at every thirteenth position: never a panic; the changed line is the
    /// only one reported, but for a later shutdown whose running total no longer follows (the
    /// changed line was the shutdown before it).
    #[test]
    fn a_corrupted_byte_costs_at_most_its_line() {
        let text = std::str::from_utf8(LOG).unwrap();
        let shutdowns: Vec<usize> = (1..)
            .zip(text.lines())
            .filter(|(_, l)| l.contains("\"session.shutdown\""))
            .map(|(n, _)| n)
            .collect();
        for at in (0..LOG.len()).step_by(13) {
            let changed = 1 + LOG[..at].iter().filter(|b| **b == b'\n').count();
            let mut log = LOG.to_vec();
            log[at] ^= 0x5a;
            let (_, _, reported) = rows(&log);
            assert!(
                reported
                    .iter()
                    .all(|l| *l == changed
                        || (shutdowns.contains(l) && shutdowns.contains(&changed))),
                "byte {at} (line {changed}): lines {reported:?} reported"
            );
        }
    }
}
