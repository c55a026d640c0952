//! Cost and reports (docs/cost.md): every Claude Code response of the real corpus priced by an
//! independent reckoning, a price change and a missing price, `--prices`, `sessions.cost_usd`,
//! and day boundaries of `report daily` in two zones across daylight-saving changes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::support::{corpus, ingest, quarry, quarry_json};

/// USD per million tokens: input, output, cache read, 5-minute write, 1-hour write, as
/// Anthropic's price page lists them (platform.claude.com/docs/en/about-claude/pricing), for
/// the Claude models of the corpus. Written here by hand, not read from data/prices.toml.
const ANTHROPIC: &[(&str, [f64; 5])] = &[
    ("claude-opus-4-6", [5.0, 25.0, 0.50, 6.25, 10.0]),
    ("claude-sonnet-4-20250514", [3.0, 15.0, 0.30, 3.75, 6.0]),
    ("claude-sonnet-4-5-20250929", [3.0, 15.0, 0.30, 3.75, 6.0]),
    ("claude-haiku-4-5-20251001", [1.0, 5.0, 0.10, 1.25, 2.0]),
];

/// One response's largest counts over its records: input, output, cache read, 5-minute and
/// 1-hour writes.
type Counts = [u64; 5];

fn number(v: &serde_json::Value, key: &str) -> Option<u64> {
    v.get(key).and_then(serde_json::Value::as_u64)
}

/// The (id, model, counts) of a Claude Code line that carries a response: an `assistant`
/// record's `message`, or a `progress` record's `data.message.message`.
fn response_of(line: &serde_json::Value) -> Option<(String, String, Counts)> {
    let message = match line.get("type")?.as_str()? {
        "assistant" => line.get("message")?,
        "progress" => line.get("data")?.get("message")?.get("message")?,
        _ => return None,
    };
    let usage = message.get("usage")?;
    let total_write = number(usage, "cache_creation_input_tokens").unwrap_or(0);
    // A split that adds up to the total is used; without one every write is a 5-minute one.
    let (write_5m, write_1h) = match usage.get("cache_creation") {
        Some(split) => {
            let (a, b) = (
                number(split, "ephemeral_5m_input_tokens").unwrap_or(0),
                number(split, "ephemeral_1h_input_tokens").unwrap_or(0),
            );
            if a + b == total_write {
                (a, b)
            } else {
                (total_write, 0)
            }
        }
        None => (total_write, 0),
    };
    Some((
        message.get("id")?.as_str()?.to_string(),
        message.get("model")?.as_str()?.to_string(),
        [
            number(usage, "input_tokens").unwrap_or(0),
            number(usage, "output_tokens").unwrap_or(0),
            number(usage, "cache_read_input_tokens").unwrap_or(0),
            write_5m,
            write_1h,
        ],
    ))
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// The per-model cost of every response of `dir`'s Claude Code files, one count per response
/// id, in cents, and the total in cents.
fn reckoned_cents(dir: &Path) -> (BTreeMap<String, i64>, i64) {
    let mut files = Vec::new();
    jsonl_files(dir, &mut files);
    let mut responses: HashMap<String, (String, Counts)> = HashMap::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some((id, model, counts)) = response_of(&value) else {
                continue;
            };
            let entry = responses.entry(id).or_insert((model, [0; 5]));
            for (kept, seen) in entry.1.iter_mut().zip(counts) {
                *kept = (*kept).max(seen);
            }
        }
    }
    assert!(
        responses.len() > 1000,
        "the corpus has {} responses",
        responses.len()
    );
    let prices: HashMap<&str, [f64; 5]> = ANTHROPIC.iter().copied().collect();
    let mut usd: BTreeMap<String, f64> = BTreeMap::new();
    for (model, counts) in responses.values() {
        let rates = prices
            .get(model.as_str())
            .unwrap_or_else(|| panic!("no hand-written price for {model}"));
        // Every prompt of the corpus is under Sonnet's 200,000-token long-context threshold,
        // so the standard rates apply throughout.
        assert!(counts[0] + counts[2] + counts[3] + counts[4] <= 200_000);
        let cost: f64 = counts
            .iter()
            .zip(rates)
            .map(|(&n, rate)| n as f64 * rate / 1e6)
            .sum();
        *usd.entry(model.clone()).or_default() += cost;
    }
    let total = (usd.values().sum::<f64>() * 100.0).round() as i64;
    let cents = usd
        .into_iter()
        .map(|(model, cost)| (model, (cost * 100.0).round() as i64))
        .collect();
    (cents, total)
}

