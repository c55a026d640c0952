//! The words of generated text: a small vocabulary of programming-session words, and for the
//! lean shape a long tail of pseudo-words drawn by Zipf's law with a few planted phrases, so a
//! search benchmark has rare, medium and common terms (see [`prose`]).

use std::sync::OnceLock;

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

/// Appends the `i`th word of a sentence: after a space, the first one capitalised.
fn push_word(out: &mut String, word: &str, i: usize) {
    if i > 0 {
        out.push(' ');
        out.push_str(word);
        return;
    }
    let mut chars = word.chars();
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
        out.push_str(chars.as_str());
    }
}

/// A sentence of `min..=max` words, capitalised, ending with a full stop.
pub fn sentence(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max.max(min));
    let mut out = String::with_capacity(n * 7);
    for i in 0..n {
        let word = WORDS[rng.random_range(0..WORDS.len())];
        push_word(&mut out, word, i);
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

/// How many pseudo-words the long tail has; rank 1 is the most frequent.
pub const TAIL_WORDS: usize = 50_000;

/// Syllables the tail's words are spelled with (consonant + vowel, none of them an English word).
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "zo", "pu", "da", "fe", "gi", "ho", "ju", "ly",
    "wa", "xe", "qi", "bo",
];

/// The spelling of the tail word of `rank` (1-based): the bijective base-20 numeral of
/// `rank + 420` in [`SYLLABLES`], so every word has at least three syllables and no two ranks
/// share a spelling.
pub fn tail_word(rank: usize) -> String {
    let mut n = rank + 420;
    let mut digits = Vec::new();
    while n > 0 {
        n -= 1;
        digits.push(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    digits.iter().rev().copied().collect()
}

/// Phrases planted in [`prose`], each with its chance per sentence: at a million lean messages
/// they fall in the search benchmark's selectivity classes (about 50 sentences, 5,000 and
/// 150,000), and one carries Polish letters (`ł` has no decomposition, so it needs the fold).
pub const PHRASES: &[(&str, f64)] = &[
    ("null pointer exception", 0.000_05),
    ("zażółć gęślą jaźń", 0.000_05),
    ("flaky login test", 0.005),
    ("connection pool exhausted", 0.15),
];

/// The cumulative Zipf weights (exponent 1) of the tail's ranks.
fn zipf_cdf() -> &'static [f64] {
    static CDF: OnceLock<Vec<f64>> = OnceLock::new();
    CDF.get_or_init(|| {
        let mut total = 0.0;
        (1..=TAIL_WORDS)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect()
    })
}

/// A tail rank drawn by Zipf's law.
fn zipf_rank(rng: &mut impl Rng) -> usize {
    let cdf = zipf_cdf();
    let u = rng.random::<f64>() * cdf[cdf.len() - 1];
    cdf.partition_point(|&c| c < u).min(cdf.len() - 1) + 1
}

/// A sentence of `min..=max` words like [`sentence`], each word either one of the common words
/// (half the time, uniformly) or a tail word drawn by Zipf's law, and now and then one of the
/// [`PHRASES`] appended: the long-tail prose of the lean shape.
pub fn prose(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max.max(min));
    let mut out = String::with_capacity(n * 8);
    for i in 0..n {
        let word = if rng.random_bool(0.5) {
            WORDS[rng.random_range(0..WORDS.len())].to_string()
        } else {
            tail_word(zipf_rank(rng))
        };
        push_word(&mut out, &word, i);
    }
    for (phrase, chance) in PHRASES {
        if rng.random_bool(*chance) {
            out.push(' ');
            out.push_str(phrase);
        }
    }
    out.push('.');
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn tail_words_are_distinct_and_never_a_common_word() {
        let common: HashSet<&str> = WORDS.iter().copied().collect();
        let mut seen = HashSet::new();
        for rank in 1..=TAIL_WORDS {
            let word = tail_word(rank);
            assert!(word.len() >= 6, "{word}");
            assert!(!common.contains(word.as_str()), "{word}");
            assert!(seen.insert(word), "rank {rank} repeats a spelling");
        }
    }

    #[test]
    fn tail_ranks_follow_zipfs_law() {
        // Rank 1 should be drawn about twice as often as rank 2 and ten times as often as 10.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut counts: HashMap<usize, u32> = HashMap::new();
        let draws = 400_000;
        for _ in 0..draws {
            *counts.entry(zipf_rank(&mut rng)).or_default() += 1;
        }
        let share = |rank| f64::from(counts[&rank]) / f64::from(draws);
        let h: f64 = (1..=TAIL_WORDS).map(|r| 1.0 / r as f64).sum();
        for rank in [1usize, 2, 10] {
            let expected = 1.0 / (rank as f64 * h);
            assert!(
                (share(rank) - expected).abs() < 0.1 * expected,
                "rank {rank}: {} vs {expected}",
                share(rank)
            );
        }
        assert!(counts.keys().all(|&r| (1..=TAIL_WORDS).contains(&r)));
    }

    #[test]
    fn prose_plants_its_phrases() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let sentences = 20_000;
        let with = (0..sentences)
            .filter(|_| prose(&mut rng, 1, 5).contains("connection pool exhausted"))
            .count();
        // 15% of 20,000 sentences: 3,000, give or take five standard deviations (~250).
        assert!((2_750..=3_250).contains(&with), "{with}");
    }
}
