//! The ranked form: a session query whose clauses include search text, answered best first.
//!
//! `flaky login test repo:acme since:30d | limit 10` ranks the sessions the clauses admit by
//! how well they match the text (the engine's ranked search), rather than listing every
//! matching session unranked. A query is in the ranked form when it selects sessions (the
//! compact form or `sessions where`), its predicate is clauses joined by AND (written or
//! juxtaposed), at least one of them is search text (bare words, `"phrases"`, `~"fts"`, or a
//! group of those joined by OR), it has no stage but `limit` and `offset`, and no `with`
//! projection. Its other clauses filter the sessions before ranking; a `lane:` clause picks the
//! retrieval lane. Any other query with text uses the text as an unranked filter.
//!
//! The filter is cut from the query text by the clauses' spans, so its diagnostics point at
//! the clauses as written; the search text is the text clauses in the search syntax.

use crate::ast::{Expr, ExprKind, FieldTest, Query, SourceForm, StageKind};

/// A query in the ranked form, in its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedForm {
    /// The search text: the text clauses in the search text's syntax, joined by spaces (all
    /// must match).
    pub text: String,
    /// The other clauses as written, when there are any: side by side (the compact form), or
    /// `sessions where A AND B`.
    pub filter: Option<String>,
    /// The `lane:` clause's value.
    pub lane: Option<String>,
    /// Sessions to skip (`offset`).
    pub offset: u64,
    /// Sessions to return (`limit`), when given.
    pub limit: Option<u64>,
}

/// The ranked form of `query` (its text `text`), or `None` when it is not in it.
pub fn ranked_form(text: &str, query: &Query) -> Option<RankedForm> {
    let sessions = match query.source.form {
        SourceForm::Compact => true,
        SourceForm::Where => query
            .source
            .unit
            .as_ref()
            .is_some_and(|u| u.text == "sessions" || u.text == "session"),
        SourceForm::Bare => false,
    };
    if !sessions || !query.projections.is_empty() {
        return None;
    }
    let (mut offset, mut limit) = (0, None);
    for stage in &query.stages {
        match stage.kind {
            StageKind::Offset { n } => offset = n,
            StageKind::Limit { n } => limit = Some(n),
            _ => return None,
        }
    }
    let mut clauses = Vec::new();
    conjuncts(query.source.predicate.as_ref()?, &mut clauses);
    let (mut words, mut rest, mut lane) = (Vec::new(), Vec::new(), None);
    for clause in clauses {
        let written = text.get(clause.span.start..clause.span.end)?.trim();
        if only_text(clause) {
            words.push(search_text(clause));
        } else if let Some(value) = lane_value(clause) {
            lane = Some(value);
        } else if mentions_text(clause) {
            // Text mixed with fields under OR/NOT: no ranking fits it.
            return None;
        } else {
            rest.push(written);
        }
    }
    if words.is_empty() {
        return None;
    }
    let filter = match query.source.form {
        _ if rest.is_empty() => None,
        SourceForm::Compact => Some(rest.join(" ")),
        _ => Some(format!("sessions where {}", rest.join(" AND "))),
    };
    Some(RankedForm {
        text: words.join(" "),
        filter,
        lane,
        offset,
        limit,
    })
}

/// The clauses of `expr` joined by AND, written or juxtaposed (groups of them opened).
fn conjuncts<'a>(expr: &'a Expr, out: &mut Vec<&'a Expr>) {
    match &expr.kind {
        ExprKind::And { operands, .. } => {
            for operand in operands {
                conjuncts(operand, out);
            }
        }
        ExprKind::Group { inner } if matches!(inner.kind, ExprKind::And { .. }) => {
            conjuncts(inner, out);
        }
        _ => out.push(expr),
    }
}

/// Whether `expr` is search text only: text leaves joined by AND/OR (a negated word is not
/// something to rank by: such a query stays a filter).
fn only_text(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Text { .. } | ExprKind::Fts { .. } => true,
        ExprKind::And { operands, .. } | ExprKind::Or { operands } => {
            operands.iter().all(only_text)
        }
        ExprKind::Group { inner } => only_text(inner),
        _ => false,
    }
}