/// `rows` of a JSON envelope as (first column, second column as cents).
fn cents_by_key(envelope: &serde_json::Value) -> BTreeMap<String, i64> {
    envelope["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row[0].as_str().unwrap().to_string(),
                (row[1].as_f64().unwrap() * 100.0).round() as i64,
            )
        })
        .collect()
}

#[test]
fn every_claude_code_response_of_the_corpus_costs_what_an_independent_reckoning_says() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let claude = corpus.join("claude-code");
    ingest(&archive, &[&claude]);
    let (expected, total) = reckoned_cents(&claude);
    let a = archive.to_str().unwrap();
    let by_model = quarry_json(&[
        "--archive",
        a,
        "--format",
        "json",
        "usage | group by model | agg sum:cost_usd",
    ]);
    assert_eq!(cents_by_key(&by_model), expected);
    // The sessions' sums add up to the same, and SQL reads the same column.
    let sessions = quarry_json(&[
        "--archive",
        a,
        "--format",
        "json",
        "sql",
        "SELECT u.model, SUM(u.cost_usd) FROM usage u GROUP BY u.model ORDER BY u.model",
    ]);
    assert_eq!(cents_by_key(&sessions), expected);
    let summed = quarry_json(&[
        "--archive",
        a,
        "--format",
        "json",
        "sessions | agg sum:cost_usd",
    ]);
    assert_eq!(
        (summed["rows"][0][0].as_f64().unwrap() * 100.0).round() as i64,
        total
    );
}

const SESSION_A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const SESSION_B: &str = "aaaaaaaa-0000-4000-8000-000000000002";

