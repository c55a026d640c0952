//! An independent reading of transcripts, straight from the JSONL with serde_json, used as the
//! oracle for ingest figures. It shares no code with the ingest.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Figures of one Claude Code file's main session (sidechain records excluded).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ClaudeFigures {
    pub user_messages: i64,
    pub assistant_messages: i64,
    pub tool_uses: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub usage_rows: i64,
}

fn good_lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).expect("read");
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// Counts a Claude Code file ingested alone: user records with content, distinct assistant
/// `message.id`s, distinct tool_use ids, and tokens with each `message.id` billed once at the
/// largest value of each field — including the responses only the file's `progress` records
/// carry (a subagent's, whose own file is absent, so the file's session owns them).
pub fn claude(path: &Path, include_sidechain: bool) -> ClaudeFigures {
    let mut f = ClaudeFigures::default();
    let mut assistant_ids = HashSet::new();
    let mut tool_ids = HashSet::new();
    let mut usage: HashMap<String, [i64; 4]> = HashMap::new();
    let mut progress: HashMap<String, [i64; 4]> = HashMap::new();
    let counts = |u: &Value| {
        [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ]
        .map(|k| u[k].as_i64().unwrap_or(0))
    };
    let keep_max = |into: &mut HashMap<String, [i64; 4]>, id: String, c: [i64; 4]| {
        let slot = into.entry(id).or_insert([0; 4]);
        for (s, v) in slot.iter_mut().zip(c) {
            *s = (*s).max(v);
        }
    };
    for v in good_lines(path) {
        if !include_sidechain && v["isSidechain"] == Value::Bool(true) {
            continue;
        }
        match v["type"].as_str() {
            Some("user") => {
                let has_content = match &v["message"]["content"] {
                    Value::String(_) => true,
                    Value::Array(items) => items.iter().any(|i| {
                        matches!(
                            i["type"].as_str(),
                            Some("text" | "tool_result" | "image" | "document")
                        )
                    }),
                    _ => false,
                };
                if has_content {
                    f.user_messages += 1;
                }
            }
            Some("assistant") => {
                let id = v["message"]["id"].as_str().unwrap_or_default().to_string();
                assistant_ids.insert(id.clone());
                for item in v["message"]["content"].as_array().into_iter().flatten() {
                    if item["type"] == "tool_use" {
                        tool_ids.insert(item["id"].as_str().unwrap_or_default().to_string());
                    }
                }
                let u = &v["message"]["usage"];
                if u.is_object() {
                    keep_max(&mut usage, id, counts(u));
                }
            }
            Some("progress") => {
                let m = &v["data"]["message"]["message"];
                if m["usage"].is_object()
                    && let Some(id) = m["id"].as_str()
                {
                    keep_max(&mut progress, id.to_string(), counts(&m["usage"]));
                }
            }
            _ => {}
        }
    }
    for (id, c) in progress {
        keep_max(&mut usage, id, c);
    }
    f.assistant_messages = assistant_ids.len() as i64;
    f.tool_uses = tool_ids.len() as i64;
    f.usage_rows = usage.len() as i64;
    for [input, output, cache_read, cache_write] in usage.values() {
        f.input_tokens += input;
        f.output_tokens += output;
        f.cache_read_tokens += cache_read;
        f.cache_write_tokens += cache_write;
    }
    f
}

/// Figures of one Codex rollout.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CodexFigures {
    pub user_messages: i64,
    pub tool_calls: i64,
    pub tool_outputs: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub usage_rows: i64,
}

/// Counts a Codex rollout: user messages, tool calls and outputs, and tokens as the last
/// cumulative total (usage rows: the number of distinct successive totals).
pub fn codex(path: &Path) -> CodexFigures {
    let mut f = CodexFigures::default();
    let mut last_total: Option<Value> = None;
    for v in good_lines(path) {
        let p = &v["payload"];
        match (v["type"].as_str(), p["type"].as_str()) {
            (Some("response_item"), Some("message")) if p["role"] == "user" => f.user_messages += 1,
            (
                Some("response_item"),
                Some("function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"),
            ) => f.tool_calls += 1,
            (
                Some("response_item"),
                Some(
                    "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
                ),
            ) => f.tool_outputs += 1,
            (Some("event_msg"), Some("token_count")) => {
                let total = &p["info"]["total_token_usage"];
                if total.is_object() && last_total.as_ref() != Some(total) {
                    f.usage_rows += 1;
                    last_total = Some(total.clone());
                }
            }
            _ => {}
        }
    }
    if let Some(t) = last_total {
        let cached = t["cached_input_tokens"].as_i64().unwrap_or(0);
        f.input_tokens = t["input_tokens"].as_i64().unwrap_or(0) - cached;
        f.cache_read_tokens = cached;
        f.output_tokens = t["output_tokens"].as_i64().unwrap_or(0);
    }
    f
}

/// Token figures of one model over a whole Claude Code tree: billed responses and their tokens.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ModelUsage {
    pub responses: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub cache_write_5m_tokens: i64,
    pub cache_write_1h_tokens: i64,
}

