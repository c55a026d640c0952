//! The TOML layout of a price table (`data/prices.toml`), read and checked into a
//! [`PriceTable`]: every period's dates parse and follow each other, every rate is a finite
//! non-negative number, and no id names two models.

use std::collections::HashMap;

use chrono::NaiveDate;
use serde::Deserialize;

use super::{Model, Origin, Period, PriceError, PriceTable, Rates, Tier, Unpriced};

#[derive(Deserialize)]
struct FileToml {
    schema: u32,
    #[serde(default)]
    generated: Option<String>,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default)]
    litellm: Vec<LitellmToml>,
    #[serde(default)]
    model: Vec<ModelToml>,
    #[serde(default)]
    unpriced: Vec<UnpricedToml>,
}

#[derive(Deserialize)]
struct LitellmToml {
    version: String,
}

#[derive(Deserialize)]
struct ModelToml {
    provider: String,
    id: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    price: Vec<PeriodToml>,
}

#[derive(Deserialize)]
struct PeriodToml {
    from: String,
    #[serde(default)]
    from_basis: Option<String>,
    #[serde(default)]
    from_source: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    until_source: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(flatten)]
    rates: RatesToml,
    #[serde(default)]
    tier: Vec<TierToml>,
}

#[derive(Deserialize)]
struct TierToml {
    above_prompt_tokens: u64,
    #[serde(flatten)]
    rates: RatesToml,
}

#[derive(Deserialize)]
struct RatesToml {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    cache_write_1h: Option<f64>,
}

#[derive(Deserialize)]
struct UnpricedToml {
    id: String,
    #[serde(default)]
    reason: String,
}

/// `text` as a price table from `origin`.
pub(super) fn parse(text: &str, origin: Origin) -> Result<PriceTable, PriceError> {
    let fail = |message: String| PriceError {
        origin: origin.to_string(),
        message,
    };
    let file: FileToml = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
    if file.schema != 1 {
        return Err(fail(format!("schema {} is not 1", file.schema)));
    }
    if let Some(unit) = &file.unit
        && unit != "per_million_tokens"
    {
        return Err(fail(format!("unit {unit:?} is not \"per_million_tokens\"")));
    }
    let mut models = Vec::with_capacity(file.model.len());
    let mut owner: HashMap<String, String> = HashMap::new();
    for m in file.model {
        for id in std::iter::once(&m.id).chain(&m.aliases) {
            if let Some(other) = owner.insert(id.clone(), m.id.clone()) {
                return Err(fail(format!("{id} names both {other} and {}", m.id)));
            }
        }
        let periods = m
            .price
            .into_iter()
            .map(|p| period(p).map_err(|e| fail(format!("{}: {e}", m.id))))
            .collect::<Result<Vec<_>, _>>()?;
        if periods.is_empty() {
            return Err(fail(format!("{} has no [[model.price]]", m.id)));
        }
        for pair in periods.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.until.is_none_or(|until| until > b.from) {
                return Err(fail(format!(
                    "{}: the period from {} must end (until) on or before the next one's from {}",
                    m.id, a.from, b.from
                )));
            }
        }
        models.push(Model {
            provider: m.provider,
            id: m.id,
            aliases: m.aliases,
            periods,
        });
    }
    let unpriced = file
        .unpriced
        .into_iter()
        .map(|u| Unpriced {
            id: u.id,
            reason: u.reason,
        })
        .collect();
    let versions: Vec<String> = file.litellm.into_iter().map(|l| l.version).collect();
    let mut summary = match &file.generated {
        Some(date) => format!("generated {date}"),
        None => String::from("no generation date"),
    };
    if !versions.is_empty() {
        summary.push_str(&format!(
            "; checked against litellm {}",
            versions.join(", ")
        ));
    }
    Ok(PriceTable::from_parts(origin, models, unpriced, summary))
}

fn period(p: PeriodToml) -> Result<Period, String> {
    let from = date(&p.from, "from")?;
    let until = p.until.as_deref().map(|u| date(u, "until")).transpose()?;
    if let Some(until) = until
        && until <= from
    {
        return Err(format!("until {until} is not after from {from}"));
    }
    let rates = rates(&p.rates).map_err(|e| format!("from {from}: {e}"))?;
    let mut tiers = Vec::with_capacity(p.tier.len());
    for t in &p.tier {
        let tier = rates_of(&t.rates)
            .map_err(|e| format!("from {from}, tier {}: {e}", t.above_prompt_tokens))?;
        // A tier prices all of a response's tokens: it needs every rate the period has.
        if let Some(kind) = missing_in_tier(&rates, &tier) {
            return Err(format!(
                "from {from}, tier {}: no {kind} rate, which the period has",
                t.above_prompt_tokens
            ));
        }
        tiers.push(Tier {
            above_prompt_tokens: t.above_prompt_tokens,
            rates: tier,
        });
    }
    tiers.sort_by_key(|t| t.above_prompt_tokens);
    let date_source = match (p.from_source, p.until_source) {
        (Some(a), Some(b)) => Some(format!("from: {a}; until: {b}")),
        (a, b) => a.or(b),
    };
    Ok(Period {
        from,
        from_basis: p.from_basis.unwrap_or_else(|| String::from("read")),
        until,
        source: p.source.unwrap_or_default(),
        date_source,
        rates,
        tiers,
    })
}

/// A period's standard rates: input and output must be there.
fn rates(r: &RatesToml) -> Result<Rates, String> {
    if r.input.is_none() || r.output.is_none() {
        return Err(String::from("input and output prices are required"));
    }
    rates_of(r)
}

fn rates_of(r: &RatesToml) -> Result<Rates, String> {
    for (name, value) in [
        ("input", r.input),
        ("output", r.output),
        ("cache_read", r.cache_read),
        ("cache_write", r.cache_write),
        ("cache_write_1h", r.cache_write_1h),
    ] {
        if let Some(v) = value
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(format!("{name} = {v} is not a price"));
        }
    }
    Ok(Rates {
        input: r.input,
        output: r.output,
        cache_read: r.cache_read,
        cache_write_5m: r.cache_write,
        cache_write_1h: r.cache_write_1h,
    })
}

/// The first kind of rate `period` has and `tier` lacks.
fn missing_in_tier(period: &Rates, tier: &Rates) -> Option<&'static str> {
    [
        ("input", period.input, tier.input),
        ("output", period.output, tier.output),
        ("cache_read", period.cache_read, tier.cache_read),
        ("cache_write", period.cache_write_5m, tier.cache_write_5m),
        ("cache_write_1h", period.cache_write_1h, tier.cache_write_1h),
    ]
    .into_iter()
    .find(|(_, p, t)| p.is_some() && t.is_none())
    .map(|(kind, _, _)| kind)
}

fn date(text: &str, field: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|e| format!("{field} = {text:?} is not a date YYYY-MM-DD ({e})"))
}
