//! A bounded robustness check (no nightly needed): random strings, token soups, and mutations and
//! splices of the conformance expressions never panic in parse, resolve, explain or render.

use proptest::prelude::*;
use quarry_grammar::{check, explain, render};

fn exercise(q: &str) {
    match explain::explain(q) {
        Ok(e) => {
            let _ = e.to_text();
            let _ = e.to_json();
        }
        Err(d) => {
            let _ = render(q, &d, false);
            let _ = d.to_json();
            for diag in &d.diagnostics {
                if let Some(c) = &diag.correction {
                    assert!(
                        quarry_grammar::parse(c).is_ok(),
                        "correction `{c}` of `{q}` does not parse"
                    );
                }
            }
        }
    }
    let _ = check(q);
}

use crate::tokens::TOKENS;

fn seeds() -> Vec<String> {
    let mut v = crate::common::positives();
    v.extend(
        crate::snapshots::MISTAKES
            .iter()
            .map(|(_, q)| q.to_string()),
    );
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_strings_never_panic(s in "\\PC{0,120}") {
        exercise(&s);
    }

    #[test]
    fn token_soup_never_panics(idx in proptest::collection::vec(0..TOKENS.len(), 0..30), spaces in proptest::collection::vec(any::<bool>(), 30)) {
        let mut q = String::new();
        for (i, t) in idx.iter().enumerate() {
            q.push_str(TOKENS[*t]);
            if spaces.get(i).copied().unwrap_or(true) { q.push(' '); }
        }
        exercise(&q);
    }

    #[test]
    fn mutated_conformance_never_panics(a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>(), cut1 in any::<prop::sample::Index>(), cut2 in any::<prop::sample::Index>(), ins in "\\PC{0,4}") {
        let seeds = seeds();
        if seeds.is_empty() { return Ok(()); }
        let x = a.get(&seeds);
        let y = b.get(&seeds);
        let bx: Vec<char> = x.chars().collect();
        let by: Vec<char> = y.chars().collect();
        let i = if bx.is_empty() { 0 } else { cut1.index(bx.len() + 1) };
        let j = if by.is_empty() { 0 } else { cut2.index(by.len() + 1) };
        let spliced: String = bx[..i].iter().chain(ins.chars().collect::<Vec<_>>().iter()).chain(by[j..].iter()).collect();
        exercise(&spliced);
        let deleted: String = bx.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, c)| c).collect();
        exercise(&deleted);
    }
}

#[test]
fn explain_shows_session_scope_first() {
    let e = explain::explain(
        "sessions where repo:acme | messages where role:assistant | group by role | count",
    )
    .unwrap();
    let names: Vec<&str> = e.pipeline_stages.iter().map(|s| s.stage).collect();
    assert_eq!(
        names,
        ["session_scope", "source", "filter", "group_by", "aggregate"]
    );
    assert_eq!(e.unit_source, "messages");
    let json: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
    assert_eq!(json["pipeline_stages"][0]["stage"], "session_scope");
}

/// Found by `mutated_conformance_never_panics`: an empty span just before a multi-byte
/// character made the renderer slice inside it.
#[test]
fn diagnostics_before_multibyte_characters_render() {
    for q in [
        "repo:example-repo with me:\u{a0}istant with messages(role) ",
        "me:\u{a0}",
        "messages where role:\u{1F600}",
        "\u{e9}\u{e9} | \u{a0}",
    ] {
        exercise(q);
    }
}
