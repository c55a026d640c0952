//! The price table: what a model's tokens cost, per period, read from `data/prices.toml`
//! (compiled in) or from a file given with `--prices`. Data flows one way: the TOML text →
//! [`PriceTable`] (checked once, when loaded) → [`PriceTable::cost`] per response. The engine
//! prices `usage` rows with it at query time (`engine::cost`); `quarry prices` prints it.
//!
//! ```
//! use quarry::prices::{PriceTable, Tokens};
//! let table = PriceTable::bundled();
//! let at = 1_767_225_600_000; // 2026-01-01T00:00:00Z
//! let tokens = Tokens { input: 1_000_000, ..Tokens::default() };
//! let cost = table.cost("claude-haiku-4-5-20251001", at, &tokens);
//! assert_eq!(cost.total(), Some(1.0)); // $1 per million input tokens
//! ```

mod cost;
mod file;

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use chrono::NaiveDate;

pub use self::cost::{Cost, Missing, Tokens};

/// The table compiled into quarry.
const BUNDLED: &str = include_str!("../../../data/prices.toml");

/// Where a price table came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `data/prices.toml` as compiled in.
    Bundled,
    /// A file given with `--prices`.
    File(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Bundled => write!(f, "bundled data/prices.toml"),
            Origin::File(path) => write!(f, "{path}"),
        }
    }
}

/// A price table that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("price table {origin}: {message}")]
pub struct PriceError {
    /// The file (or the bundled table).
    pub origin: String,
    /// What is wrong, naming the model and period.
    pub message: String,
}

/// USD per million tokens of each kind; `None` where the provider lists no price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// Uncached input.
    pub input: Option<f64>,
    /// Output (reasoning included).
    pub output: Option<f64>,
    /// Prompt-cache reads.
    pub cache_read: Option<f64>,
    /// Prompt-cache writes with the 5-minute lifetime.
    pub cache_write_5m: Option<f64>,
    /// Prompt-cache writes with the 1-hour lifetime.
    pub cache_write_1h: Option<f64>,
}

/// Higher rates for a request whose prompt (input plus cache reads and writes) is larger than
/// `above_prompt_tokens`: all of its tokens are priced at these.
#[derive(Debug, Clone, PartialEq)]
pub struct Tier {
    /// The prompt size the tier starts above.
    pub above_prompt_tokens: u64,
    /// The rates of the tier.
    pub rates: Rates,
}

/// The prices of a model over one period: from `from` (UTC midnight) until `until` (exclusive),
/// or open.
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    /// The first day the prices are in force.
    pub from: NaiveDate,
    /// What `from` is: `release` (the provider's release date), `secondary` (a date reported
    /// by secondary sources) or `read` (the day the price was read: no earlier date is known).
    pub from_basis: String,
    /// The day a documented change replaced these prices.
    pub until: Option<NaiveDate>,
    /// Where the prices were read.
    pub source: String,
    /// Where the dates were read, when not from the price source.
    pub date_source: Option<String>,
    /// The standard rates.
    pub rates: Rates,
    /// Long-context tiers, smallest threshold first.
    pub tiers: Vec<Tier>,
}

impl Period {
    /// Epoch milliseconds of `from`.
    fn starts_ms(&self) -> i64 {
        day_start_ms(self.from)
    }

    /// Epoch milliseconds of `until`, when set.
    fn ends_ms(&self) -> Option<i64> {
        self.until.map(day_start_ms)
    }
}

/// One model: its id, the other ids it answers to, and its price periods in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The provider (`anthropic`, `openai`, `gemini`).
    pub provider: String,
    /// The model id as responses record it.
    pub id: String,
    /// Other ids (dated snapshots, short names).
    pub aliases: Vec<String>,
    /// The price periods, oldest first, not overlapping.
    pub periods: Vec<Period>,
}

/// A model id the table knows has no price, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unpriced {
    /// The id.
    pub id: String,
    /// Why it has no price.
    pub reason: String,
}