/// A Claude Code line: a response `id` of `model` at `at` with `input` and `output` tokens.
fn response_line(
    session: &str,
    n: usize,
    at: &str,
    id: &str,
    model: &str,
    input: u64,
    output: u64,
) -> String {
    serde_json::json!({
        "parentUuid": if n == 0 { serde_json::Value::Null } else { format!("u{}", n - 1).into() },
        "isSidechain": false, "userType": "external", "cwd": "/home/dev/cost",
        "sessionId": session, "version": "2.1.39", "gitBranch": "main",
        "type": "assistant", "uuid": format!("u{n}"), "timestamp": at, "requestId": format!("req_{id}"),
        "message": {"model": model, "id": id, "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": input, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": output}}
    })
    .to_string()
}

/// Writes a Claude Code project of `lines` per session and ingests it into a new archive.
fn archive_of(dir: &Path, sessions: &[(&str, Vec<String>)]) -> PathBuf {
    let project = dir.join("projects").join("-home-dev-cost");
    std::fs::create_dir_all(&project).unwrap();
    for (session, lines) in sessions {
        std::fs::write(
            project.join(format!("{session}.jsonl")),
            lines.join("\n") + "\n",
        )
        .unwrap();
    }
    let archive = dir.join("a.db");
    ingest(&archive, &[&dir.join("projects")]);
    archive
}

const PRICES: &str = r#"
schema = 1
unit = "per_million_tokens"
[[model]]
provider = "test"
id = "claude-test-1"
  [[model.price]]
  from = "2026-01-01"
  until = "2026-03-15"
  source = "a test"
  input = 2.0
  output = 10.0
  [[model.price]]
  from = "2026-03-15"
  source = "a test"
  input = 1.0
  output = 5.0
"#;

#[test]
fn a_price_change_prices_each_side_at_its_own_rate_and_no_price_is_null_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let archive = archive_of(
        dir.path(),
        &[
            (
                SESSION_A,
                vec![
                    response_line(
                        SESSION_A,
                        0,
                        "2026-03-14T23:59:00.000Z",
                        "msg_before",
                        "claude-test-1",
                        1_000_000,
                        100_000,
                    ),
                    response_line(
                        SESSION_A,
                        1,
                        "2026-03-15T00:00:01.000Z",
                        "msg_after",
                        "claude-test-1",
                        1_000_000,
                        100_000,
                    ),
                ],
            ),
            (
                SESSION_B,
                vec![
                    response_line(
                        SESSION_B,
                        0,
                        "2026-03-16T10:00:00.000Z",
                        "msg_priced",
                        "claude-test-1",
                        2_000_000,
                        0,
                    ),
                    response_line(
                        SESSION_B,
                        1,
                        "2026-03-16T10:01:00.000Z",
                        "msg_unknown",
                        "claude-nobody-9",
                        10,
                        10,
                    ),
                ],
            ),
        ],
    );
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, PRICES).unwrap();
    let (a, p) = (archive.to_str().unwrap(), prices.to_str().unwrap());
    let query =
        "usage | sort by time | select response_key, cost_usd, input_cost_usd, output_cost_usd";
    let out = quarry(&["--archive", a, "--prices", p, "--format", "json", query]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = envelope["rows"].as_array().unwrap();
    let cost = |key: &str, column: usize| {
        rows.iter()
            .find(|r| r[0] == format!("claude:{key}"))
            .map(|r| r[column].as_f64())
            .unwrap_or_else(|| panic!("no {key}"))
    };
    // Before 2026-03-15: 1M input × $2 + 0.1M output × $10; from it: × $1 and × $5.
    assert_eq!(cost("msg_before", 1), Some(3.0));
    assert_eq!(cost("msg_before", 2), Some(2.0));
    assert_eq!(cost("msg_before", 3), Some(1.0));
    assert_eq!(cost("msg_after", 1), Some(1.5));
    assert_eq!(cost("msg_priced", 1), Some(2.0));
    assert_eq!(cost("msg_unknown", 1), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no price for model claude-nobody-9: 1 response (its cost_usd"),
        "{stderr}"
    );
    // A session with an unpriced response has no total; the other has the sum.
    let sessions = quarry_json(&[
        "--archive",
        a,
        "--prices",
        p,
        "--format",
        "json",
        "sessions | sort by id | select session_id, cost_usd",
    ]);
    let rows = sessions["rows"].as_array().unwrap();
    assert_eq!(rows[0][1].as_f64(), Some(4.5));
    assert_eq!(rows[1][1].as_f64(), None);
    // A scan that reads a few sessions prices only their usage, with the same answer.
    let few = quarry_json(&[
        "--archive",
        a,
        "--prices",
        p,
        "--format",
        "json",
        "sessions | limit 2 | select session_id, cost_usd",
    ]);
    let mut costs: Vec<Option<f64>> = few["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_f64())
        .collect();
    costs.sort_by(|x, y| x.partial_cmp(y).unwrap());
    assert_eq!(costs, [None, Some(4.5)]);
    // The note counts the responses of the sessions read, not the archive's.
    let out = quarry(&[
        "--archive",
        a,
        "--format",
        "json",
        &format!("sessions where session:claude-code-session:{SESSION_A} | select cost_usd"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no price for model claude-test-1: 2 responses"),
        "{stderr}"
    );
    assert!(!stderr.contains("claude-nobody-9"), "{stderr}");
    // Without --prices the bundled table knows neither model: the answers change.
    let out = quarry(&["--archive", a, "--format", "json", query]);
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        envelope["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r[1].is_null())
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("no price for model claude-test-1: 3 responses")
    );
    // A broken table is refused, naming the file.
    std::fs::write(
        &prices,
        "schema = 1\n[[model]]\nprovider = \"x\"\nid = \"m\"\n",
    )
    .unwrap();
    let out = quarry(&["--archive", a, "--prices", p, query]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("m has no [[model.price]]"));
}

/// (day, input tokens) of `report daily` in `zone`.
fn days_in(archive: &str, zone: &str) -> Vec<(String, u64)> {
    let report = quarry_json(&[
        "--archive",
        archive,
        "--tz",
        zone,
        "--format",
        "json",
        "report",
        "daily",
        "--no-refresh",
    ]);
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["period"].as_str().unwrap().to_string(),
                r["input_tokens"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn report_daily_puts_responses_near_midnight_on_the_days_of_the_zone_across_daylight_saving() {
    let dir = tempfile::tempdir().unwrap();
    let model = "claude-sonnet-4-5-20250929";
    let archive = archive_of(
        dir.path(),
        &[(
            SESSION_A,
            vec![
                // Los Angeles moves to PDT at 2026-03-08T10:00Z: 07:30Z is 23:30 PST on the 7th.
                response_line(
                    SESSION_A,
                    0,
                    "2026-03-08T07:30:00.000Z",
                    "msg_c",
                    model,
                    1,
                    1,
                ),
                // A day later it is 00:30 PDT on the 9th (PST would say 23:30 on the 8th).
                response_line(
                    SESSION_A,
                    1,
                    "2026-03-09T07:30:00.000Z",
                    "msg_d",
                    model,
                    10,
                    1,
                ),
                // Warsaw moves to CEST at 2026-03-29T01:00Z: 23:30Z is 00:30 CET on the 29th.
                response_line(
                    SESSION_A,
                    2,
                    "2026-03-28T23:30:00.000Z",
                    "msg_a",
                    model,
                    100,
                    1,
                ),
                // A day later it is 00:30 CEST on the 30th (CET would say 23:30 on the 29th).
                response_line(
                    SESSION_A,
                    3,
                    "2026-03-29T22:30:00.000Z",
                    "msg_b",
                    model,
                    1000,
                    1,
                ),
            ],
        )],
    );
    let a = archive.to_str().unwrap();
    let day = |d: &str, n: u64| (d.to_string(), n);
    assert_eq!(
        days_in(a, "Europe/Warsaw"),
        vec![
            day("2026-03-08", 1),
            day("2026-03-09", 10),
            day("2026-03-29", 100),
            day("2026-03-30", 1000)
        ]
    );
    assert_eq!(
        days_in(a, "America/Los_Angeles"),
        vec![
            day("2026-03-07", 1),
            day("2026-03-09", 10),
            day("2026-03-28", 100),
            day("2026-03-29", 1000)
        ]
    );
    // --since and --until are days of the zone too.
    let report = quarry_json(&[
        "--archive",
        a,
        "--tz",
        "Europe/Warsaw",
        "--format",
        "json",
        "report",
        "daily",
        "--no-refresh",
        "--since",
        "20260329",
        "--until",
        "2026-03-29",
    ]);
    assert_eq!(report["rows"].as_array().unwrap().len(), 1);
    assert_eq!(report["totals"]["input_tokens"], 100);
    // The table has thousands separators, cents and a totals row.
    let out = quarry(&[
        "--archive",
        a,
        "--tz",
        "UTC",
        "report",
        "monthly",
        "--no-refresh",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("1,111") && text.contains("Total") && text.contains("$0.00"),
        "{text}"
    );
    // CSV keeps the report's column order, keys first.
    let out = quarry(&[
        "--archive",
        a,
        "--tz",
        "UTC",
        "--format",
        "csv",
        "report",
        "daily",
        "--no-refresh",
    ]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.starts_with("period,responses,input_tokens,output_tokens,cache_write_tokens,cache_read_tokens,total_tokens,cost_usd\n2026-03-08,1,1,1,"),
        "{csv}"
    );
    // --explain shows the query of the language, which runs as it is.
    let out = quarry(&["report", "weekly", "--by", "model", "--explain"]);
    let query = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        query.starts_with(
            "usage where NOT recorded_via:approximate | group by time:week, model | agg"
        ),
        "{query}"
    );
    let answer = quarry_json(&["--archive", a, "--tz", "UTC", "--format", "json", &query]);
    // Weeks start on Monday: Sunday the 8th, Monday the 9th, and Saturday 28th with Sunday 29th.
    assert_eq!(answer["rows"].as_array().unwrap().len(), 3);
}

/// Runs quarry with `env` set (and nothing of this machine's own transcripts or archive).
fn quarry_env(args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"));
    command.args(args).env_remove("QUARRY_ARCHIVE");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

#[test]
fn a_report_first_reads_new_and_changed_transcripts_from_the_default_locations() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = home.join(".claude/projects/-home-dev-cost");
    std::fs::create_dir_all(&project).unwrap();
    let model = "claude-haiku-4-5-20251001";
    let file = project.join(format!("{SESSION_A}.jsonl"));
    let first = response_line(
        SESSION_A,
        0,
        "2026-05-01T10:00:00.000Z",
        "msg_1",
        model,
        1_000_000,
        0,
    );
    std::fs::write(&file, format!("{first}\n")).unwrap();
    let archive = dir.path().join("a.db");
    let env = [
        ("HOME", home.as_path()),
        ("CLAUDE_CONFIG_DIR", &home.join(".claude")),
        ("CODEX_HOME", &home.join(".codex")),
    ];
    let a = archive.to_str().unwrap();
    let args = [
        "--archive",
        a,
        "--tz",
        "UTC",
        "--format",
        "json",
        "report",
        "daily",
    ];
    let run = |args: &[&str]| {
        let out = quarry_env(args, &env);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (report, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (report, stderr) = run(&args);
    assert!(
        stderr.contains("refreshed: read 1 new or changed transcript files"),
        "{stderr}"
    );
    // 1M input tokens of Haiku 4.5 at $1 per million.
    assert_eq!(report["totals"]["cost_usd"].as_f64(), Some(1.0));
    // Nothing changed: nothing read.
    let (again, stderr) = run(&args);
    assert!(!stderr.contains("refreshed"), "{stderr}");
    assert_eq!(again["rows"], report["rows"]);
    // An appended response shows in the next report; --no-refresh leaves it out.
    let second = response_line(
        SESSION_A,
        1,
        "2026-05-02T10:00:00.000Z",
        "msg_2",
        model,
        0,
        1_000_000,
    );
    std::fs::write(&file, format!("{first}\n{second}\n")).unwrap();
    // A reader scope may not write the archive: its report does not read the change.
    std::fs::write(
        dir.path().join("scopes.toml"),
        "[scope.reader]\nsessions = \"repo:cost\"\n",
    )
    .unwrap();
    let out = quarry_env(
        &["--archive", a, "--scope", "reader", "report", "daily"],
        &env,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("without refreshing it") && !stderr.contains("refreshed"),
        "{stderr}"
    );
    let (stale, _) = run(&[&args[..], &["--no-refresh"]].concat());
    assert_eq!(stale["rows"].as_array().unwrap().len(), 1);
    let (fresh, _) = run(&args);
    assert_eq!(fresh["rows"].as_array().unwrap().len(), 2);
    assert_eq!(fresh["totals"]["cost_usd"].as_f64(), Some(6.0));
    // The refresh does not read a file whose size is the archived size and which was last
    // modified before it was archived: a same-size rewrite dated in the past goes unseen
    // (the quick check's documented blind spot), which shows the file was not read.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"input_tokens\":1000000", "\"input_tokens\":9000000");
    std::fs::write(&file, text).unwrap();
    let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(past)
        .unwrap();
    let (quick, stderr) = run(&args);
    assert!(!stderr.contains("refreshed"), "{stderr}");
    assert_eq!(quick["totals"]["cost_usd"].as_f64(), Some(6.0));
}

#[test]
fn report_blocks_marks_the_active_window_and_says_it_is_an_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let model = "claude-haiku-4-5-20251001";
    let archive = archive_of(
        dir.path(),
        &[(
            SESSION_A,
            vec![
                response_line(
                    SESSION_A,
                    0,
                    "2026-01-01T09:17:00.000Z",
                    "msg_1",
                    model,
                    1_000_000,
                    0,
                ),
                response_line(
                    SESSION_A,
                    1,
                    "2026-01-01T13:59:00.000Z",
                    "msg_2",
                    model,
                    1_000_000,
                    0,
                ),
                response_line(
                    SESSION_A,
                    2,
                    "2026-01-01T14:00:00.000Z",
                    "msg_3",
                    model,
                    2_000_000,
                    0,
                ),
                response_line(
                    SESSION_A,
                    3,
                    "2026-01-01T23:30:00.000Z",
                    "msg_4",
                    model,
                    4_000_000,
                    0,
                ),
            ],
        )],
    );
    let a = archive.to_str().unwrap();
    let blocks = |now_text: &str, format: &str| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"));
        let out = command
            .args([
                "--archive",
                a,
                "--format",
                format,
                "report",
                "blocks",
                "--no-refresh",
            ])
            .env("QUARRY_NOW", now_text)
            .env_remove("QUARRY_ARCHIVE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let report: serde_json::Value =
        serde_json::from_str(&blocks("2026-01-02T00:00:00Z", "json")).unwrap();
    assert_eq!(report["estimate"], true);
    let windows = report["blocks"].as_array().unwrap();
    let starts: Vec<&str> = windows
        .iter()
        .map(|b| b["start"].as_str().unwrap())
        .collect();
    assert_eq!(
        starts,
        [
            "2026-01-01T09:00:00Z",
            "2026-01-01T14:00:00Z",
            "2026-01-01T23:00:00Z"
        ]
    );
    let costs: Vec<f64> = windows
        .iter()
        .map(|b| b["cost_usd"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, [2.0, 2.0, 4.0]);
    let active: Vec<bool> = windows
        .iter()
        .map(|b| b["active"].as_bool().unwrap())
        .collect();
    assert_eq!(active, [false, false, true]);
    let table = blocks("2026-01-02T00:00:00Z", "table");
    assert!(
        table.contains("23:00 – 04:00 ACTIVE") && table.contains("estimate"),
        "{table}"
    );
    let later = blocks("2026-01-02T05:00:00Z", "table");
    assert!(
        later.contains("23:00 – 04:00 ") && !later.contains("04:00 ACTIVE"),
        "{later}"
    );
}

#[test]
fn quarry_prices_shows_the_table_in_force_with_its_dates_and_sources() {
    let out = quarry(&["prices", "claude-sonnet-4-5"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("2025-09-29 (release)") && text.contains("litellm 1.110.2"),
        "{text}"
    );
    assert!(
        text.contains("platform.claude.com"),
        "the release date's source: {text}"
    );
    let all = quarry_json(&["--format", "json", "prices"]);
    assert_eq!(all["models"].as_array().unwrap().len(), 59);
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("p.toml");
    std::fs::write(&prices, PRICES).unwrap();
    let other = quarry_json(&[
        "--prices",
        prices.to_str().unwrap(),
        "--format",
        "json",
        "prices",
    ]);
    let ids: Vec<&str> = other["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["claude-test-1"]);
    assert_eq!(other["models"][0]["periods"][0]["until"], "2026-03-15");
}
