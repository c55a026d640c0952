//! A long-running fuzzer that needs no nightly toolchain:
//! `cargo run --release -p quarry-grammar --example fuzz -- --seconds 600`.
//!
//! It mutates the conformance corpus (`../shared/conformance`, when present), the completion
//! examples and mistakes, and random token sequences; runs parse, resolve, explain and render on
//! each input under `catch_unwind`; checks that every correction parses; and prints the number of
//! executions and any crashing input. Exit code 1 when a crash or a bad correction was found.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

#[path = "../tests/tokens.rs"]
mod tokens;
use tokens::TOKENS;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn char(&mut self) -> char {
        match self.below(4) {
            0 => char::from_u32(self.below(0x11_0000) as u32).unwrap_or('x'),
            1 => (b' ' + self.below(95) as u8) as char,
            2 => [
                '(', ')', '|', '"', ':', '-', '~', ' ', ',', '[', ']', '>', '=',
            ][self.below(13)],
            _ => (b'a' + self.below(26) as u8) as char,
        }
    }
}

fn seeds() -> Vec<String> {
    let mut v: Vec<String> = quarry_grammar::complete::examples()
        .into_iter()
        .map(|e| e.query)
        .collect();
    v.extend(
        quarry_grammar::complete::MISTAKES
            .iter()
            .map(|(q, _)| q.to_string()),
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    for f in ["polylogue-positive.tsv", "polylogue-negative.tsv"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(f)) {
            for line in text.lines().skip(1) {
                let cols: Vec<&str> = line.split('\t').collect();
                if let Some(e) = cols.get(1) {
                    v.push(e.to_string());
                }
                if let Some(c) = cols.get(6).filter(|_| f.contains("negative")) {
                    v.push(c.to_string());
                }
            }
        }
    }
    v
}

fn mutate(rng: &mut Rng, seeds: &[String]) -> String {
    let base = &seeds[rng.below(seeds.len())];
    let mut chars: Vec<char> = base.chars().collect();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let at = rng.below(chars.len() + 1);
        match rng.below(8) {
            0 if !chars.is_empty() => {
                chars.remove(at.min(chars.len() - 1));
            }
            1 => chars.insert(at, rng.char()),
            2 if !chars.is_empty() => {
                let i = at.min(chars.len() - 1);
                chars[i] = rng.char();
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                let sep = if rng.below(2) == 0 { " " } else { "" };
                let ins: Vec<char> = format!("{sep}{t}{sep}").chars().collect();
                chars.splice(at..at, ins);
            }
            4 => {
                let other: Vec<char> = seeds[rng.below(seeds.len())].chars().collect();
                let j = rng.below(other.len() + 1);
                chars.truncate(at);
                chars.extend_from_slice(&other[j..]);
            }
            5 if !chars.is_empty() => {
                let end = (at + rng.below(8)).min(chars.len());
                let piece: Vec<char> = chars[at.min(end)..end].to_vec();
                chars.splice(at..at, piece);
            }
            6 if !chars.is_empty() => {
                let end = (at + rng.below(12)).min(chars.len());
                chars.drain(at.min(end)..end);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn token_soup(rng: &mut Rng) -> String {
    let n = rng.below(25);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(TOKENS[rng.below(TOKENS.len())]);
        if rng.below(3) != 0 {
            s.push(' ');
        }
    }
    s
}

/// Returns an error message when a correction does not parse.
fn exercise(q: &str) -> Result<(), String> {
    match quarry_grammar::explain::explain(q) {
        Ok(e) => {
            let _ = e.to_text();
            let _ = e.to_json();
        }
        Err(d) => {
            let _ = quarry_grammar::render(q, &d, true);
            let _ = d.to_json();
            for diag in &d.diagnostics {
                if let Some(c) = &diag.correction
                    && quarry_grammar::parse(c).is_err()
                {
                    return Err(format!("correction `{c}` does not parse"));
                }
            }
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(60);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    std::panic::set_hook(Box::new(|_| {}));
    let seeds = seeds();
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut execs, mut crashes, mut bad) = (0u64, 0u64, 0u64);
    let mut last_report = Instant::now();
    println!("fuzz: {} seeds, {seconds}s, rng seed {seed}", seeds.len());
    while Instant::now() < deadline {
        for _ in 0..256 {
            let input = match rng.below(10) {
                0 => token_soup(&mut rng),
                1 => (0..rng.below(60)).map(|_| rng.char()).collect(),
                _ => mutate(&mut rng, &seeds),
            };
            execs += 1;
            match catch_unwind(AssertUnwindSafe(|| exercise(&input))) {
                Ok(Ok(())) => {}
                Ok(Err(msg)) => {
                    bad += 1;
                    if bad <= 20 {
                        println!("BAD CORRECTION for {input:?}: {msg}");
                    }
                }
                Err(_) => {
                    crashes += 1;
                    if crashes <= 20 {
                        println!("CRASH on input {input:?}");
                    }
                }
            }
        }
        if last_report.elapsed() > Duration::from_secs(60) {
            println!("fuzz: {execs} executions, {crashes} crashes, {bad} bad corrections");
            last_report = Instant::now();
        }
    }
    println!(
        "fuzz: done: {execs} executions in {seconds}s, {crashes} crashes, {bad} bad corrections"
    );
    if crashes > 0 || bad > 0 {
        std::process::exit(1);
    }
}
