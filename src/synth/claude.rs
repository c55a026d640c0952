//! Generated Claude Code sessions: `claude/projects/<project>/<session>.jsonl`, with assistant
//! responses split over several lines sharing `message.id` (usage repeated, output growing),
//! tool calls and results (some failing), progress records, and Task subagents written to
//! `<session>/subagents/agent-<id>.jsonl`.

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

    fn progress(&mut self, w: &mut Writer, tool_id: &str) {
        let mut line = self.envelope(w, "progress", Value::Null);
        if let Some(obj) = line.as_object_mut() {
            obj.remove("message");
            obj.insert(
                "data".into(),
                json!({"type": "bash_progress", "output": "running", "elapsedTimeSeconds": 2}),
            );
            obj.insert("toolUseID".into(), json!(tool_id));
            obj.insert("parentToolUseID".into(), json!(tool_id));
        }
        self.lines.push(line);
    }
}

/// A random tool call: (name, input, result text, is_error).
fn tool_call(w: &mut Writer, cwd: &str) -> (&'static str, Value, String, bool) {
    let failing = w.rng.random_bool(0.12);
    match w.rng.random_range(0..6) {
        0 => {
            let path = words::path(&mut w.rng, cwd);
            (
                "Read",
                json!({"file_path": path}),
                words::numbered_lines(&mut w.rng, 20, 250),
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
                    words::output_lines(&mut w.rng, 5, 60, cwd)
                )
            } else {
                words::output_lines(&mut w.rng, 5, 80, cwd)
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

/// Writes one lean Claude Code session: 10 to 90 turns of a short prompt and a one-block text
/// answer (1 to 150 words), and counts it in the report.
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
    for _ in 0..w.rng.random_range(10..=90) {
        let prompt = w.sentence(3, 20);
        ctx.user_text(w, prompt);
        let answer = w.sentence(1, 150);
        ctx.response(w, vec![json!({"type": "text", "text": answer})]);
    }
    let project = ctx.cwd.replace('/', "-");
    let path = w
        .out
        .join("claude")
        .join("projects")
        .join(&project)
        .join(format!("{}.jsonl", ctx.session_id));
    let lines = std::mem::take(&mut ctx.lines);
    w.write_lines(&path, &lines)?;
    w.report.messages += ctx.messages;
    Ok(())
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
                tool_call(w, &ctx.cwd)
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
                ctx.progress(w, &tool_id);
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
                let extra = if name == "Bash" {
                    json!({"stdout": result, "stderr": "", "interrupted": false, "isImage": false})
                } else {
                    json!({"type": "text"})
                };
                ctx.tool_result(w, &tool_id, result, is_error, extra);
            }
        }
        if !(unfinished && turn + 1 == turns && steps > 0) {
            let text = w.sentence(8, 120);
            ctx.response(w, vec![json!({"type": "text", "text": text})]);
        }
    }
    let project = ctx.cwd.replace('/', "-");
    let dir = w.out.join("claude").join("projects").join(&project);
    let path = dir.join(format!("{}.jsonl", ctx.session_id));
    let lines = std::mem::take(&mut ctx.lines);
    w.write_lines(&path, &lines)?;
    w.report.messages += ctx.messages;
    for (agent, prompt) in subagents {
        let mut sub = Ctx {
            session_id: ctx.session_id.clone(),
            cwd: ctx.cwd.clone(),
            branch: ctx.branch.clone(),
            model: "claude-haiku-4-5-20251001",
            agent_id: Some(agent.clone()),
            parent_uuid: None,
            lines: Vec::new(),
            messages: 0,
        };
        sub.user_text(w, prompt);
        for _ in 0..w.rng.random_range(1..=3) {
            let tool_id = format!("toolu_{}", w.token(24));
            let (name, input, result, is_error) = tool_call(w, &sub.cwd);
            sub.response(
                w,
                vec![json!({"type": "tool_use", "id": tool_id, "name": name, "input": input})],
            );
            sub.tool_result(w, &tool_id, result, is_error, json!({"type": "text"}));
        }
        let text = w.sentence(10, 60);
        sub.response(w, vec![json!({"type": "text", "text": text})]);
        let path = dir
            .join(&ctx.session_id)
            .join("subagents")
            .join(format!("agent-{agent}.jsonl"));
        let lines = std::mem::take(&mut sub.lines);
        w.write_lines(&path, &lines)?;
        w.report.messages += sub.messages;
    }
    Ok(())
}
