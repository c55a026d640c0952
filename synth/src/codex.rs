//! Generated Codex CLI rollouts: `codex/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl` in the 0.104
//! shape: session_meta, turn_context, task_started/task_complete with turn ids, reasoning,
//! exec_command calls and outputs, and cumulative `token_count` events that sometimes repeat the
//! previous total (as the real CLI does).

use rand::Rng;
use serde_json::{Value, json};

use super::{Writer, rfc3339, words};

const REPOS: &[&str] = &["quarry", "widgets", "billing-api", "ml-pipeline"];

struct Totals {
    input: i64,
    cached: i64,
    output: i64,
    reasoning: i64,
}

fn line(w: &mut Writer, kind: &str, payload: Value) -> Value {
    let ts = w.tick(100, 3000);
    json!({"timestamp": ts, "type": kind, "payload": payload})
}

fn token_count(w: &mut Writer, totals: &mut Totals, fresh: bool) -> Value {
    if fresh {
        let input = w.rng.random_range(2_000..30_000);
        let cached = input * w.rng.random_range(0..90) / 100;
        let output = w.rng.random_range(30..2_000);
        let reasoning = output * w.rng.random_range(0..70) / 100;
        totals.input += input;
        totals.cached += cached;
        totals.output += output;
        totals.reasoning += reasoning;
    }
    let usage = json!({
        "input_tokens": totals.input, "cached_input_tokens": totals.cached,
        "output_tokens": totals.output, "reasoning_output_tokens": totals.reasoning,
        "total_tokens": totals.input + totals.output
    });
    line(
        w,
        "event_msg",
        json!({"type": "token_count", "info": {"total_token_usage": usage, "model_context_window": 258_400}}),
    )
}

/// Writes one Codex session and counts it in the report.
pub fn session(w: &mut Writer) -> std::io::Result<()> {
    let id = w.uuid();
    let repo = REPOS[w.rng.random_range(0..REPOS.len())];
    let cwd = format!("/home/dev/{repo}");
    let start_ms = w.clock_ms;
    let commit = w.token(40).to_lowercase();
    let mut lines = vec![line(
        w,
        "session_meta",
        json!({
            "id": id, "timestamp": rfc3339(start_ms), "cwd": cwd, "originator": "codex_cli_rs",
            "cli_version": "0.104.0", "source": "cli", "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, a coding agent."},
            "git": {"commit_hash": commit, "branch": "main",
                    "repository_url": format!("git@github.com:acme/{repo}.git")}
        }),
    )];
    let mut messages = 0u64;
    let mut totals = Totals {
        input: 0,
        cached: 0,
        output: 0,
        reasoning: 0,
    };
    let turns = w.rng.random_range(1..=6);
    let unfinished = w.rng.random_bool(0.08);
    for turn in 0..turns {
        let turn_id = w.uuid();
        lines.push(line(w, "turn_context", json!({"turn_id": turn_id, "cwd": cwd, "approval_policy": "on-request", "model": "gpt-5.3-codex"})));
        lines.push(line(
            w,
            "event_msg",
            json!({"type": "task_started", "turn_id": turn_id, "model_context_window": 258_400}),
        ));
        let prompt = w.sentence(5, 50);
        lines.push(line(w, "response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})));
        lines.push(line(
            w,
            "event_msg",
            json!({"type": "user_message", "message": prompt, "images": []}),
        ));
        messages += 1;
        for _ in 0..w.rng.random_range(0..=4) {
            let summary = w.sentence(3, 12);
            let encrypted = w.token(60);
            lines.push(line(w, "response_item", json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": null, "encrypted_content": encrypted})));
            let call_id = format!("call_{}", w.token(24));
            let (cmd, failing) = match w.rng.random_range(0..4) {
                0 => ("git diff --stat".to_string(), false),
                1 => (
                    format!("sed -n 1,80p {}", words::path(&mut w.rng, "."),),
                    false,
                ),
                2 => ("rg -n TODO src".to_string(), false),
                _ => ("cargo test".to_string(), w.rng.random_bool(0.2)),
            };
            let args = json!({"cmd": cmd, "workdir": cwd}).to_string();
            lines.push(line(w, "response_item", json!({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id})));
            let tc = token_count(w, &mut totals, true);
            lines.push(tc);
            if w.rng.random_bool(0.5) {
                let repeat = token_count(w, &mut totals, false);
                lines.push(repeat);
            }
            messages += 1;
            let code = if failing { 101 } else { 0 };
            let chunk = w.token(6);
            let body = words::output_lines(&mut w.rng, 3, 120, ".");
            let output = format!(
                "Chunk ID: {chunk}\nWall time: 0.5 seconds\nProcess exited with code {code}\nOutput:\n{body}"
            );
            lines.push(line(
                w,
                "response_item",
                json!({"type": "function_call_output", "call_id": call_id, "output": output}),
            ));
            messages += 1;
        }
        if unfinished && turn + 1 == turns {
            break; // no answer and no task_complete: an unfinished turn
        }
        let answer = w.sentence(10, 120);
        lines.push(line(w, "response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]})));
        lines.push(line(
            w,
            "event_msg",
            json!({"type": "agent_message", "message": answer}),
        ));
        let tc = token_count(w, &mut totals, true);
        lines.push(tc);
        messages += 1;
        lines.push(line(
            w,
            "event_msg",
            json!({"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer}),
        ));
    }
    let day = chrono::DateTime::from_timestamp_millis(start_ms).unwrap_or_default();
    let path = w
        .out
        .join("codex")
        .join("sessions")
        .join(day.format("%Y").to_string())
        .join(day.format("%m").to_string())
        .join(day.format("%d").to_string())
        .join(format!(
            "rollout-{}-{id}.jsonl",
            day.format("%Y-%m-%dT%H-%M-%S")
        ));
    w.write_lines(&path, &lines)?;
    w.report.messages += messages;
    Ok(())
}
