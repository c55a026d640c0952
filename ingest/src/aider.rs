//! Aider's chat history (`Aider-AI/aider`, `aider/io.py`): the Markdown file
//! `.aider.chat.history.md` Aider appends to in the root of the git repository it runs in
//! (`--chat-history-file`, `$AIDER_CHAT_HISTORY_FILE`). Each run of Aider opens with
//! `# aider chat started at <local time>` and is one session here. In a run:
//!
//! - `#### <line>`: what the user typed, a line each (a slash command too: `#### /undo`);
//! - `> <line>`: Aider's own output (the model announcement, edits applied, commits, errors,
//!   the token report), the `> ` before the first line of each output only;
//! - anything else: the model's reply, reasoning inside `<thinking-content-…>` tags.
//!
//! Aider writes no counts per request, only a report after each reply, rounded for the screen:
//! `> Tokens: 2.1k sent, 1,270 cache hit, 456 received. Cost: $0.01 message, $0.05 session.`
//! (`format_tokens`: up to 999 exact, then one decimal of thousands below 10k, whole thousands
//! above; numbers with commas before August 2024; `Cost:` on the next line when both cache
//! counts are there, none for a model without a price). Counted from streamed replies the
//! numbers are Aider's own estimates. So each report is one usage row marked `approximate`
//! (`recorded_via`), which the sessions' sums, their cost and `quarry report` leave out unless
//! asked (docs/accounting.md). `sent` holds the cache writes (Aider adds them), and for
//! DeepSeek's and OpenAI's models the cache hits too (their prompt counts include them); the
//! message's cost is summed into the session's `reported_cost_usd` (never the running
//! `session` figure). The model is the last `Model:` / `Main model:` / `Models:` announced in
//! the run (Aider announces again after `/model`); in architect mode the report after the
//! editor's reply is the `Editor model:`'s: the architect's reply is logged again as a
//! `####` line for the editor, which is no one's typing (read as injected).
//!
//! Traps: `/undo` removes a commit but not what the requests cost (their rows stay); a run
//! cut by Ctrl-C has no reply; the file is written in the user's encoding (invalid UTF-8 is
//! replaced and reported); the header's time has no zone and is read in the local one.

use chrono::TimeZone;

use super::model::*;

/// The line that opens each run.
const HEADER: &str = "# aider chat started at ";

/// Whether a file's bytes are an Aider chat history: the first line with text is a run header.
pub fn is_history(bytes: &[u8]) -> bool {
    let start = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = start
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .find(|l| !l.iter().all(u8::is_ascii_whitespace));
    first.is_some_and(|l| l.starts_with(HEADER.as_bytes()))
}

/// Whether a file opens as an Aider chat history (its first 4 KiB).
pub fn is_history_file(path: &std::path::Path) -> bool {
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut head))
        .is_ok_and(|_| is_history(&head))
}

/// What a block of lines is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// `####` lines: the user's input.
    User,
    /// `>` lines and their continuations: Aider's output.
    Info,
    /// The model's reply.
    Reply,
}

/// The run being read.
struct Run {
    session: SessionDraft,
    /// The main model announced last, the editor model of architect mode.
    model: Option<String>,
    editor: Option<String>,
    /// Whether the next token report is the editor's (after an architect hand-off).
    editing: bool,
    /// The lines of the open block, its kind and first line's number.
    block: Option<(Block, usize, Vec<String>)>,
    /// The text of the last reply (to recognise the architect's hand-off).
    last_reply: Option<String>,
    /// Whether an output of Aider's is still open: its first line had the `> `, its last
    /// ends with two spaces, the lines between (blank ones too) have neither.
    output_open: bool,
    reports: usize,
    cost: Option<f64>,
}

