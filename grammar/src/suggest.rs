//! Suggestions: "did you mean" (`closest`) and example values and clauses from the registry, for
//! corrections. This module owns no parsing.

use crate::registry::{self, unit_by_name};

/// The closest candidate to `word` (for "did you mean"), if one is close enough.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let mut best: Option<(&'a str, f64)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(word, c);
        let lev = strsim::levenshtein(word, c);
        let ok = score >= 0.85 || (lev <= 2 && word.len() > 2);
        if ok && best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

/// An example value for a field name (from the first unit that has it), for corrections.
pub(crate) fn field_example_value(name: &str) -> String {
    let bare = name.strip_prefix("session.").unwrap_or(name);
    for unit in registry::UNITS {
        if let Some(f) = unit.field(bare) {
            if let Some((_, v)) = f.example.split_once(':')
                && !v.starts_with(['>', '<', '='])
            {
                return v.to_string();
            }
            return match f.kind {
                registry::FieldKind::Date => "2026-01-01".into(),
                registry::FieldKind::Count | registry::FieldKind::Number => ">=1".into(),
                registry::FieldKind::Bool => "true".into(),
                _ => "VALUE".into(),
            };
        }
    }
    "VALUE".to_string()
}

/// An example predicate for a unit (its first field with a plain example).
pub(crate) fn example_clause(unit: &str) -> String {
    let Some(u) = unit_by_name(unit) else {
        return "id:VALUE".to_string();
    };
    u.fields
        .iter()
        .find(|f| f.groupable && f.example.contains(':'))
        .or_else(|| u.fields.first())
        .map(|f| f.example.to_string())
        .unwrap_or_else(|| "id:VALUE".to_string())
}
