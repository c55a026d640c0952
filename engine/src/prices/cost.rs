//! One response's cost: its tokens of each kind times the rate of its period (or of the
//! period's long-context tier when its prompt is larger than the tier's threshold).

use super::{Period, Rates};

/// A response's token counts, as `usage` keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Uncached input.
    pub input: u64,
    /// Output (reasoning included).
    pub output: u64,
    /// Prompt-cache reads.
    pub cache_read: u64,
    /// Prompt-cache writes with the 5-minute lifetime.
    pub cache_write_5m: u64,
    /// Prompt-cache writes with the 1-hour lifetime.
    pub cache_write_1h: u64,
}

impl Tokens {
    /// Whether every count is zero.
    pub fn is_empty(&self) -> bool {
        self.prompt() == 0 && self.output == 0
    }

    /// The prompt as providers count it for long-context tiers: input plus cache reads and
    /// writes.
    pub fn prompt(&self) -> u64 {
        self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }
}

/// Why a cost (or a part of it) is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Missing {
    /// The table has no price for the model at that time.
    Model,
    /// The period has no rate for tokens of this kind (`input`, `output`, `cache_read`,
    /// `cache_write`, `cache_write_1h`) the response has.
    Rate(&'static str),
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Model => write!(f, "no price"),
            Missing::Rate(kind) => write!(f, "no {kind} price"),
        }
    }
}

/// A response's cost in USD, by part; a part is `None` when its tokens have no rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Uncached input.
    pub input: Option<f64>,
    /// Output.
    pub output: Option<f64>,
    /// Cache reads.
    pub cache_read: Option<f64>,
    /// Cache writes, both lifetimes.
    pub cache_write: Option<f64>,
    /// Why a part is unknown (the first reason found).
    pub missing: Option<Missing>,
}

impl Cost {
    /// Nothing to pay.
    pub const ZERO: Cost = Cost {
        input: Some(0.0),
        output: Some(0.0),
        cache_read: Some(0.0),
        cache_write: Some(0.0),
        missing: None,
    };

    /// A cost with every part unknown for `why`.
    pub fn unpriced(why: Missing) -> Cost {
        Cost {
            input: None,
            output: None,
            cache_read: None,
            cache_write: None,
            missing: Some(why),
        }
    }

    /// The sum of the parts, when every part is known.
    pub fn total(&self) -> Option<f64> {
        Some(self.input? + self.output? + self.cache_read? + self.cache_write?)
    }
}

/// `tokens` priced with `period`.
pub(super) fn price(period: &Period, tokens: &Tokens) -> Cost {
    let prompt = tokens.prompt();
    let tier = period
        .tiers
        .iter()
        .rev()
        .find(|t| prompt > t.above_prompt_tokens);
    let rates: &Rates = tier.map_or(&period.rates, |t| &t.rates);
    let mut missing = None;
    let mut part = |count: u64, rate: Option<f64>, kind: &'static str| match (count, rate) {
        (0, _) => Some(0.0),
        (n, Some(rate)) => Some(n as f64 * rate / 1_000_000.0),
        (_, None) => {
            missing.get_or_insert(Missing::Rate(kind));
            None
        }
    };
    let input = part(tokens.input, rates.input, "input");
    let output = part(tokens.output, rates.output, "output");
    let cache_read = part(tokens.cache_read, rates.cache_read, "cache_read");
    let write_5m = part(tokens.cache_write_5m, rates.cache_write_5m, "cache_write");
    let write_1h = part(
        tokens.cache_write_1h,
        rates.cache_write_1h,
        "cache_write_1h",
    );
    Cost {
        input,
        output,
        cache_read,
        cache_write: write_5m.zip(write_1h).map(|(a, b)| a + b),
        missing,
    }
}