/// Reads a chat history: one session per run.
pub fn parse(name: &str, bytes: &[u8], parsed: &mut ParsedFile) {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(e) => {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line),
                kind: "invalid_utf8",
                reason: "bytes that are not UTF-8, read as U+FFFD".into(),
            });
            String::from_utf8_lossy(bytes)
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let file = blake3::hash(name.as_bytes()).to_hex();
    let file = &file.as_str()[..12];
    let cwd = std::path::Path::new(name)
        .parent()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty());
    let mut run: Option<Run> = None;
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    let mut previous_blank = true;
    // Aider (0.4x on) ends each thing it writes with two spaces, so an output of several lines
    // runs to the line that ends so; a file without that habit (hand-written) ends an output at
    // a blank line.
    let marks_ends = text
        .lines()
        .any(|l| l.starts_with("> ") && l.trim_end_matches('\r').ends_with("  "));
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let number = i + 1;
        i += 1;
        if let Some(started) = line.strip_prefix(HEADER) {
            if let Some(done) = run.take() {
                parsed.sessions.push(finish(done));
            }
            let started = started.trim();
            let n = seen.entry(started.to_string()).or_insert(0);
            *n += 1;
            let native = match *n {
                1 => format!("{file}:{}", started.replace(' ', "T")),
                n => format!("{file}:{}#{n}", started.replace(' ', "T")),
            };
            let mut session = SessionDraft::new(Origin::Aider, native);
            session.created_at = local_time(started);
            session.updated_at = session.created_at;
            session.cwd = cwd.clone();
            session.push_event(
                "run",
                session.created_at,
                Surface::LogOnly,
                line.to_string(),
            );
            run = Some(Run {
                session,
                model: None,
                editor: None,
                editing: false,
                block: None,
                last_reply: None,
                output_open: false,
                reports: 0,
                cost: None,
            });
            previous_blank = true;
            continue;
        }
        let Some(r) = run.as_mut() else {
            // Text before the first header (a file cut at its start): no run to put it in.
            if !line.trim().is_empty() {
                parsed.diagnostics.push(Diagnostic {
                    file: name.to_string(),
                    line: Some(number),
                    kind: "bad_record",
                    reason: "text before the first `# aider chat started at` line".into(),
                });
            }
            continue;
        };
        let blank = line.trim().is_empty();
        let open = r.block.as_ref().map(|(b, _, _)| *b);
        if r.output_open && open == Some(Block::Info) {
            if let Some((_, _, lines)) = r.block.as_mut() {
                lines.push(line.trim_end().to_string());
            }
            // (A line of spaces alone, as in a test's output, is no end.)
            r.output_open = blank || !line.ends_with("  ");
            previous_blank = blank;
            continue;
        }
        // Aider ends each line it writes (input and its own output) with two spaces: inside a
        // reply, a `####` or `>` line without them is the reply's own Markdown.
        let aiders = line.ends_with("  ") || line.starts_with("> Tokens:");
        if let Some(input) = line.strip_prefix("####")
            && (input.is_empty() || input.starts_with(' '))
            && (open != Some(Block::Reply) || aiders)
        {
            let input = input.strip_prefix(' ').unwrap_or(input).trim_end();
            if open != Some(Block::User) {
                close(r);
                r.block = Some((Block::User, number, Vec::new()));
            }
            if let Some((_, _, lines)) = r.block.as_mut() {
                lines.push(input.to_string());
            }
        } else if line.starts_with('>') && (open != Some(Block::Reply) || aiders) {
            let output = line[1..].strip_prefix(' ').unwrap_or(&line[1..]).trim_end();
            if let Some(report) = output.strip_prefix("Tokens:") {
                // `Cost:` may follow on the next line, with no `>`.
                let mut report = report.to_string();
                let mut last = line;
                if let Some(next) = lines.get(i)
                    && next.starts_with("Cost: $")
                {
                    report.push(' ');
                    report.push_str(next.trim_end());
                    last = next;
                    i += 1;
                }
                close(r);
                usage(r, &report, line);
                // What follows the report in the same output (`Costs do not reflect caching`).
                r.block = Some((Block::Info, number, Vec::new()));
                r.output_open = marks_ends && !last.ends_with("  ");
                previous_blank = false;
                continue;
            }
            announce(r, output);
            if open != Some(Block::Info) {
                close(r);
                r.block = Some((Block::Info, number, Vec::new()));
            }
            if let Some((_, _, lines)) = r.block.as_mut() {
                lines.push(output.to_string());
            }
            r.output_open = marks_ends && !line.ends_with("  ");
        } else if blank {
            match open {
                Some(Block::Reply) => {
                    if let Some((_, _, lines)) = r.block.as_mut() {
                        lines.push(String::new());
                    }
                }
                Some(_) => close(r),
                None => {}
            }
        } else {
            match open {
                // The lines after the first of one output of Aider's, up to a blank line.
                Some(Block::Info) if !previous_blank => {
                    announce(r, line.trim_end());
                    if let Some((_, _, lines)) = r.block.as_mut() {
                        lines.push(line.trim_end().to_string());
                    }
                }
                Some(Block::Reply) => {
                    if let Some((_, _, lines)) = r.block.as_mut() {
                        lines.push(line.to_string());
                    }
                }
                _ => {
                    close(r);
                    r.block = Some((Block::Reply, number, vec![line.to_string()]));
                }
            }
        }
        previous_blank = blank;
    }
    if let Some(done) = run.take() {
        parsed.sessions.push(finish(done));
    }
    parsed.records = parsed.sessions.iter().map(|s| s.events.len()).sum();
}

