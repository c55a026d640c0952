//! `quarry gen`: a deterministic synthetic corpus in the real Claude Code and Codex on-disk
//! formats (realistic roles, tools, errors, subagents, repeated-usage lines, cumulative token
//! counts, unfinished tails), so demos and benchmarks at any scale go through the real ingest
//! path. `quarry demo` generates a small one, ingests it into a temporary archive and asks it
//! the [`showcase`] questions.
//!
//! This crate writes files and nothing else: it knows no archive, no ingest and no engine.

mod claude;
mod codex;
pub mod showcase;
mod words;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// How big a corpus to write.
#[derive(Debug, Clone, Copy)]
pub enum Size {
    /// About this many messages in all (sessions are added until it is reached).
    Messages(u64),
    /// Exactly this many top-level sessions.
    Sessions(u64),
}

/// What a generated session looks like.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Shape {
    /// Claude Code and Codex sessions with tools, thinking, subagents and long outputs
    /// (about 2.2 KB of transcript per message).
    #[default]
    Realistic,
    /// Claude Code sessions of many short turns (under 1 KB of transcript per message), for
    /// archives of tens of millions of messages: text answers in long-tail prose (half common
    /// words, half a Zipf-distributed tail of 50,000 pseudo-words, a few planted phrases, so
    /// searches have rare, medium and common terms), a quarter of the turns with a
    /// short tool call (some failing), 5-minute and 1-hour cache writes, and one session in ten
    /// delegating to a subagent whose responses also stream into the parent's progress records.
    Lean,
}

/// What `generate` wrote.
#[derive(Debug, Default, Serialize)]
pub struct GenReport {
    /// Top-level sessions (subagent files not counted).
    pub sessions: u64,
    /// Files written.
    pub files: u64,
    /// Logical messages (as ingest counts them), subagents included.
    pub messages: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// A base instant for generated times: 2026-01-05T09:00:00Z.
const BASE_MS: i64 = 1_767_603_600_000;

/// Shared state of one generation run.
pub(crate) struct Writer {
    pub rng: ChaCha8Rng,
    pub out: PathBuf,
    pub report: GenReport,
    pub clock_ms: i64,
}

impl Writer {
    /// A random lowercase-hex id shaped like a UUID.
    pub fn uuid(&mut self) -> String {
        let hex: String = (0..32)
            .map(|_| char::from_digit(self.rng.random_range(0..16), 16).unwrap_or('0'))
            .collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }

    /// A random alphanumeric id.
    pub fn token(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| char::from(ALPHABET[self.rng.random_range(0..ALPHABET.len())]))
            .collect()
    }

    /// Advances the clock by a random number of milliseconds and returns RFC 3339 text.
    pub fn tick(&mut self, min_ms: i64, max_ms: i64) -> String {
        self.clock_ms += self.rng.random_range(min_ms..=max_ms);
        rfc3339(self.clock_ms)
    }

    /// A sentence of `min..=max` words.
    pub fn sentence(&mut self, min: usize, max: usize) -> String {
        words::sentence(&mut self.rng, min, max)
    }

    /// A sentence of `min..=max` words of the lean shape's long-tail prose.
    pub fn prose(&mut self, min: usize, max: usize) -> String {
        words::prose(&mut self.rng, min, max)
    }

    /// Writes JSON lines to `path` (folders created) and counts them in the report.
    pub fn write_lines(&mut self, path: &Path, lines: &[serde_json::Value]) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = BufWriter::new(std::fs::File::create(path)?);
        let mut bytes = 0u64;
        for line in lines {
            let text = line.to_string();
            bytes += text.len() as u64 + 1;
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
        }
        file.flush()?;
        self.report.files += 1;
        self.report.bytes += bytes;
        Ok(())
    }
}

/// RFC 3339 text with milliseconds for epoch milliseconds.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Writes a corpus of `size` and `shape` into `out` from `seed`: `out/claude/projects/...` and
/// `out/codex/sessions/YYYY/MM/DD/...`. The same seed, size and shape write the same bytes.
pub fn generate(out: &Path, size: Size, shape: Shape, seed: u64) -> std::io::Result<GenReport> {
    std::fs::create_dir_all(out)?;
    let mut w = Writer {
        rng: ChaCha8Rng::seed_from_u64(seed),
        out: out.to_path_buf(),
        report: GenReport::default(),
        clock_ms: BASE_MS,
    };
    let mut index = 0u64;
    loop {
        let done = match size {
            Size::Messages(n) => w.report.messages >= n,
            Size::Sessions(n) => w.report.sessions >= n,
        };
        if done {
            break;
        }
        // Sessions start hours apart (minutes for lean ones, which come by the hundred thousand).
        let spacing_ms = match shape {
            Shape::Realistic => 5 * 3_600_000,
            Shape::Lean => 10 * 60_000,
        };
        w.clock_ms = BASE_MS + index as i64 * spacing_ms + w.rng.random_range(0..spacing_ms);
        if shape == Shape::Lean {
            claude::lean_session(&mut w)?;
        } else if w.rng.random_bool(0.7) {
            claude::session(&mut w)?;
        } else {
            codex::session(&mut w)?;
        }
        w.report.sessions += 1;
        index += 1;
    }
    Ok(w.report)
}
