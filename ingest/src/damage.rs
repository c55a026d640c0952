//! Damaged copies of each JSON Lines adapter's fixtures (`tests/fixtures/agents`): a byte
//! changed, and the file cut, at 60 places spread over each file. Never a panic, and a damaged
//! line costs that line only: the lines that no longer read (bad JSON or UTF-8, a cut line)
//! are the changed line (or, for a file cut short, its last line) and no other. (A line that
//! still reads but now names a parent that is not there may be reported too: that report is
//! about the line that names it.)

#![allow(clippy::unwrap_used)]

use std::path::Path;

/// The agents' fixtures read here, relative to `tests/fixtures/agents`.
const FIXTURES: &[&str] = &[
    "kimi/sessions/6c29bb5a3ee7ba21db1ef234e48630f8/3f2b8c1e-6a4d-4e2f-9b1a-7c5d0e9f1a22/wire.jsonl",
    "qwen/projects/-home-alice-src-demo-app/chats/3f6c2a1e-8b4d-4c7a-9e21-5d0f7b9a4c13.jsonl",
    "qwen/projects/-home-alice-src-demo-app/chats/c0ffee00-1111-4222-8333-444455556666.jsonl",
    "pi/agentsview-session.jsonl",
    "pi/before-compaction.jsonl",
];

/// The places of a file damaged: 60, spread over it.
fn places(len: usize) -> impl Iterator<Item = usize> {
    (0..60).map(move |i| 1 + i * (len - 1) / 60)
}

/// The line numbers (1-based) of the lines a file's diagnostics say no longer read.
fn reported(name: &str, bytes: &[u8]) -> Vec<usize> {
    let (_, parsed) = crate::parse_bytes(name, bytes);
    parsed
        .diagnostics
        .iter()
        .filter(|d| matches!(d.kind, "invalid_json" | "invalid_utf8" | "truncated_line"))
        .filter_map(|d| d.line)
        .collect()
}

/// Each fixture damaged at each place by `damage` (the bytes, the place: the damaged bytes and
/// the one line that may be reported, and how far the lines after it move up), checked.
fn check(damage: impl Fn(&[u8], usize) -> (Vec<u8>, usize, usize)) {
    for rel in FIXTURES {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/agents")
            .join(rel);
        let whole = std::fs::read(&path).unwrap();
        let name = path.display().to_string();
        let before = reported(&name, &whole);
        for at in places(whole.len()) {
            let (bytes, line, moved) = damage(&whole, at);
            let before: Vec<usize> = before
                .iter()
                .map(|l| if *l > line { l - moved } else { *l })
                .collect();
            let lines = reported(&name, &bytes);
            assert!(
                lines.iter().all(|l| *l == line || before.contains(l)),
                "{rel}: damaged at byte {at} (line {line}), lines {lines:?} reported"
            );
        }
    }
}

/// The line (1-based) a byte is on.
fn line_of(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at].iter().filter(|b| **b == b'\n').count()
}

#[test]
fn a_changed_byte_costs_its_line_only() {
    check(|whole, at| {
        let mut bytes = whole.to_vec();
        bytes[at] ^= 0x5a;
        // A changed line end joins two lines: the lines after it move up one.
        (bytes, line_of(whole, at), usize::from(whole[at] == b'\n'))
    });
}

#[test]
fn a_file_cut_short_costs_its_last_line_only() {
    check(|whole, at| (whole[..at].to_vec(), line_of(whole, at), 0));
}