/// The run's session, its last block closed.
fn finish(mut r: Run) -> SessionDraft {
    close(&mut r);
    r.session.reported_cost_usd = r.cost;
    r.session
}

/// The time of a run header (`2024-08-05 19:33:32`, the local time of the machine Aider ran on),
/// in epoch milliseconds, read in this machine's zone.
fn local_time(text: &str) -> Option<i64> {
    let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").ok()?;
    chrono::Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|t| t.timestamp_millis())
}

/// Notes a model announcement of Aider's (`Model: X with …`, `Main model: X with …`,
/// `Models: X with …, weak model Y`, `Editor model: X with …`).
fn announce(r: &mut Run, output: &str) {
    let model = |rest: &str| {
        let name = rest.split(" with ").next().unwrap_or(rest).trim();
        (!name.is_empty()).then(|| name.to_string())
    };
    if let Some(rest) = output
        .strip_prefix("Model: ")
        .or_else(|| output.strip_prefix("Main model: "))
        .or_else(|| output.strip_prefix("Models: "))
    {
        r.model = model(rest);
        r.editor = None;
    } else if let Some(rest) = output.strip_prefix("Editor model: ") {
        r.editor = model(rest);
    }
}

/// Ends the open block as a message.
fn close(r: &mut Run) {
    let Some((kind, _, mut lines)) = r.block.take() else {
        return;
    };
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    r.output_open = false;
    // What followed a token report, when nothing did.
    if lines.is_empty() && kind == Block::Info {
        return;
    }
    let text = lines.join("\n");
    let event = r
        .session
        .push_event(kind_name(kind), None, Surface::Current, text.clone());
    match kind {
        Block::User => {
            let mut message = MessageDraft::new(Role::User, None, event);
            // The architect's reply handed to the editor, logged as input.
            let handoff = r
                .last_reply
                .as_deref()
                .is_some_and(|reply| reply.trim() == text.trim() && !text.trim().is_empty());
            message.injected = handoff || text.starts_with('/');
            r.editing = handoff && r.editor.is_some();
            message.blocks.push(BlockDraft::text(BlockKind::Text, text));
            r.session.messages.push(message);
        }
        Block::Info => {
            let mut message = MessageDraft::new(Role::System, None, event);
            message.injected = true;
            message.blocks.push(BlockDraft::text(BlockKind::Text, text));
            r.session.messages.push(message);
        }
        Block::Reply => {
            let mut message = MessageDraft::new(Role::Assistant, None, event);
            message.model = if r.editing {
                r.editor.clone()
            } else {
                r.model.clone()
            };
            let (thinking, reply) = split_thinking(&text);
            if let Some(thinking) = thinking {
                message
                    .blocks
                    .push(BlockDraft::text(BlockKind::Thinking, thinking));
            }
            message
                .blocks
                .push(BlockDraft::text(BlockKind::Text, reply.clone()));
            r.last_reply = Some(reply);
            r.session.messages.push(message);
        }
    }
}

fn kind_name(kind: Block) -> &'static str {
    match kind {
        Block::User => "input",
        Block::Info => "output",
        Block::Reply => "reply",
    }
}

/// A reply's reasoning (`<thinking-content-…>…</thinking-content-…>`) and the rest.
fn split_thinking(text: &str) -> (Option<String>, String) {
    const OPEN: &str = "<thinking-content-";
    let Some(start) = text.find(OPEN) else {
        return (None, text.to_string());
    };
    let Some(open_end) = text[start..].find('>').map(|e| start + e + 1) else {
        return (None, text.to_string());
    };
    let close = "</thinking-content-";
    let (inner, after) = match text[open_end..].find(close) {
        Some(c) => {
            let end = open_end + c;
            let after = text[end..].find('>').map_or(text.len(), |e| end + e + 1);
            (&text[open_end..end], &text[after..])
        }
        None => (&text[open_end..], ""),
    };
    let rest = format!("{}{}", &text[..start], after);
    (Some(inner.trim().to_string()), rest.trim().to_string())
}