/// Usage of a whole Claude Code tree, every billed response once (see [`claude_tree_usage`]).
#[derive(Debug, Default)]
pub struct TreeUsage {
    /// Per model (`None`: the records name none).
    pub by_model: BTreeMap<Option<String>, ModelUsage>,
    /// Responses seen only in a parent's `progress` records, per model.
    pub progress_only: BTreeMap<Option<String>, i64>,
    /// Files read.
    pub files: usize,
    /// Records carrying usage (assistant records and progress records).
    pub usage_records: i64,
    /// Assistant records with usage but no `message.id`: each one its own response.
    pub without_id: i64,
    /// Progress records with usage but no id: not counted (nothing ties them to a response).
    pub progress_without_id: i64,
    /// Response ids whose records name more than one model.
    pub conflicting_models: Vec<String>,
    /// Records whose `cache_creation` split does not add up to `cache_creation_input_tokens`.
    pub split_disagrees: i64,
}

impl TreeUsage {
    /// The sum over all models.
    pub fn total(&self) -> ModelUsage {
        let mut t = ModelUsage::default();
        for m in self.by_model.values() {
            t.responses += m.responses;
            t.input_tokens += m.input_tokens;
            t.output_tokens += m.output_tokens;
            t.cache_read_tokens += m.cache_read_tokens;
            t.cache_write_tokens += m.cache_write_tokens;
            t.cache_write_5m_tokens += m.cache_write_5m_tokens;
            t.cache_write_1h_tokens += m.cache_write_1h_tokens;
        }
        t
    }
}

/// One response as its records describe it: each token field's largest value, the models named.
#[derive(Default)]
struct Response {
    fields: [i64; 6],
    in_transcript: bool,
    /// (model, from a transcript record) → records naming it.
    models: BTreeMap<(Option<String>, bool), i64>,
}

impl Response {
    /// A transcript record's model wins over a progress record's; then the most frequent; then
    /// the smallest name, so the choice does not depend on the order files are read.
    fn model(&self) -> Option<String> {
        self.models
            .iter()
            .max_by(|((ma, ta), na), ((mb, tb), nb)| ta.cmp(tb).then(na.cmp(nb)).then(mb.cmp(ma)))
            .and_then(|((m, _), _)| m.clone())
    }
}

/// Token fields of one `usage` object: input, output, cache read, cache write, 5m, 1h. A record
/// with only `cache_creation_input_tokens` wrote 5-minute entries; the second value says whether
/// a split disagreed with the total (the total wins, as 5m).
fn usage_fields(u: &Value) -> ([i64; 6], bool) {
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    let write = n(&u["cache_creation_input_tokens"]);
    let split = &u["cache_creation"];
    let (w5, w1, disagrees) = if split.is_object() {
        let (w5, w1) = (
            n(&split["ephemeral_5m_input_tokens"]),
            n(&split["ephemeral_1h_input_tokens"]),
        );
        if w5 + w1 == write {
            (w5, w1, false)
        } else {
            (write, 0, true)
        }
    } else {
        (write, 0, false)
    };
    (
        [
            n(&u["input_tokens"]),
            n(&u["output_tokens"]),
            n(&u["cache_read_input_tokens"]),
            write,
            w5,
            w1,
        ],
        disagrees,
    )
}

/// Every `*.jsonl` under `dir`, sorted.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| e.path().to_path_buf())
        .collect();
    files.sort();
    files
}

/// Usage of every Claude Code file under `dir` (subagent files included), per model. A response
/// is a `message.id`, counted once across all files whichever records carry it: `assistant`
/// records (`message`) and a parent's `progress` records (`data.message.message`), so responses
/// recorded only in a parent's progress records count too. Each token field is its largest value
/// over the response's records. An assistant record with usage but no id is its own response.
pub fn claude_tree_usage(dir: &Path) -> TreeUsage {
    let mut out = TreeUsage::default();
    let mut responses: HashMap<String, Response> = HashMap::new();
    for path in jsonl_files(dir) {
        out.files += 1;
        let bytes = std::fs::read(&path).expect("read");
        for (line_no, line) in bytes.split(|b| *b == b'\n').enumerate() {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let (message, in_transcript) = match v["type"].as_str() {
                Some("assistant") => (&v["message"], true),
                Some("progress") => (&v["data"]["message"]["message"], false),
                _ => continue,
            };
            let usage = &message["usage"];
            if !usage.is_object() {
                continue;
            }
            out.usage_records += 1;
            let key = match message["id"].as_str() {
                Some(id) if !id.is_empty() => id.to_string(),
                _ if in_transcript => {
                    out.without_id += 1;
                    format!("{}:{line_no}", path.display())
                }
                // A progress record without an id cannot be told apart from its transcript.
                _ => {
                    out.progress_without_id += 1;
                    continue;
                }
            };
            let (fields, disagrees) = usage_fields(usage);
            out.split_disagrees += i64::from(disagrees);
            let r = responses.entry(key).or_default();
            for (kept, new) in r.fields.iter_mut().zip(fields) {
                *kept = (*kept).max(new);
            }
            r.in_transcript |= in_transcript;
            let model = message["model"].as_str().map(str::to_string);
            *r.models.entry((model, in_transcript)).or_default() += 1;
        }
    }
    for (id, r) in &responses {
        let named: HashSet<&Option<String>> = r.models.keys().map(|(m, _)| m).collect();
        if named.len() > 1 {
            out.conflicting_models.push(id.clone());
        }
        let model = r.model();
        if !r.in_transcript {
            *out.progress_only.entry(model.clone()).or_default() += 1;
        }
        let m = out.by_model.entry(model).or_default();
        m.responses += 1;
        m.input_tokens += r.fields[0];
        m.output_tokens += r.fields[1];
        m.cache_read_tokens += r.fields[2];
        m.cache_write_tokens += r.fields[3];
        m.cache_write_5m_tokens += r.fields[4];
        m.cache_write_1h_tokens += r.fields[5];
    }
    out.conflicting_models.sort();
    out
}

