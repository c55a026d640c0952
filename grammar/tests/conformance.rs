//! The conformance corpus: every positive parses and lands on its declared unit; every negative
//! is rejected with a column or the unsupported field, and its corrected form parses — except the
//! three the conformance README turns into positives.

use crate::common::read_tsv;
use quarry_grammar::{DiagnosticCode, check, parse};

/// Negatives that quarry accepts (sessions and every unit take the full pipeline).
const PROMOTED: &[&str] = &[
    "sessions-direct-count",
    "unsupported-run-aggregate",
    "unsupported-context-snapshot-count",
];

#[test]
fn all_positives_parse_and_resolve_to_their_unit() {
    let Some(rows) = read_tsv("polylogue-positive.tsv") else {
        return;
    };
    assert_eq!(rows.len(), 106);
    let mut failures = Vec::new();
    for row in &rows {
        let q = &row["expression"];
        match check(q) {
            Ok(r) => {
                if r.unit_source != row["unit_source"] {
                    failures.push(format!(
                        "{}: unit {} != {}",
                        row["key"], r.unit_source, row["unit_source"]
                    ));
                }
            }
            Err(d) => failures.push(format!("{} `{q}`: {d}", row["key"])),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn promoted_negatives_are_positives() {
    let Some(rows) = read_tsv("polylogue-negative.tsv") else {
        return;
    };
    for row in rows
        .iter()
        .filter(|r| PROMOTED.contains(&r["key"].as_str()))
    {
        let q = &row["expression"];
        assert!(check(q).is_ok(), "{q} should resolve: {:?}", check(q).err());
    }
    assert_eq!(
        rows.iter()
            .filter(|r| PROMOTED.contains(&r["key"].as_str()))
            .count(),
        3
    );
}

/// The expected first diagnostic of each negative: (key, code, column).
const EXPECTED: &[(&str, DiagnosticCode, usize)] = &[
    (
        "missing-terminal-conjunction-and-session-date-prefix",
        DiagnosticCode::MissingConjunction,
        41,
    ),
    (
        "unscoped-terminal-repository-field",
        DiagnosticCode::UnsupportedField,
        13,
    ),
    (
        "empty-terminal-predicate",
        DiagnosticCode::EmptyPredicate,
        15,
    ),
    (
        "equals-instead-of-field-colon",
        DiagnosticCode::ComparisonOnTextField,
        16,
    ),
    ("missing-group-by-keyword", DiagnosticCode::InvalidStage, 39),
    ("missing-terminal-where", DiagnosticCode::MissingWhere, 45),
    (
        "plural-structural-unit",
        DiagnosticCode::PluralStructuralUnit,
        23,
    ),
    ("unclosed-boolean-group", DiagnosticCode::UnclosedParen, 34),
    ("negated-ranked-leaf", DiagnosticCode::NegatedRankedLeaf, 20),
    (
        "equals-on-string-field",
        DiagnosticCode::ComparisonOnTextField,
        18,
    ),
    ("missing-field-value", DiagnosticCode::MissingValue, 17),
    (
        "session-only-unknown-field",
        DiagnosticCode::UnsupportedField,
        16,
    ),
    (
        "terminal-session-field-without-prefix",
        DiagnosticCode::UnsupportedField,
        16,
    ),
    ("non-integer-limit", DiagnosticCode::InvalidInteger, 39),
    (
        "fts-column-query-at-strict-command-floor",
        DiagnosticCode::UnsupportedField,
        1,
    ),
];

#[test]
fn negatives_are_rejected_with_column_or_field_and_corrections_parse() {
    let Some(rows) = read_tsv("polylogue-negative.tsv") else {
        return;
    };
    assert_eq!(rows.len(), 18);
    let mut checked = 0;
    for row in rows
        .iter()
        .filter(|r| !PROMOTED.contains(&r["key"].as_str()))
    {
        let q = &row["expression"];
        let diags = check(q).expect_err(q);
        let d = diags.first().expect("one diagnostic");
        assert!(d.column >= 1, "{q}: column");
        let field = &row["field"];
        if !field.is_empty()
            && matches!(
                d.code,
                DiagnosticCode::UnsupportedField | DiagnosticCode::UnknownField
            )
        {
            assert!(
                d.found
                    .as_deref()
                    .is_some_and(|f| f.contains(field.as_str())),
                "{q}: {d:?}"
            );
            assert!(!d.supported_fields.is_empty(), "{q}: supported fields");
        }
        let (_, code, column) = EXPECTED
            .iter()
            .find(|(k, _, _)| *k == row["key"])
            .unwrap_or_else(|| panic!("no expectation for {}", row["key"]));
        assert_eq!((d.code, d.column), (*code, *column), "{q}: {d:#?}");
        // the declared corrected form parses, and so does ours
        let corrected = &row["corrected_form"];
        assert!(
            check(corrected).is_ok(),
            "corrected form `{corrected}`: {:?}",
            check(corrected).err()
        );
        let ours = d
            .correction
            .as_deref()
            .unwrap_or_else(|| panic!("{q}: no correction"));
        assert!(
            parse(ours).is_ok(),
            "our correction `{ours}` of `{q}` does not parse"
        );
        checked += 1;
    }
    assert_eq!(checked, 15);
}