/// One token report as a usage row (`report`: the text after `Tokens:`, `Cost:` included).
fn usage(r: &mut Run, report: &str, line: &str) {
    let counts = Report::read(report);
    let time = r.session.created_at;
    let event = r
        .session
        .push_event("tokens", time, Surface::LogOnly, line.to_string());
    let Some(counts) = counts else {
        return;
    };
    let model = if r.editing {
        r.editor.clone()
    } else {
        r.model.clone()
    };
    r.editing = false;
    let hits_inside = model.as_deref().is_some_and(|m| {
        let m = m.rsplit('/').next().unwrap_or(m).to_ascii_lowercase();
        m.starts_with("deepseek")
            || m.starts_with("gpt-")
            || m.starts_with("o1")
            || m.starts_with("o3")
            || m.starts_with("o4")
            || m.starts_with("chatgpt")
    });
    let mut input = counts.sent.saturating_sub(counts.cache_write);
    if hits_inside {
        input = input.saturating_sub(counts.cache_hit);
    }
    r.reports += 1;
    let key = format!("aider:{}:{}", r.session.native_id, r.reports);
    let mut row = UsageDraft::keyed(
        key,
        model,
        Tokens {
            input: input.max(0),
            output: counts.received,
            reasoning: None,
            cache_read: counts.cache_hit,
            cache_write: counts.cache_write,
            cache_write_1h: 0,
        },
        time,
        event,
    );
    row.via = RecordedVia::Approximate;
    row.message_index = r
        .session
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant);
    r.session.usage.push(row);
    if let Some(cost) = counts.cost {
        r.cost = Some(r.cost.unwrap_or(0.0) + cost);
    }
}

/// The counts of one token report, as printed.
#[derive(Debug, PartialEq)]
struct Report {
    sent: i64,
    cache_write: i64,
    cache_hit: i64,
    received: i64,
    /// The message's cost (`$… message`, `$… request` before August 2024).
    cost: Option<f64>,
}

impl Report {
    /// ` 2.1k sent, 11,191 cache write, 1,270 cache hit, 456 received. Cost: $0.05 message, …`
    fn read(text: &str) -> Option<Report> {
        let (counts, cost) = match text.split_once("Cost:") {
            Some((c, cost)) => (c, Some(cost)),
            None => (text, None),
        };
        let mut report = Report {
            sent: 0,
            cache_write: 0,
            cache_hit: 0,
            received: 0,
            cost: None,
        };
        // Each count is the number just before its label; a number's own commas (`5,244`)
        // carry no space, the list's do.
        let count = |label: &str| -> Option<i64> {
            let at = counts.find(&format!(" {label}"))?;
            let before = &counts.as_bytes()[..at];
            // Bytes, not chars: the byte after the last non-digit is ASCII, a char boundary.
            let start = before
                .iter()
                .rposition(|b| !(b.is_ascii_digit() || matches!(b, b'.' | b',' | b'k')))
                .map_or(0, |i| i + 1);
            tokens(std::str::from_utf8(&before[start..]).ok()?)
        };
        report.received = count("received")?;
        report.sent = count("sent").unwrap_or(0);
        report.cache_write = count("cache write").unwrap_or(0);
        report.cache_hit = count("cache hit").or_else(|| count("cached")).unwrap_or(0);
        report.cost = cost.and_then(|c| {
            let amount = c.trim().strip_prefix('$')?;
            let amount: String = amount
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let rest = c.trim().strip_prefix('$')?[amount.len()..].trim_start();
            (rest.starts_with("message") || rest.starts_with("request"))
                .then(|| amount.parse::<f64>().ok())
                .flatten()
        });
        Some(report)
    }
}