/// Per model, `[responses, input, output, cache_read, cache_write]` of pi session files under
/// `dir`, read straight from the JSONL: every assistant `message` entry with some non-zero
/// count (an aborted request bills nothing), a Google input that holds its cache reads (input
/// plus output make the whole total) without them, and a response copied into a fork, or
/// rewritten by pi with new entry ids, counted once: the same provider `responseId`, else the
/// same message time, provider, model and counts.
pub fn pi(dir: &Path) -> BTreeMap<String, [i64; 5]> {
    let files = jsonl_files(dir);
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for file in files {
        for entry in good_lines(&file) {
            if entry["type"] != "message" || entry["message"]["role"] != "assistant" {
                continue;
            }
            let m = &entry["message"];
            let u = &m["usage"];
            if !u.is_object() {
                continue;
            }
            let n = |k: &str| u[k].as_i64();
            let (cr, cw) = (n("cacheRead").unwrap_or(0), n("cacheWrite").unwrap_or(0));
            let (mut input, mut output) = (n("input").unwrap_or(0), n("output").unwrap_or(0));
            if n("input").is_none() && n("output").is_none() {
                output = (n("totalTokens").unwrap_or(0) - cr - cw).max(0);
            }
            let google = |k: &str| m[k].as_str().is_some_and(|s| s.starts_with("google"));
            let overlap = n("totalTokens").is_some_and(|t| cr > 0 && input + output + cr > t);
            if (google("provider") || google("api")) && overlap {
                input -= cr;
            }
            if [input, output, cr, cw] == [0, 0, 0, 0] {
                continue;
            }
            let key = match m["responseId"].as_str() {
                Some(r) => format!("response {r}"),
                None => format!(
                    "content {} {} {} {input} {output} {cr} {cw}",
                    m["timestamp"], m["provider"], m["model"]
                ),
            };
            let model = m["model"].as_str().unwrap_or("").to_string();
            seen.entry(key).or_insert((model, [input, output, cr, cw]));
        }
    }
    by_model(seen)
}

/// Qwen Code usage by model (count, uncached input, output, cache reads, cache writes): each
/// assistant record's `usageMetadata`, the prompt count less its cached tokens as input, the
/// total less the prompt as output, a record copied into a fork (the same `uuid`) once, and a
/// record with nothing billed skipped. `ui_telemetry` records are not read.
pub fn qwen(dir: &Path) -> BTreeMap<String, [i64; 5]> {
    let files = jsonl_files(dir);
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for file in files {
        for r in good_lines(&file) {
            let u = &r["usageMetadata"];
            if r["type"] != "assistant" || !u.is_object() {
                continue;
            }
            let n = |k: &str| u[k].as_i64().unwrap_or(0);
            let prompt = n("promptTokenCount");
            let cached = n("cachedContentTokenCount");
            let output = if n("totalTokenCount") > 0 {
                n("totalTokenCount") - prompt
            } else {
                n("candidatesTokenCount")
            };
            if prompt == 0 && output == 0 {
                continue;
            }
            let model = r["model"].as_str().unwrap_or("").to_string();
            let key = r["uuid"].as_str().unwrap_or("").to_string();
            seen.entry(key)
                .or_insert((model, [prompt - cached, output, cached, 0]));
        }
    }
    by_model(seen)
}

/// Responses (key → model and input, output, cache-read, cache-write tokens) summed by model:
/// count, then each kind.
fn by_model(seen: HashMap<String, (String, [i64; 4])>) -> BTreeMap<String, [i64; 5]> {
    let mut by_model: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    for (model, t) in seen.into_values() {
        let row = by_model.entry(model).or_default();
        row[0] += 1;
        for (i, v) in t.iter().enumerate() {
            row[i + 1] += v;
        }
    }
    by_model
}

/// Kimi CLI usage by model (count, input, output, cache reads, cache writes): each top-level
/// `StatusUpdate` line of each `wire.jsonl` with a `token_usage` (a subagent's steps, forwarded
/// into the parent's log inside `SubagentEvent`, are read from its own log only), once per
/// `message_id`. No line names a model.
pub fn kimi(dir: &Path) -> BTreeMap<String, [i64; 5]> {
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for file in jsonl_files(dir) {
        if file.file_name().is_none_or(|n| n != "wire.jsonl") {
            continue;
        }
        for (i, r) in good_lines(&file).into_iter().enumerate() {
            let m = &r["message"];
            let u = &m["payload"]["token_usage"];
            if m["type"] != "StatusUpdate" || !u.is_object() {
                continue;
            }
            let n = |k: &str| u[k].as_i64().unwrap_or(0);
            let t = [
                n("input_other"),
                n("output"),
                n("input_cache_read"),
                n("input_cache_creation"),
            ];
            let key = match m["payload"]["message_id"].as_str() {
                Some(id) => id.to_string(),
                None => format!("{} {i}", file.display()),
            };
            seen.entry(key).or_insert((String::new(), t));
        }
    }
    by_model(seen)
}