/// A text-only clause in the search text's syntax: words, `"phrases"`, an `~"fts"` leaf's
/// own text in parentheses, `OR` between alternatives.
fn search_text(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Text { text, quoted: true } => format!("\"{text}\""),
        ExprKind::Text { text, .. } => text.clone(),
        ExprKind::Fts { text } => format!("({text})"),
        ExprKind::And { operands, .. } => {
            let parts: Vec<String> = operands.iter().map(search_text).collect();
            parts.join(" ")
        }
        ExprKind::Or { operands } => {
            let parts: Vec<String> = operands.iter().map(search_text).collect();
            format!("({})", parts.join(" OR "))
        }
        ExprKind::Group { inner } => search_text(inner),
        _ => String::new(),
    }
}

/// Whether `expr` holds a text leaf anywhere.
fn mentions_text(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Text { .. } | ExprKind::Fts { .. } => true,
        ExprKind::And { operands, .. } | ExprKind::Or { operands } => {
            operands.iter().any(mentions_text)
        }
        ExprKind::Not { operand, .. } => mentions_text(operand),
        ExprKind::Group { inner } => mentions_text(inner),
        _ => false,
    }
}

/// The value of a `lane:VALUE` clause.
fn lane_value(expr: &Expr) -> Option<String> {
    let ExprKind::Field(clause) = &expr.kind else {
        return None;
    };
    if clause.field.session || clause.field.name != "lane" {
        return None;
    }
    match &clause.test {
        FieldTest::Match { value } => Some(value.text.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn form(q: &str) -> Option<RankedForm> {
        ranked_form(q, &crate::parse(q).ok()?)
    }

    #[test]
    fn text_with_filters_and_a_limit_is_ranked() {
        assert_eq!(
            form("flaky \"login test\" repo:acme since:30d | limit 10"),
            Some(RankedForm {
                text: "flaky \"login test\"".into(),
                filter: Some("repo:acme since:30d".into()),
                lane: None,
                offset: 0,
                limit: Some(10),
            })
        );
        let f = form("sessions where ~\"cache OR redis\" AND lane:actions | offset 5").unwrap();
        assert_eq!(f.text, "(cache OR redis)");
        assert_eq!(form("login OR signin").unwrap().text, "(login OR signin)");
        assert_eq!(f.lane.as_deref(), Some("actions"));
        assert_eq!((f.filter, f.offset, f.limit), (None, 5, None));
        let f = form("sessions where ~\"cache\" AND messages >= 5 AND repo:acme").unwrap();
        assert_eq!(
            f.filter.as_deref(),
            Some("sessions where messages >= 5 AND repo:acme")
        );
    }

    #[test]
    fn anything_else_with_text_stays_a_filter() {
        for q in [
            "login | count",
            "login | group by repo | count",
            "login | sort by time",
            "login OR repo:acme",
            "repo:acme since:7d",
            "messages where text:login",
            "login with messages(text)",
            "-login repo:acme",
        ] {
            assert_eq!(form(q), None, "{q}");
        }
    }

    #[test]
    fn a_lane_in_a_query_that_ranks_nothing_is_an_error_corrected_by_leaving_it_out() {
        for (q, fixed) in [
            ("lane:actions repo:acme", "repo:acme"),
            ("git lane:actions | count", "git | count"),
            // The negation goes with the clause, not onto the next one.
            ("-lane:actions repo:acme", "repo:acme"),
        ] {
            let d = crate::check(q).unwrap_err();
            let d = &d.diagnostics[0];
            assert_eq!(d.code.as_str(), "lane_without_ranking", "{q}");
            let correction = d.correction.as_deref().unwrap_or_default();
            assert_eq!(
                correction.split_whitespace().collect::<Vec<_>>(),
                fixed.split_whitespace().collect::<Vec<_>>(),
                "{q}"
            );
        }
        assert!(crate::check("git lane:actions | limit 3").is_ok());
    }
}