/// A count as Aider prints it: `604`, `5,244`, `2.1k`, `12k`.
fn tokens(text: &str) -> Option<i64> {
    let text = text.replace(',', "");
    if let Some(k) = text.strip_suffix('k') {
        let thousands: f64 = k.parse().ok()?;
        return Some((thousands * 1000.0).round() as i64);
    }
    text.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn token_reports_of_every_release_read() {
        let r = |t: &str| Report::read(t).unwrap();
        let old = r(" 5,244 sent, 604 received. Cost: $0.02 request, $0.02 session.");
        assert_eq!((old.sent, old.received, old.cost), (5244, 604, Some(0.02)));
        let cached =
            r(" 492 sent, 1,278 cached, 72 received. Cost: $0.0026 message, $0.0026 session.");
        assert_eq!(
            (cached.sent, cached.cache_hit, cached.received),
            (492, 1278, 72)
        );
        assert_eq!(cached.cost, Some(0.0026));
        let both = r(
            " 12,963 sent, 11,191 cache write, 1,270 cache hit, 105 received. Cost: $0.05 message, $0.05 session.",
        );
        assert_eq!(
            (both.sent, both.cache_write, both.cache_hit, both.received),
            (12963, 11191, 1270, 105)
        );
        let k = r(" 2.1k sent, 9.9k cache hit, 12k received.");
        assert_eq!(
            (k.sent, k.cache_hit, k.received, k.cost),
            (2100, 9900, 12000, None)
        );
        assert!(Report::read(" sent, received").is_none());
        // What comes before a count may be any character (a damaged or translated line).
        let odd = r(" 1 sent, é2 received.");
        assert_eq!((odd.sent, odd.received), (1, 2));
        let replaced = r(" 3 sent,\u{fffd}4 received.");
        assert_eq!((replaced.sent, replaced.received), (3, 4));
        let huge = r(
            " 0 sent, 9223372036854775807 cache write, 9223372036854775807 cache hit, 1 received.",
        );
        assert_eq!(huge.received, 1);
        assert!(Report::read("").is_none());
    }

    #[test]
    fn a_history_is_known_by_its_first_header() {
        assert!(is_history(
            b"\n# aider chat started at 2024-08-05 19:33:32\n"
        ));
        assert!(is_history(
            b"\xEF\xBB\xBF# aider chat started at 2024-08-05 19:33:32\r\n"
        ));
        assert!(!is_history(
            b"# Notes\n# aider chat started at 2024-08-05 19:33:32\n"
        ));
        assert!(!is_history(b""));
    }

    /// The runs of each fixture a byte change or a cut does not reach read as before: never a
    /// panic, and a damaged run costs that run only.
    #[test]
    fn damage_costs_the_damaged_run_only() {
        let mut checked = 0;
        for rel in ["aider-ai", "mozgoslav", "traps"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/agents/aider")
                .join(rel)
                .join(".aider.chat.history.md");
            let whole = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            let read = |bytes: &[u8]| {
                let mut parsed = ParsedFile::default();
                parse(&name, bytes, &mut parsed);
                parsed
                    .sessions
                    .iter()
                    .map(|s| (s.native_id.clone(), s.messages.len(), s.usage.len()))
                    .collect::<Vec<_>>()
            };
            let runs = read(&whole);
            // Where each run starts.
            let text = String::from_utf8_lossy(&whole);
            let starts: Vec<usize> = text.match_indices(HEADER).map(|(i, _)| i).collect();
            assert_eq!(starts.len(), runs.len());
            let run_of = |at: usize| starts.iter().rposition(|s| *s <= at);
            for at in (1..whole.len()).step_by((whole.len() / 150).max(1)) {
                // Never a panic: a character of several bytes, or a byte that is no UTF-8,
                // anywhere (before a count of a report too).
                let mut accented = whole[..at].to_vec();
                accented.extend_from_slice("é".as_bytes());
                accented.extend_from_slice(&whole[at..]);
                read(&accented);
                let mut invalid = whole.clone();
                invalid[at] = 0xff;
                read(&invalid);
                let mut changed = whole.clone();
                changed[at] ^= 0x5a;
                let cut = &whole[..at];
                for (damaged, first_touched) in
                    [(read(&changed), run_of(at)), (read(cut), run_of(at))]
                {
                    for (i, run) in runs.iter().enumerate() {
                        // A damaged header joins its run to the one before.
                        if first_touched.is_some_and(|t| i + 1 < t) {
                            checked += 1;
                            assert!(
                                damaged.contains(run),
                                "{rel}: damaged at {at}, run {run:?} lost or changed"
                            );
                        }
                    }
                }
                // A changed byte reaches one run: the later ones read as before (but a changed
                // header may rename a later run of the same second: `#2`).
                let line_start = whole[..at]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1);
                // (A changed line end joins the next line, a header perhaps, to this one.)
                let in_header = whole[line_start..].starts_with(HEADER.as_bytes())
                    || (whole[at] == b'\n' && whole[at + 1..].starts_with(HEADER.as_bytes()));
                let after = read(&changed);
                for (i, run) in runs.iter().enumerate() {
                    if !in_header && run_of(at).is_some_and(|r| i > r + 1) {
                        checked += 1;
                        assert!(after.contains(run), "{rel}: changed at {at}, run {run:?}");
                    }
                }
            }
        }
        assert!(checked > 100, "{checked} runs checked");
    }
}