/// GitHub Copilot CLI usage by model (count, uncached input, output, cache reads, cache
/// writes): per log, each `session.shutdown`'s `modelMetrics`, one row per model whose run had
/// any calls or tokens. A run opened by a `session.resume` carrying `sessionLimits` (Copilot CLI
/// 1.0.66 on) ends in a running total, so the run's share is the difference from the previous
/// shutdown; otherwise the shutdown holds the run alone. Uncached input is `inputTokens` less
/// both cache counts. A copy of a log (the same shutdown event ids) counts once.
pub fn copilot(dir: &Path) -> BTreeMap<String, [i64; 5]> {
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for file in jsonl_files(dir) {
        let mut running = false;
        let mut previous: HashMap<String, [i64; 5]> = HashMap::new();
        for e in good_lines(&file) {
            let data = &e["data"];
            match e["type"].as_str() {
                Some("session.start") => running = false,
                Some("session.resume") => running = data.get("sessionLimits").is_some(),
                Some("session.usage_checkpoint") => running = true,
                Some("session.shutdown") => {
                    running |= data.get("agentMetrics").is_some();
                    let mut now = HashMap::new();
                    for (model, m) in data["modelMetrics"].as_object().into_iter().flatten() {
                        let u = &m["usage"];
                        let n = |k: &str| u[k].as_i64().unwrap_or(0);
                        let total = [
                            m["requests"]["count"].as_i64().unwrap_or(0),
                            n("inputTokens"),
                            n("outputTokens"),
                            n("cacheReadTokens"),
                            n("cacheWriteTokens"),
                        ];
                        let before = previous.get(model).copied().unwrap_or_default();
                        let run: Vec<i64> = (0..5)
                            .map(|i| total[i] - if running { before[i] } else { 0 })
                            .collect();
                        now.insert(model.clone(), total);
                        if run.iter().all(|v| *v == 0) {
                            continue;
                        }
                        let key = format!("{} {model}", e["id"]);
                        let tokens = [run[1] - run[3] - run[4], run[2], run[3], run[4]];
                        seen.entry(key).or_insert((model.clone(), tokens));
                    }
                    previous = now;
                }
                _ => {}
            }
        }
    }
    by_model(seen)
}

/// OpenCode (or Kilo CLI) usage by model (count, input, output, cache reads, cache writes), read
/// straight from the database's `message` table: every assistant row's `tokens` with some
/// count, the output with the reasoning added where it was kept apart (the row's `total` is
/// input, output and reasoning, with or without the cache counts; with no such total, the
/// session's release is `since` or later), and a row copied into a fork (new ids, the same
/// time, provider, model and counts) once. A message older than its session (a fork's copy) is
/// not judged by the session's release.
pub fn opencode(db: &Path, since: [u64; 3]) -> BTreeMap<String, [i64; 5]> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let mut stmt = conn
        .prepare(
            "SELECT s.version, s.time_created, m.data FROM message m
             JOIN session s ON s.id = m.session_id",
        )
        .expect("prepare");
    let rows: Vec<(String, i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for (version, session_created, data) in rows {
        let Ok(m) = serde_json::from_str::<Value>(&data) else {
            continue;
        };
        let t = &m["tokens"];
        if m["role"] != "assistant" || !t.is_object() {
            continue;
        }
        let n = |v: &Value| v.as_i64().unwrap_or(0);
        let v: Vec<u64> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
        let reasoning = n(&t["reasoning"]);
        let (i, o, cr, cw) = (
            n(&t["input"]),
            n(&t["output"]),
            n(&t["cache"]["read"]),
            n(&t["cache"]["write"]),
        );
        let sums = |r: i64| [i + o + r, i + cr + o + r, i + cr + cw + o + r];
        let total = t["total"].as_i64();
        let by_total = match total {
            Some(total) if sums(0).contains(&total) != sums(reasoning).contains(&total) => {
                Some(sums(reasoning).contains(&total))
            }
            _ => None,
        };
        // A fork's copies predate their session: its release did not write them.
        let copied = m["time"]["created"]
            .as_i64()
            .is_some_and(|t| t < session_created);
        let apart = reasoning > 0
            && (o < reasoning || by_total.unwrap_or_else(|| v >= since.to_vec() && !copied));
        let counts = [
            n(&t["input"]),
            n(&t["output"]) + if apart { reasoning } else { 0 },
            n(&t["cache"]["read"]),
            n(&t["cache"]["write"]),
        ];
        if counts == [0; 4] {
            continue;
        }
        let model = m["modelID"].as_str().unwrap_or("").to_string();
        // A fork's copy is the same row as stored, whatever release made the fork.
        let key = format!(
            "{} {} {model} {} {} {} {} {reasoning}",
            m["time"]["created"],
            m["providerID"],
            t["input"],
            t["output"],
            t["cache"]["read"],
            t["cache"]["write"]
        );
        seen.entry(key).or_insert((model, counts));
    }
    by_model(seen)
}

