//! Generated Claude Code sessions: `claude/projects/<project>/<session>.jsonl`, with assistant
//! responses split over several lines sharing `message.id` (usage repeated, output growing, cache
//! writes split into 5-minute and 1-hour lifetimes), tool calls and results (some failing),
//! progress records, and Task subagents written to `<session>/subagents/agent-<id>.jsonl`. Lean
//! sessions also stream their subagents' responses into the parent's `agent_progress` records,
//! and now and then the subagent's own file is missing, so those responses are known only there.

use rand::Rng;
use serde_json::{Value, json};

use super::{Writer, words};

const REPOS: &[&str] = &[
    "quarry",
    "widgets",
    "billing-api",
    "docs-site",
    "ml-pipeline",
    "infra",
];
const MODELS: &[&str] = &["claude-opus-4-6", "claude-sonnet-4-5-20250929"];

struct Ctx {
    session_id: String,
    cwd: String,
    branch: String,
    model: &'static str,
    agent_id: Option<String>,
    parent_uuid: Option<String>,
    lines: Vec<Value>,
    messages: u64,
}

impl Ctx {
    fn envelope(&mut self, w: &mut Writer, kind: &str, message: Value) -> Value {
        let uuid = w.uuid();
        let mut line = json!({
            "parentUuid": self.parent_uuid,
            "isSidechain": self.agent_id.is_some(),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.39",
            "gitBranch": self.branch,
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": w.tick(200, 4000),
        });
        if let (Some(agent), Some(obj)) = (&self.agent_id, line.as_object_mut()) {
            obj.insert("agentId".into(), json!(agent));
        }
        self.parent_uuid = Some(uuid);
        line
    }

    fn user_text(&mut self, w: &mut Writer, text: String) {
        let line = self.envelope(w, "user", json!({"role": "user", "content": text}));
        self.lines.push(line);
        self.messages += 1;
    }

