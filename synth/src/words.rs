//! A small vocabulary of programming-session words for generated text.

use rand::Rng;

const WORDS: &[&str] = &[
    "the",
    "parser",
    "test",
    "fails",
    "because",
    "index",
    "query",
    "cache",
    "refactor",
    "module",
    "function",
    "error",
    "timeout",
    "database",
    "schema",
    "migration",
    "build",
    "release",
    "config",
    "handler",
    "request",
    "response",
    "session",
    "token",
    "stream",
    "batch",
    "column",
    "row",
    "filter",
    "sort",
    "group",
    "percentile",
    "latency",
    "memory",
    "thread",
    "lock",
    "retry",
    "checkout",
    "branch",
    "commit",
    "review",
    "fix",
    "add",
    "remove",
    "update",
    "check",
    "why",
    "does",
    "this",
    "that",
    "with",
    "from",
    "into",
    "when",
    "then",
    "should",
    "could",
    "we",
    "it",
    "is",
    "not",
    "and",
    "or",
    "a",
    "to",
    "of",
    "in",
    "for",
    "on",
    "sqlite",
    "arrow",
    "parquet",
    "datafusion",
    "rust",
    "cargo",
    "clippy",
    "lint",
    "docs",
    "README",
    "benchmark",
    "ingest",
    "archive",
    "transcript",
    "subagent",
    "tool",
    "shell",
    "grep",
    "edit",
    "write",
];

/// A sentence of `min..=max` words, capitalised, ending with a full stop.
pub fn sentence(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max.max(min));
    let mut out = String::with_capacity(n * 7);
    for i in 0..n {
        let word = WORDS[rng.random_range(0..WORDS.len())];
        if i > 0 {
            out.push(' ');
        }
        if i == 0 {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            out.push_str(word);
        }
    }
    out.push('.');
    out
}

/// A file path of a generated project.
pub fn path(rng: &mut impl Rng, root: &str) -> String {
    const DIRS: &[&str] = &["src", "src/query", "src/ingest", "tests", "docs", "benches"];
    const FILES: &[&str] = &[
        "lib.rs",
        "main.rs",
        "parser.rs",
        "plan.rs",
        "store.rs",
        "README.md",
        "mod.rs",
    ];
    format!(
        "{root}/{}/{}",
        DIRS[rng.random_range(0..DIRS.len())],
        FILES[rng.random_range(0..FILES.len())]
    )
}

/// `n` lines of source-like text numbered as Claude Code's Read tool prints them.
pub fn numbered_lines(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max.max(min));
    let mut out = String::with_capacity(n * 48);
    for i in 1..=n {
        let indent = "    ".repeat(rng.random_range(0..3));
        out.push_str(&format!(
            "{i:>6}\u{2192}{indent}{}\n",
            sentence(rng, 3, 9).to_lowercase()
        ));
    }
    out
}

/// `n` lines of command output (test runs, search hits).
pub fn output_lines(rng: &mut impl Rng, min: usize, max: usize, root: &str) -> String {
    let n = rng.random_range(min..=max.max(min));
    let mut out = String::with_capacity(n * 64);
    for _ in 0..n {
        let p = path(rng, root);
        let line: u32 = rng.random_range(1..900);
        out.push_str(&format!(
            "{p}:{line}: {}\n",
            sentence(rng, 3, 10).to_lowercase()
        ));
    }
    out
}