/// OpenCode usage by model from the JSON files of releases before 1.2 (`storage/`), read
/// straight from them: each message's `tokens`, or, where a message has more than one
/// `step-finish` part with tokens (releases before 0.8 ran several calls in one message), each
/// step's; before 1.0.62 (the session file's `version`) the input less the cache reads unless
/// the provider is Anthropic's or Bedrock's or the input is below them; the reasoning inside the
/// output (these releases kept it there); all-zero calls left out.
pub fn opencode_files(storage: &Path) -> BTreeMap<String, [i64; 5]> {
    let json = |p: &Path| -> Option<Value> { serde_json::from_slice(&std::fs::read(p).ok()?).ok() };
    let files = |dir: PathBuf| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut versions = HashMap::new();
    for project in files(storage.join("session")) {
        for session in files(project) {
            let id = session.file_stem().unwrap().to_string_lossy().into_owned();
            let version = json(&session).and_then(|s| s["version"].as_str().map(String::from));
            versions.insert(id, version.unwrap_or_default());
        }
    }
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for (session, version) in &versions {
        let v: Vec<u64> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
        for file in files(storage.join("message").join(session)) {
            let Some(m) = json(&file) else { continue };
            if m["role"] != "assistant" || !m["tokens"].is_object() {
                continue;
            }
            let id = file.file_stem().unwrap().to_string_lossy().into_owned();
            let steps: Vec<Value> = files(storage.join("part").join(&id))
                .iter()
                .filter_map(|p| json(p))
                .filter(|p| p["type"] == "step-finish" && p["tokens"].is_object())
                .map(|p| p["tokens"].clone())
                .collect();
            let calls = if steps.len() > 1 {
                steps
            } else {
                vec![m["tokens"].clone()]
            };
            let provider = m["providerID"].as_str().unwrap_or("");
            let anthropic = provider.starts_with("anthropic")
                || provider == "amazon-bedrock"
                || provider == "google-vertex-anthropic";
            for (k, t) in calls.iter().enumerate() {
                let n = |v: &Value| v.as_i64().unwrap_or(0);
                let (i, o, cr, cw) = (
                    n(&t["input"]),
                    n(&t["output"]),
                    n(&t["cache"]["read"]),
                    n(&t["cache"]["write"]),
                );
                let i = if v < vec![1, 0, 62] && !anthropic && cr > 0 && i >= cr {
                    i - cr
                } else {
                    i
                };
                if [i, o, cr, cw] == [0; 4] {
                    continue;
                }
                let model = m["modelID"].as_str().unwrap_or("").to_string();
                seen.insert(format!("{session} {id} {k}"), (model, [i, o, cr, cw]));
            }
        }
    }
    by_model(seen)
}

/// Goose usage by model (count, uncached input, output, cache reads, cache writes), read
/// straight from each `sessions.db`: every `usage_ledger` row with some count (the input less
/// both cache counts; a `carried_forward` row, which names no model, as it is), or, in a
/// database without a ledger, each session's `accumulated_*` totals as one row.
pub fn goose(dbs: &[&Path]) -> BTreeMap<String, [i64; 5]> {
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for (d, db) in dbs.iter().enumerate() {
        let conn =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .expect("open");
        let ledger: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'usage_ledger'",
                [],
                |r| r.get(0),
            )
            .expect("schema");
        let sql = if ledger > 0 {
            "SELECT id, COALESCE(model, ''), input_tokens, output_tokens,
                    COALESCE(cache_read_tokens, 0), COALESCE(cache_write_tokens, 0)
             FROM usage_ledger"
        } else {
            "SELECT id, COALESCE(json_extract(model_config_json, '$.model_name'), ''),
                    accumulated_input_tokens, accumulated_output_tokens, 0, 0 FROM sessions"
        };
        let mut stmt = conn.prepare(sql).expect("prepare");
        let rows = stmt
            .query_map([], |r| {
                let n = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0));
                Ok((
                    r.get::<_, rusqlite::types::Value>(0)?,
                    r.get::<_, String>(1)?,
                    [n(2)?, n(3)?, n(4)?, n(5)?],
                ))
            })
            .expect("query");
        for row in rows {
            let (id, model, [input, output, read, write]) = row.expect("row");
            if [input, output, read, write] == [0; 4] {
                continue;
            }
            seen.insert(
                format!("{d} {id:?}"),
                (model, [input - read - write, output, read, write]),
            );
        }
    }
    by_model(seen)
}