    /// One API response written as one line per block, usage repeated with output growing.
    fn response(&mut self, w: &mut Writer, blocks: Vec<Value>) {
        let id = format!("msg_{}", w.token(24));
        let request = format!("req_{}", w.token(24));
        let input = w.rng.random_range(3..40);
        let cache_read = w.rng.random_range(5_000..60_000);
        let cache_write = w.rng.random_range(0..4_000);
        let cache_1h = match w.rng.random_range(0..10) {
            0..6 => 0,
            6..9 => cache_write,
            _ => w.rng.random_range(0..=cache_write),
        };
        let final_output = w.rng.random_range(20..1_500);
        let n = blocks.len();
        for (i, block) in blocks.into_iter().enumerate() {
            let output = if i + 1 == n {
                final_output
            } else {
                final_output * (i as i64 + 1) / (n as i64 + 1)
            };
            let message = json!({
                "model": self.model,
                "id": id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": if i + 1 == n { json!("end_turn") } else { Value::Null },
                "stop_sequence": null,
                "usage": {
                    "input_tokens": input,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": cache_write - cache_1h,
                        "ephemeral_1h_input_tokens": cache_1h
                    },
                    "output_tokens": output,
                    "service_tier": "standard"
                }
            });
            let mut line = self.envelope(w, "assistant", message);
            if let Some(obj) = line.as_object_mut() {
                obj.insert("requestId".into(), json!(request));
            }
            self.lines.push(line);
        }
        self.messages += 1;
    }

    fn tool_result(
        &mut self,
        w: &mut Writer,
        tool_id: &str,
        text: String,
        is_error: bool,
        extra: Value,
    ) {
        let message = json!({"role": "user", "content": [{
            "tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": is_error
        }]});
        let mut line = self.envelope(w, "user", message);
        if let Some(obj) = line.as_object_mut() {
            obj.insert("toolUseResult".into(), extra);
        }
        self.lines.push(line);
        self.messages += 1;
    }

    /// A `progress` record of the tool call `parent_tool_id` carrying `data`.
    fn progress(&mut self, w: &mut Writer, tool_id: &str, parent_tool_id: &str, data: Value) {
        let mut line = self.envelope(w, "progress", Value::Null);
        if let Some(obj) = line.as_object_mut() {
            obj.remove("message");
            obj.insert("data".into(), data);
            obj.insert("toolUseID".into(), json!(tool_id));
            obj.insert("parentToolUseID".into(), json!(parent_tool_id));
        }
        self.lines.push(line);
    }

    fn bash_progress(&mut self, w: &mut Writer, tool_id: &str) {
        let data = json!({"type": "bash_progress", "output": "running", "elapsedTimeSeconds": 2});
        self.progress(w, tool_id, tool_id, data);
    }

    /// One tool call and its result (`long` outputs as in a working session, else a few lines).
    fn tool_step(&mut self, w: &mut Writer, long: bool) {
        let tool_id = format!("toolu_{}", w.token(24));
        let (name, input, result, is_error) = tool_call(w, &self.cwd, long);
        self.response(
            w,
            vec![json!({"type": "tool_use", "id": tool_id, "name": name, "input": input})],
        );
        let extra = tool_use_result(name, &result);
        self.tool_result(w, &tool_id, result, is_error, extra);
    }

    /// A new subagent context of this session (its file is written by `write_subagent`).
    fn subagent(&self, agent: &str) -> Ctx {
        Ctx {
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            branch: self.branch.clone(),
            model: "claude-haiku-4-5-20251001",
            agent_id: Some(agent.to_string()),
            parent_uuid: None,
            lines: Vec::new(),
            messages: 0,
        }
    }

    /// `claude/projects/<project>/<session>.jsonl` of this session.
    fn path(&self, w: &Writer) -> std::path::PathBuf {
        let project = self.cwd.replace('/', "-");
        w.out
            .join("claude")
            .join("projects")
            .join(project)
            .join(format!("{}.jsonl", self.session_id))
    }

    /// Writes this (top-level) session's file and counts its messages.
    fn write(&mut self, w: &mut Writer) -> std::io::Result<()> {
        let lines = std::mem::take(&mut self.lines);
        w.write_lines(&self.path(w), &lines)?;
        w.report.messages += self.messages;
        Ok(())
    }

    /// Writes subagent `sub`'s file beside this session's (`<session>/subagents/agent-<id>.jsonl`)
    /// and counts its messages.
    fn write_subagent(&self, w: &mut Writer, sub: &mut Ctx) -> std::io::Result<()> {
        let agent = sub.agent_id.clone().unwrap_or_default();
        let path = self
            .path(w)
            .with_extension("")
            .join("subagents")
            .join(format!("agent-{agent}.jsonl"));
        let lines = std::mem::take(&mut sub.lines);
        w.write_lines(&path, &lines)?;
        w.report.messages += sub.messages;
        Ok(())
    }

    /// A Task call run by a subagent of one to three tool steps: the subagent's responses are
    /// streamed into this session's `agent_progress` records, and its own file is written except
    /// one time in twenty (then the progress records are the only place its usage is recorded).
    fn delegate(&mut self, w: &mut Writer) -> std::io::Result<()> {
        let tool_id = format!("toolu_{}", w.token(24));
        let prompt = w.sentence(5, 20);
        self.response(
            w,
            vec![
                json!({"type": "tool_use", "id": tool_id, "name": "Task", "input": {
                    "description": "Investigate", "prompt": prompt, "subagent_type": "Explore"
                }}),
            ],
        );
        let agent = w.token(7).to_lowercase();
        let mut sub = self.subagent(&agent);
        sub.user_text(w, prompt.clone());
        for _ in 0..w.rng.random_range(1..=3) {
            sub.tool_step(w, false);
        }
        let text = w.sentence(5, 40);
        sub.response(w, vec![json!({"type": "text", "text": text})]);
        let streamed: Vec<Value> = sub
            .lines
            .iter()
            .filter(|l| l.get("type").and_then(Value::as_str) == Some("assistant"))
            .map(|l| {
                json!({
                    "type": "assistant",
                    "timestamp": l.get("timestamp"),
                    "message": l.get("message"),
                    "requestId": l.get("requestId"),
                    "uuid": l.get("uuid"),
                })
            })
            .collect();
        for message in streamed {
            let data = json!({
                "message": message, "normalizedMessages": [], "type": "agent_progress",
                "prompt": prompt, "agentId": agent
            });
            let progress_id = format!("agent_msg_{}", w.token(24));
            self.progress(w, &progress_id, &tool_id, data);
        }
        let summary = w.sentence(5, 30);
        let total: i64 = w.rng.random_range(1_000..50_000);
        self.tool_result(
            w,
            &tool_id,
            summary,
            false,
            json!({"status": "completed", "prompt": prompt, "agentId": agent, "totalTokens": total}),
        );
        if w.rng.random_bool(0.95) {
            self.write_subagent(w, &mut sub)?;
        }
        Ok(())
    }
}