/// The price table.
#[derive(Debug, Clone)]
pub struct PriceTable {
    origin: Origin,
    models: Vec<Model>,
    unpriced: Vec<Unpriced>,
    by_id: HashMap<String, usize>,
    summary: String,
}

impl PriceTable {
    /// The table compiled into quarry (`data/prices.toml`), read once per process.
    pub fn bundled() -> Self {
        static TABLE: LazyLock<PriceTable> = LazyLock::new(|| {
            // The bundled table is checked by a unit test; an empty table prices nothing
            // rather than failing every query of a broken build.
            file::parse(BUNDLED, Origin::Bundled).unwrap_or_else(|_| {
                PriceTable::from_parts(Origin::Bundled, Vec::new(), Vec::new(), String::new())
            })
        });
        TABLE.clone()
    }

    /// The table in the TOML file at `path` (the layout of `data/prices.toml`).
    pub fn from_file(path: &Path) -> Result<Self, PriceError> {
        let origin = Origin::File(path.display().to_string());
        let text = std::fs::read_to_string(path).map_err(|e| PriceError {
            origin: origin.to_string(),
            message: format!("cannot read it: {e}"),
        })?;
        file::parse(&text, origin)
    }

    /// `path`'s table when given, else the bundled one.
    pub fn load(path: Option<&Path>) -> Result<Self, PriceError> {
        match path {
            Some(path) => Self::from_file(path),
            None => Ok(Self::bundled()),
        }
    }

    fn from_parts(
        origin: Origin,
        models: Vec<Model>,
        unpriced: Vec<Unpriced>,
        summary: String,
    ) -> Self {
        let mut by_id = HashMap::new();
        for (i, m) in models.iter().enumerate() {
            for id in std::iter::once(&m.id).chain(&m.aliases) {
                by_id.entry(id.clone()).or_insert(i);
            }
        }
        PriceTable {
            origin,
            models,
            unpriced,
            by_id,
            summary,
        }
    }

    /// Where the table came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The models, in the file's order.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// The ids the table knows have no price.
    pub fn unpriced(&self) -> &[Unpriced] {
        &self.unpriced
    }

    /// One line on the table's provenance (its `generated` date and the litellm versions read).
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// The model `id` names (its id or an alias).
    pub fn model(&self, id: &str) -> Option<&Model> {
        self.by_id.get(id).map(|&i| &self.models[i])
    }

    /// The period of `model` in force at `at_ms` (epoch milliseconds, UTC): the one whose days
    /// hold it. A time before the first period takes the first period: the earliest price known
    /// for the model, which for a period dated by when it was read (`from_basis = read`) is all
    /// that is known. A time in a gap between periods, or after a closed last one, has none.
    pub fn period(&self, model: &str, at_ms: i64) -> Option<&Period> {
        let periods = &self.model(model)?.periods;
        let first = periods.first()?;
        if at_ms < first.starts_ms() {
            return Some(first);
        }
        periods
            .iter()
            .rev()
            .find(|p| p.starts_ms() <= at_ms && p.ends_ms().is_none_or(|u| at_ms < u))
    }

    /// What `tokens` of `model` cost at `at_ms`. Tokens of a kind the period has no rate for
    /// leave that part (and the total) unpriced; a response with no tokens costs nothing,
    /// whatever its model.
    pub fn cost(&self, model: &str, at_ms: i64, tokens: &Tokens) -> Cost {
        if tokens.is_empty() {
            return Cost::ZERO;
        }
        match self.period(model, at_ms) {
            Some(period) => cost::price(period, tokens),
            None => Cost::unpriced(Missing::Model),
        }
    }
}

/// Epoch milliseconds of `day`'s UTC midnight.
fn day_start_ms(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp_millis())
        .unwrap_or(i64::MIN)
}

#[cfg(test)]
mod tests;