/// Amp usage by model, read straight from each thread file: each assistant message's `usage`
/// with some count (OpenAI's models' cache creation read as input; the model, where the usage
/// does not name it, from the ledger event of the message), and each `usageLedger` event
/// whose message has no usage (its input and output); once per thread and message.
pub fn amp(threads: &Path) -> BTreeMap<String, [i64; 5]> {
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(threads)
        .expect("threads")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    for file in files {
        let Ok(t) = serde_json::from_slice::<Value>(&std::fs::read(&file).expect("read")) else {
            continue;
        };
        let id = t["id"].as_str().unwrap_or_default();
        let events = t["usageLedger"]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut counted = HashSet::new();
        for m in t["messages"].as_array().into_iter().flatten() {
            let u = &m["usage"];
            if m["role"] != "assistant" || !u.is_object() {
                continue;
            }
            let number = m["messageId"].as_i64();
            let event = events.iter().find(|e| e["toMessageId"].as_i64() == number);
            let model = u["model"]
                .as_str()
                .or_else(|| event.and_then(|e| e["model"].as_str()))
                .unwrap_or("")
                .to_string();
            let n = |k: &str| u[k].as_i64().unwrap_or(0);
            let openai = model.starts_with("gpt-");
            let (cw, extra) = if openai {
                (0, n("cacheCreationInputTokens"))
            } else {
                (n("cacheCreationInputTokens"), 0)
            };
            let counts = [
                n("inputTokens") + extra,
                n("outputTokens"),
                n("cacheReadInputTokens"),
                cw,
            ];
            counted.extend(number);
            if counts != [0; 4] {
                seen.insert(format!("{id} {number:?}"), (model, counts));
            }
        }
        for e in &events {
            if e["toMessageId"]
                .as_i64()
                .is_some_and(|to| counted.contains(&to))
            {
                continue;
            }
            let n = |k: &str| e["tokens"][k].as_i64().unwrap_or(0);
            let model = e["model"].as_str().unwrap_or("").to_string();
            seen.insert(
                format!("{id} ledger {}", e["id"]),
                (model, [n("input"), n("output"), 0, 0]),
            );
        }
    }
    by_model(seen)
}

/// Cline, Roo Code and Kilo Code usage by model, read straight from every task folder under
/// `root` (`tasks/<id>/ui_messages.json`, with `task_metadata.json` and
/// `api_conversation_history.json` for the model): each `api_req_started` with a count (a
/// cancelled one too), and Cline's `subagent_usage` and checkpoint `deleted_api_reqs` sums (no
/// model); the input without the cache: Roo's and Kilo's OpenAI-protocol counts and Anthropic's
/// from 2025-10-31 (where not below the cache) less both cache counts, Cline's less them for the
/// providers whose input holds them.
pub fn cline_tasks(root: &Path) -> BTreeMap<String, [i64; 5]> {
    let inclusive = [
        "openai",
        "openai-codex",
        "litellm",
        "lmstudio",
        "xai",
        "zai",
        "fireworks",
        "doubao",
        "qwen",
        "hicap",
        "oca",
        "sapaicore",
    ];
    let mut seen: HashMap<String, (String, [i64; 4])> = HashMap::new();
    for entry in walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
    {
        let dir = entry.path();
        let ui_path = dir.join("ui_messages.json");
        let in_tasks = dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "tasks");
        if !in_tasks || !ui_path.is_file() {
            continue;
        }
        let read = |name: &str| -> Value {
            std::fs::read(dir.join(name))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null)
        };
        let roo = dir
            .to_string_lossy()
            .to_ascii_lowercase()
            .contains("roo-cline")
            || dir
                .to_string_lossy()
                .to_ascii_lowercase()
                .contains("kilo-code");
        let (ui, api, meta) = (
            read("ui_messages.json"),
            read("api_conversation_history.json"),
            read("task_metadata.json"),
        );
        let models: Vec<(i64, String)> = api
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| {
                let text = m["content"].to_string();
                let start = text.find("<model>")? + 7;
                let end = text[start..].find("</model>")? + start;
                Some((m["ts"].as_i64()?, text[start..end].to_string()))
            })
            .collect();
        for m in ui.as_array().into_iter().flatten() {
            let say = m["say"].as_str().unwrap_or("");
            if ![
                "api_req_started",
                "subagent_usage",
                "deleted_api_reqs",
                "api_req_deleted",
            ]
            .contains(&say)
            {
                continue;
            }
            let Ok(info) = serde_json::from_str::<Value>(m["text"].as_str().unwrap_or("")) else {
                continue;
            };
            let ts = m["ts"].as_i64().unwrap_or(0);
            let n = |k: &str| info[k].as_i64().unwrap_or(0);
            let (tin, out, cr, cw) = (
                n("tokensIn"),
                n("tokensOut"),
                n("cacheReads"),
                n("cacheWrites"),
            );
            let (model, provider) = if say != "api_req_started" {
                (String::new(), String::new())
            } else if let Some(id) = m["modelInfo"]["modelId"].as_str() {
                (
                    id.to_string(),
                    m["modelInfo"]["providerId"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            } else if roo {
                let next = models.iter().find(|(t, _)| *t >= ts).or(models.last());
                (
                    next.map(|(_, m)| m.clone()).unwrap_or_default(),
                    String::new(),
                )
            } else {
                let last = meta["model_usage"].as_array().and_then(|log| {
                    log.iter()
                        .rev()
                        .find(|e| e["ts"].as_i64().is_some_and(|t| t <= ts))
                });
                (
                    last.and_then(|e| e["model_id"].as_str())
                        .unwrap_or("")
                        .to_string(),
                    last.and_then(|e| e["model_provider_id"].as_str())
                        .unwrap_or("")
                        .to_string(),
                )
            };
            let without = (tin - cr - cw).max(0);
            let input = if say != "api_req_started" {
                tin
            } else if roo {
                match info["apiProtocol"].as_str() {
                    Some("anthropic") if ts >= 1_761_868_800_000 && tin >= cr + cw => without,
                    Some("anthropic") | None => tin,
                    Some(_) => without,
                }
            } else if inclusive.contains(&provider.as_str()) {
                without
            } else {
                tin
            };
            let counts = [input, out, cr, cw];
            if counts != [0; 4] {
                seen.insert(format!("{} {say} {ts}", dir.display()), (model, counts));
            }
        }
    }
    by_model(seen)
}