/// The `toolUseResult` Claude Code writes beside a tool result.
fn tool_use_result(name: &str, result: &str) -> Value {
    if name == "Bash" {
        json!({"stdout": result, "stderr": "", "interrupted": false, "isImage": false})
    } else {
        json!({"type": "text"})
    }
}

/// A random tool call: (name, input, result text, is_error); `long` gives outputs of tens to
/// hundreds of lines, else of a few.
fn tool_call(w: &mut Writer, cwd: &str, long: bool) -> (&'static str, Value, String, bool) {
    let failing = w.rng.random_bool(0.12);
    let (read_lines, output_lines) = if long {
        (20..=250, 5..=80)
    } else {
        (1..=6, 1..=4)
    };
    match w.rng.random_range(0..6) {
        0 => {
            let path = words::path(&mut w.rng, cwd);
            (
                "Read",
                json!({"file_path": path}),
                words::numbered_lines(&mut w.rng, *read_lines.start(), *read_lines.end()),
                false,
            )
        }
        1 => {
            let path = words::path(&mut w.rng, cwd);
            let old = w.sentence(2, 6);
            let new = w.sentence(2, 6);
            (
                "Edit",
                json!({"file_path": path, "old_string": old, "new_string": new}),
                format!("The file {path} has been updated."),
                false,
            )
        }
        2 => {
            let pattern = w.sentence(1, 2);
            (
                "Grep",
                json!({"pattern": pattern, "path": cwd}),
                w.sentence(5, 30),
                false,
            )
        }
        3 => (
            "Bash",
            json!({"command": "git status --short", "description": "Show status"}),
            " M src/lib.rs".to_string(),
            false,
        ),
        _ => {
            let command = if w.rng.random_bool(0.5) {
                "cargo test"
            } else {
                "cargo build --release"
            };
            let text = if failing {
                format!(
                    "Exit code 101\nerror: {}\n{}",
                    w.sentence(5, 20),
                    words::output_lines(
                        &mut w.rng,
                        *output_lines.start(),
                        *output_lines.end(),
                        cwd
                    )
                )
            } else {
                words::output_lines(&mut w.rng, *output_lines.start(), *output_lines.end(), cwd)
            };
            (
                "Bash",
                json!({"command": command, "description": "Run"}),
                text,
                failing,
            )
        }
    }
}

/// Writes one lean Claude Code session, and counts it in the report: 10 to 90 turns of a short
/// prompt and a one-block text answer (1 to 150 words of long-tail prose, `words::prose`); a quarter of the turns make a tool call
/// first (a few lines of output, some failing), and one session in ten delegates one turn to a
/// subagent (see `Ctx::delegate`).
pub fn lean_session(w: &mut Writer) -> std::io::Result<()> {
    let repo = REPOS[w.rng.random_range(0..REPOS.len())];
    let mut ctx = Ctx {
        session_id: w.uuid(),
        cwd: format!("/home/dev/{repo}"),
        branch: "main".into(),
        model: MODELS[w.rng.random_range(0..MODELS.len())],
        agent_id: None,
        parent_uuid: None,
        lines: Vec::new(),
        messages: 0,
    };
    let turns = w.rng.random_range(10..=90);
    let delegated = w.rng.random_bool(0.1).then(|| w.rng.random_range(0..turns));
    for turn in 0..turns {
        let prompt = w.prose(3, 20);
        ctx.user_text(w, prompt);
        if delegated == Some(turn) {
            ctx.delegate(w)?;
        } else if w.rng.random_bool(0.25) {
            ctx.tool_step(w, false);
        }
        let answer = w.prose(1, 150);
        ctx.response(w, vec![json!({"type": "text", "text": answer})]);
    }
    ctx.write(w)
}

