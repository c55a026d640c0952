#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

/// Epoch milliseconds of a UTC date and hour.
fn at(date: &str, hour: u32) -> i64 {
    NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .unwrap()
        .and_hms_opt(hour, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp_millis()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn the_bundled_table_parses_and_covers_the_families() {
    let t = file::parse(BUNDLED, Origin::Bundled).expect("data/prices.toml parses");
    assert_eq!(t.models().len(), 59);
    for id in [
        "glm-5",
        "claude-opus-4-1-20250805",
        "claude-sonnet-4-5",
        "claude-haiku-4-5-20251001",
        "gpt-5-codex",
        "gpt-5.1-codex-max",
        "gemini-2.5-pro",
        "gemini-3-pro-preview",
    ] {
        assert!(t.model(id).is_some(), "{id}");
    }
    assert!(t.unpriced().iter().any(|u| u.id == "<synthetic>"));
}

#[test]
fn each_token_kind_is_priced_at_its_own_rate() {
    let t = PriceTable::bundled();
    // claude-sonnet-4-5: $3 input, $15 output, $0.30 cache read, $3.75 5-minute and $6
    // 1-hour cache writes per million tokens (Anthropic's price page).
    let tokens = Tokens {
        input: 1_000,
        output: 2_000,
        cache_read: 10_000,
        cache_write_5m: 4_000,
        cache_write_1h: 5_000,
    };
    let c = t.cost("claude-sonnet-4-5-20250929", at("2026-01-10", 12), &tokens);
    assert!(close(c.input, 0.003));
    assert!(close(c.output, 0.030));
    assert!(close(c.cache_read, 0.003));
    assert!(close(c.cache_write, 0.015 + 0.030));
    assert!(close(c.total(), 0.081));
    // An alias prices the same.
    assert_eq!(
        c,
        t.cost("claude-sonnet-4-5", at("2026-01-10", 12), &tokens)
    );
}

#[test]
fn a_prompt_above_the_long_context_threshold_is_priced_at_the_tier() {
    let t = PriceTable::bundled();
    let small = Tokens {
        input: 100_000,
        cache_read: 100_000,
        output: 1_000_000,
        ..Tokens::default()
    };
    let large = Tokens {
        input: 100_001,
        ..small
    };
    let when = at("2026-01-10", 0);
    // At 200,000 prompt tokens the standard rates: 0.1 × $3 + 0.1 × $0.30 + 1 × $15.
    assert!(close(
        t.cost("claude-sonnet-4-5", when, &small).total(),
        15.33
    ));
    // Above them all tokens at the tier: 0.100001 × $6 + 0.1 × $0.60 + 1 × $22.50.
    assert!(close(
        t.cost("claude-sonnet-4-5", when, &large).total(),
        0.100_001 * 6.0 + 0.06 + 22.5
    ));
}

#[test]
fn every_tier_prices_one_hour_writes_and_a_tier_without_a_rate_is_refused() {
    let t = PriceTable::bundled();
    // Sonnet 4 above 200k: 1-hour writes at 2 × the tier's $6 input (a derived rate).
    let tokens = Tokens {
        input: 250_000,
        cache_write_1h: 1_000,
        ..Tokens::default()
    };
    let c = t.cost("claude-sonnet-4-20250514", at("2025-07-01", 0), &tokens);
    assert!(close(c.total(), 0.25 * 6.0 + 0.001 * 12.0));
    let lacking = r#"
schema = 1
[[model]]
provider = "x"
id = "m"
  [[model.price]]
  from = "2026-01-01"
  input = 1.0
  output = 2.0
  cache_write_1h = 2.0
    [[model.price.tier]]
    above_prompt_tokens = 1000
    input = 2.0
    output = 4.0
"#;
    let e = file::parse(lacking, Origin::Bundled).unwrap_err();
    assert!(
        e.message.contains("tier 1000: no cache_write_1h rate"),
        "{e}"
    );
}

#[test]
fn a_price_change_prices_responses_on_either_side_differently() {
    let t = PriceTable::bundled();
    // gpt-5.6-sol: $5 input until 2026-08-21, then the new period (under the 272k tier).
    let tokens = Tokens {
        input: 100_000,
        ..Tokens::default()
    };
    let before = t.cost("gpt-5.6-sol", at("2026-08-20", 23), &tokens).total();
    let after = t.cost("gpt-5.6-sol", at("2026-08-21", 0), &tokens).total();
    assert!(close(before, 0.5));
    let after_rate = t.model("gpt-5.6-sol").unwrap().periods[1]
        .rates
        .input
        .unwrap();
    assert!(close(after, after_rate / 10.0));
    assert_ne!(before, after);
}

#[test]
fn no_price_is_none_never_zero_and_no_tokens_cost_nothing() {
    let t = PriceTable::bundled();
    let tokens = Tokens {
        output: 10,
        ..Tokens::default()
    };
    let c = t.cost("no-such-model", at("2026-01-01", 0), &tokens);
    assert_eq!(c.total(), None);
    assert_eq!(c.missing, Some(Missing::Model));
    assert_eq!(
        t.cost("<synthetic>", at("2026-01-01", 0), &Tokens::default())
            .total(),
        Some(0.0)
    );
    // gpt-5-pro lists no cache-read price: cached tokens leave the total unknown.
    let cached = Tokens {
        input: 10,
        cache_read: 10,
        ..Tokens::default()
    };
    let c = t.cost("gpt-5-pro", at("2026-01-01", 0), &cached);
    assert_eq!(c.total(), None);
    assert_eq!(c.missing, Some(Missing::Rate("cache_read")));
    assert!(c.input.is_some());
}

#[test]
fn a_broken_table_is_refused_naming_the_model() {
    let overlapping = r#"
schema = 1
[[model]]
provider = "x"
id = "m"
  [[model.price]]
  from = "2026-01-01"
  input = 1.0
  output = 2.0
  [[model.price]]
  from = "2026-02-01"
  input = 1.0
  output = 2.0
"#;
    let e = file::parse(overlapping, Origin::Bundled).unwrap_err();
    assert!(e.message.contains("m: the period from 2026-01-01"), "{e}");
    let negative = overlapping.replace("input = 1.0\n  output = 2.0\n  [[model.price]]\n  from = \"2026-02-01\"", "input = -1.0\n  output = 2.0\n  until = \"2026-02-01\"\n  [[model.price]]\n  from = \"2026-02-01\"");
    let e = file::parse(&negative, Origin::Bundled).unwrap_err();
    assert!(e.message.contains("input = -1 is not a price"), "{e}");
}