/// Aider's token reports by model, read from each `.aider.chat.history.md` under `root` line by
/// line: the model is the last `Model:` / `Main model:` / `Models:` line of the run; a report's
/// counts are the numbers before `sent`, `cache write`, `cache hit` (`cached`) and `received`
/// (`2.1k` = 2100, `5,244` = 5244); the uncached input is `sent` less the cache writes, and less
/// the hits for DeepSeek's and OpenAI's models. With the runs (`# aider chat started at`) and
/// the user's inputs (runs of `#### ` lines) of every file. No architect hand-offs in its
/// inputs.
pub fn aider(root: &Path) -> (BTreeMap<String, [i64; 5]>, usize, usize) {
    let mut out: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    let (mut runs, mut inputs) = (0, 0);
    for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
        if entry.file_name() != ".aider.chat.history.md" {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let mut model = String::new();
        let mut in_input = false;
        for line in text.lines() {
            let input = line.starts_with("#### ") && line.ends_with("  ");
            if input && !in_input {
                inputs += 1;
            }
            in_input = input;
            if line.starts_with("# aider chat started at ") {
                runs += 1;
                model.clear();
            }
            for prefix in ["> Model: ", "> Main model: ", "> Models: "] {
                if let Some(rest) = line.strip_prefix(prefix) {
                    model = rest.split(" with ").next().unwrap().trim().to_string();
                }
            }
            let Some(report) = line.strip_prefix("> Tokens: ") else {
                continue;
            };
            let words: Vec<&str> = report.split(' ').collect();
            let number = |label: &str| -> i64 {
                let Some(at) = words
                    .iter()
                    .position(|w| w.trim_end_matches([',', '.']) == label)
                else {
                    return 0;
                };
                let text = words[at - 1].replace(',', "");
                match text.strip_suffix('k') {
                    Some(k) => (k.parse::<f64>().unwrap() * 1000.0).round() as i64,
                    None => text.parse().unwrap(),
                }
            };
            let sent = number("sent");
            // `cache write` and `cache hit` are two words: the number before the first.
            let before = |label: &str| -> i64 {
                let Some(at) = report.find(label) else {
                    return 0;
                };
                let n = report[..at].rsplit(' ').next().unwrap().replace(',', "");
                match n.strip_suffix('k') {
                    Some(k) => (k.parse::<f64>().unwrap() * 1000.0).round() as i64,
                    None => n.parse().unwrap(),
                }
            };
            let write = before(" cache write");
            let hit = if report.contains(" cache hit") {
                before(" cache hit")
            } else {
                number("cached")
            };
            let received = number("received");
            let bare = model.rsplit('/').next().unwrap().to_lowercase();
            let inside = ["deepseek", "gpt-", "o1", "o3", "o4", "chatgpt"]
                .iter()
                .any(|p| bare.starts_with(p));
            let input = (sent - write - if inside { hit } else { 0 }).max(0);
            let row = out.entry(model.clone()).or_default();
            for (slot, n) in row.iter_mut().zip([1, input, received, hit, write]) {
                *slot += n;
            }
        }
    }
    (out, runs, inputs)
}