/// Writes one Claude Code session (and its subagents) and counts it in the report.
pub fn session(w: &mut Writer) -> std::io::Result<()> {
    let repo = REPOS[w.rng.random_range(0..REPOS.len())];
    let mut ctx = Ctx {
        session_id: w.uuid(),
        cwd: format!("/home/dev/{repo}"),
        branch: if w.rng.random_bool(0.6) {
            "main".into()
        } else {
            format!("feature/{}", w.token(6).to_lowercase())
        },
        model: MODELS[w.rng.random_range(0..MODELS.len())],
        agent_id: None,
        parent_uuid: None,
        lines: Vec::new(),
        messages: 0,
    };
    let turns = w.rng.random_range(2..=9);
    let unfinished = w.rng.random_bool(0.05);
    let with_subagent = w.rng.random_bool(0.12);
    let mut subagents = Vec::new();
    for turn in 0..turns {
        let prompt = w.sentence(6, 60);
        ctx.user_text(w, prompt);
        let steps = w.rng.random_range(0..=4);
        for step in 0..steps {
            let mut blocks = Vec::new();
            if w.rng.random_bool(0.3) {
                blocks.push(json!({"type": "thinking", "thinking": w.sentence(10, 80), "signature": w.token(40)}));
            }
            blocks.push(json!({"type": "text", "text": w.sentence(5, 50)}));
            let tool_id = format!("toolu_{}", w.token(24));
            let subagent_here = with_subagent && turn == 0 && step == 0;
            let (name, input, result, is_error) = if subagent_here {
                let prompt = w.sentence(10, 40);
                (
                    "Task",
                    json!({"description": "Investigate", "prompt": prompt, "subagent_type": "Explore"}),
                    String::new(),
                    false,
                )
            } else {
                tool_call(w, &ctx.cwd, true)
            };
            blocks.push(
                json!({"type": "tool_use", "id": tool_id, "name": name, "input": input.clone()}),
            );
            ctx.response(w, blocks);
            let last = turn + 1 == turns && step + 1 == steps;
            if unfinished && last {
                break; // the transcript ends mid-turn: no result yet
            }
            if name == "Bash" && w.rng.random_bool(0.3) {
                ctx.bash_progress(w, &tool_id);
            }
            if subagent_here {
                let agent = w.token(7).to_lowercase();
                let prompt = input
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let summary = w.sentence(10, 40);
                subagents.push((agent.clone(), prompt.clone()));
                let duration: i64 = w.rng.random_range(5_000..90_000);
                let total: i64 = w.rng.random_range(1_000..50_000);
                ctx.tool_result(
                    w,
                    &tool_id,
                    summary,
                    false,
                    json!({
                        "status": "completed", "prompt": prompt, "agentId": agent,
                        "totalDurationMs": duration, "totalTokens": total
                    }),
                );
            } else {
                let extra = tool_use_result(name, &result);
                ctx.tool_result(w, &tool_id, result, is_error, extra);
            }
        }
        if !(unfinished && turn + 1 == turns && steps > 0) {
            let text = w.sentence(8, 120);
            ctx.response(w, vec![json!({"type": "text", "text": text})]);
        }
    }
    ctx.write(w)?;
    for (agent, prompt) in subagents {
        let mut sub = ctx.subagent(&agent);
        sub.user_text(w, prompt);
        for _ in 0..w.rng.random_range(1..=3) {
            sub.tool_step(w, true);
        }
        let text = w.sentence(10, 60);
        sub.response(w, vec![json!({"type": "text", "text": text})]);
        ctx.write_subagent(w, &mut sub)?;
    }
    Ok(())
}