/// Cursor's conversations under `root`, read from each `state.vscdb` with SQL and JSON only:
/// the user and assistant messages (a user bubble with text; an assistant bubble with text,
/// reasoning or a tool call) of every conversation (global composers through their headers or
/// inline conversation, workspace composers, chat tabs), and the usage by model: each bubble
/// a header names whose `tokenCount` is not `{0, 0}`, once per `usageUuid` (else per bubble),
/// the bubble's model unless `default`, else its conversation's. With the user and assistant
/// lines (holding text, reasoning or a tool call) of each agent transcript
/// (`agent-transcripts/**/*.jsonl`) whose conversation no store holds.
pub fn cursor(root: &Path) -> (BTreeMap<String, [i64; 5]>, i64, i64) {
    let mut usage: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    let mut composers = std::collections::HashSet::new();
    let (mut users, mut assistants) = (0, 0);
    let named = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|m| !m.is_empty() && *m != "default")
            .map(str::to_string)
    };
    // The stores, those with Cursor's own table (the global ones) first: a workspace composer
    // also there is the global one's.
    let mut stores: Vec<(bool, PathBuf)> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "state.vscdb")
        .map(|e| {
            let conn = rusqlite::Connection::open(e.path()).unwrap();
            let global: i64 = conn
                .query_row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE name = 'cursorDiskKV'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            (global == 0, e.into_path())
        })
        .collect();
    stores.sort();
    for (_, store) in stores {
        let conn = rusqlite::Connection::open(&store).unwrap();
        let json = |sql: &str, key: &str| -> Option<Value> {
            conn.query_row(sql, [key], |r| {
                let v: rusqlite::types::Value = r.get(0)?;
                Ok(match v {
                    rusqlite::types::Value::Text(t) => t,
                    rusqlite::types::Value::Blob(b) => String::from_utf8(b).unwrap(),
                    _ => String::new(),
                })
            })
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
        };
        let mut count = |b: &Value| {
            let kind = &b["type"];
            if kind == 1 || kind == "user" {
                if b["text"].as_str().is_some_and(|t| !t.trim().is_empty()) {
                    users += 1;
                }
            } else if b["text"].as_str().is_some_and(|t| !t.is_empty())
                || b["rawText"].as_str().is_some_and(|t| !t.is_empty())
                || b["thinking"]["text"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty())
                || b["toolFormerData"].is_object()
            {
                assistants += 1;
            }
        };
        let global: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'cursorDiskKV'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if global > 0 {
            let keys: Vec<String> = conn
                .prepare("SELECT key FROM cursorDiskKV WHERE key LIKE 'composerData:%'")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            for key in keys {
                let c = json("SELECT value FROM cursorDiskKV WHERE key = ?1", &key).unwrap();
                let id = key.trim_start_matches("composerData:");
                composers.insert(id.to_string());
                let headers = c["fullConversationHeadersOnly"].as_array().cloned();
                let bubbles: Vec<Value> = match headers.filter(|h| !h.is_empty()) {
                    Some(h) => h
                        .iter()
                        .filter_map(|h| {
                            json(
                                "SELECT value FROM cursorDiskKV WHERE key = ?1",
                                &format!("bubbleId:{id}:{}", h["bubbleId"].as_str().unwrap()),
                            )
                        })
                        .collect(),
                    None => c["conversation"].as_array().cloned().unwrap_or_default(),
                };
                for b in &bubbles {
                    count(b);
                    let (input, output) = (
                        b["tokenCount"]["inputTokens"].as_i64().unwrap_or(0),
                        b["tokenCount"]["outputTokens"].as_i64().unwrap_or(0),
                    );
                    if input == 0 && output == 0 {
                        continue;
                    }
                    let key = b["usageUuid"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{id}:{}", b["bubbleId"]));
                    if !seen.insert(key) {
                        continue;
                    }
                    let model = named(b.pointer("/modelInfo/modelName"))
                        .or_else(|| named(c.pointer("/modelConfig/modelName")))
                        .unwrap_or_default();
                    let row = usage.entry(model).or_default();
                    for (slot, n) in row.iter_mut().zip([1, input, output, 0, 0]) {
                        *slot += n;
                    }
                }
            }
        }
        if let Some(all) = json(
            "SELECT value FROM ItemTable WHERE key = ?1",
            "composer.composerData",
        ) {
            for c in all["allComposers"].as_array().into_iter().flatten() {
                if !composers.insert(c["composerId"].as_str().unwrap_or_default().to_string()) {
                    continue;
                }
                for b in c["conversation"].as_array().into_iter().flatten() {
                    count(b);
                }
            }
        }
        if let Some(chat) = json(
            "SELECT value FROM ItemTable WHERE key = ?1",
            "workbench.panel.aichat.view.aichat.chatdata",
        ) {
            for t in chat["tabs"].as_array().into_iter().flatten() {
                for b in t["bubbles"].as_array().into_iter().flatten() {
                    count(b);
                }
            }
        }
    }
    for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
        let path = entry.path();
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        if !path.to_string_lossy().contains("agent-transcripts")
            || path.extension().is_none_or(|e| e != "jsonl")
            || composers.contains(stem.as_ref())
        {
            continue;
        }
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            // A line with text, reasoning or a tool call (or plain text content).
            let content = &v["message"]["content"];
            let said = content.is_string()
                || content.as_array().is_some_and(|blocks| {
                    blocks.iter().any(|b| {
                        matches!(b["type"].as_str(), Some("text" | "thinking" | "tool_use"))
                    })
                });
            match v["role"].as_str() {
                Some("user") if said => users += 1,
                Some("assistant") if said => assistants += 1,
                _ => {}
            }
        }
    }
    (usage, users, assistants)
}

/// Cline's SDK sessions under `root`, read from each `*.messages.json`: each assistant message
/// with `metrics`, once per message id (a fork copies its parent's), after the warning that
/// ends a resumed classic task's converted history; the uncached input is `inputTokens` less
/// both cache counts; the model is `modelInfo.id`.
pub fn cline_sdk(root: &Path) -> BTreeMap<String, [i64; 5]> {
    let mut out: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.to_string_lossy().ends_with(".messages.json"))
        .collect();
    files.sort();
    for file in files {
        let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let messages = doc["messages"].as_array().cloned().unwrap_or_default();
        let start = messages
            .iter()
            .position(|m| {
                m["role"] == "user"
                    && m.to_string()
                        .contains("Warning: this is a legacy conversation")
            })
            .map_or(0, |w| w + 1);
        for m in &messages[start..] {
            let metrics = &m["metrics"];
            if m["role"] != "assistant" || !metrics.is_object() {
                continue;
            }
            if !seen.insert(m["id"].as_str().unwrap().to_string()) {
                continue;
            }
            let n = |k: &str| metrics[k].as_i64().unwrap_or(0);
            if [
                "inputTokens",
                "outputTokens",
                "cacheReadTokens",
                "cacheWriteTokens",
            ]
            .iter()
            .all(|k| n(k) == 0)
            {
                continue;
            }
            let (input, read, write) = (
                n("inputTokens"),
                n("cacheReadTokens"),
                n("cacheWriteTokens"),
            );
            let model = m["modelInfo"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let row = out.entry(model).or_default();
            for (slot, v) in
                row.iter_mut()
                    .zip([1, input - read - write, n("outputTokens"), read, write])
            {
                *slot += v;
            }
        }
    }
    out
}
