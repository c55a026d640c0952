//! Completions: parser-valid examples per unit and form, and typical mistakes with their
//! diagnostic and correction (the spec's `query_completions(kind=example|error)`).
//!
//! Examples are generated from the registry, so a new field or unit shows up here by itself; tests
//! check that every example resolves and every mistake is rejected with a correction that parses.

use serde::Serialize;

use crate::diagnostic::Diagnostic;
use crate::registry::{self, UNITS, UnitId};

/// One parser-valid example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Example {
    /// The unit the rows belong to.
    pub unit: &'static str,
    /// The form (`compact`, `session`, `terminal`, `pipeline`, `aggregate`, `scope`, `projection`, ...).
    pub form: &'static str,
    /// The query.
    pub query: String,
}

/// One typical mistake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorExample {
    /// The mistaken query.
    pub query: &'static str,
    /// What the mistake is.
    pub mistake: &'static str,
    /// The diagnostic quarry gives.
    pub diagnostic: Diagnostic,
    /// The correction (parses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correction: Option<String>,
}

/// Parser-valid examples, per unit and form.
pub fn examples() -> Vec<Example> {
    let mut out = Vec::new();
    let fixed: &[(&str, &str)] = &[
        ("compact", "repo:acme since:7d"),
        (
            "compact",
            "origin:(codex-session|claude-code-session) title:\"query DSL\"",
        ),
        ("compact", "messages:>=5 words:<=500 -tag:stale"),
        ("compact", "\"null pointer\" repo:acme"),
        (
            "session",
            "sessions where (repo:acme OR repo:acme-lib) AND NOT tag:stale",
        ),
        ("session", "sessions where duration_ms >= 60000"),
        (
            "session",
            "sessions where date between 2026-06-01 and 2026-06-30",
        ),
        (
            "exists",
            "sessions where exists message(role:assistant AND text:timeout)",
        ),
        (
            "sequence",
            "sessions where seq(action:file_edit -> action:shell)",
        ),
        ("fts", "sessions where ~\"null pointer\" AND repo:acme"),
        ("semantic", "near:\"semantic search\""),
        (
            "semantic",
            "sessions where semantic:\"query compiler failure\"",
        ),
        ("lineage", "lineage:id:codex-session:abc"),
        (
            "projection",
            "repo:acme with messages(message_id,role,text)[role:user, last:10]",
        ),
        (
            "projection",
            "sessions where tag:review with actions(tool_name,semantic_type)[first:5], files(path)",
        ),
        (
            "aggregate",
            "sessions | group by repo | agg count, sum:output_tokens, p90:duration_ms",
        ),
        ("aggregate", "sessions where repo:acme | count"),
        (
            "aggregate",
            "sessions | group by time:week | count | sort by key asc",
        ),
    ];
    for (form, q) in fixed {
        out.push(Example {
            unit: "sessions",
            form,
            query: (*q).to_string(),
        });
    }
    for u in UNITS.iter().filter(|u| u.id != UnitId::Sessions) {
        out.extend(unit_examples(u));
    }
    out
}

fn unit_examples(u: &'static registry::Unit) -> Vec<Example> {
    let mut out = Vec::new();
    let clause = crate::suggest::example_clause(u.name);
    let push = |out: &mut Vec<Example>, form: &'static str, query: String| {
        out.push(Example {
            unit: u.name,
            form,
            query,
        });
    };
    push(&mut out, "terminal", format!("{} where {clause}", u.name));
    let group = u.fields.iter().find(|f| f.groupable).map(|f| f.name);
    if let Some(g) = group {
        push(
            &mut out,
            "aggregate",
            format!("{} | group by {g} | count", u.name),
        );
        push(
            &mut out,
            "aggregate",
            format!(
                "{} where {clause} | group by {g} | count | sort by count desc | limit 10",
                u.name
            ),
        );
    }
    if let Some(m) = u.fields.iter().find(|f| f.metric && !f.is_bool()) {
        let by = group
            .map(|g| format!(" | group by {g}"))
            .unwrap_or_default();
        push(
            &mut out,
            "aggregate",
            format!("{}{by} | agg count, avg:{}, p90:{}", u.name, m.name, m.name),
        );
    }
    if u.time_column.is_some() {
        push(
            &mut out,
            "pipeline",
            format!("{} | sort by time desc | limit 10", u.name),
        );
        push(
            &mut out,
            "aggregate",
            format!("{} | group by time:day | count", u.name),
        );
    }
    push(
        &mut out,
        "scope",
        format!("sessions where repo:acme | {} where {clause}", u.name),
    );
    push(
        &mut out,
        "session_field",
        format!("{} where session.repo:acme AND session.since:7d", u.name),
    );
    if u.id != UnitId::Usage && u.singular != u.name {
        out.push(Example {
            unit: "sessions",
            form: "exists",
            query: format!("sessions where exists {}({clause})", u.singular),
        });
    }
    out
}

/// The typical mistakes and what quarry says about them.
pub const MISTAKES: &[(&str, &str)] = &[
    ("messages where", "a `where` with no predicate"),
    ("messages role:assistant", "a unit name without `where`"),
    ("sessions where repo=acme", "`=` on a text field"),
    ("assertions where kind = decision", "`=` on a text field"),
    ("files where path", "a field without a value"),
    (
        "messages where repo:acme",
        "a session field on a child unit without `session.`",
    ),
    (
        "files where repo:acme AND path:src/main.rs",
        "a session field on files without `session.`",
    ),
    (
        "sessions where status:active",
        "a field of another unit on sessions",
    ),
    (
        "actions where session.repo:acme since:7d",
        "two clauses without AND in a `where` predicate",
    ),
    (
        "sessions where exists messages(role:assistant)",
        "a plural unit after `exists`",
    ),
    ("sessions where (repo:acme", "an unclosed parenthesis"),
    (
        "sessions where NOT near:\"semantic search\"",
        "a negated ranked leaf",
    ),
    (
        "messages where role:assistant | group role | count",
        "`group` without `by`",
    ),
    (
        "messages where role:assistant | limit many",
        "a non-integer limit",
    ),
    (
        "sessions where repo:acme | messages role:assistant",
        "a unit stage without `where`",
    ),
    ("messages where rol:assistant", "a misspelt field"),
    ("messages where role:assitant", "a misspelt enum value"),
    ("messages | agg avg:role", "a text field as a metric"),
    ("messages | agg p100:words", "a percentile out of range"),
    (
        "messages | group by time:minute | count",
        "an unknown time bucket",
    ),
    (
        "messages | sort by count desc",
        "sorting rows by count without an aggregate",
    ),
    (
        "sessions where repo:acme and tag:review",
        "a lower-case Boolean operator",
    ),
    ("text:css refactor", "`text:` on sessions"),
    ("sessions where since:last-week", "a malformed date"),
    (
        "messages | count | group by role",
        "`group by` after `count`",
    ),
];

/// Runs every mistake through the parser and resolver.
pub fn errors() -> Vec<ErrorExample> {
    MISTAKES
        .iter()
        .filter_map(|(q, what)| {
            let d = crate::check(q).err()?;
            let first = d.diagnostics.into_iter().next()?;
            Some(ErrorExample {
                query: q,
                mistake: what,
                correction: first.correction.clone(),
                diagnostic: first,
            })
        })
        .collect()
}

/// Examples as text: one line per example, grouped by unit.
pub fn examples_text() -> String {
    let mut out = String::new();
    let mut last = "";
    for e in examples() {
        if e.unit != last {
            out.push_str(&format!("{}:\n", e.unit));
            last = e.unit;
        }
        out.push_str(&format!("  {:<14} {}\n", e.form, e.query));
    }
    out
}

/// Mistakes as text: the query, the diagnostic and the correction.
pub fn errors_text() -> String {
    let mut out = String::new();
    for e in errors() {
        out.push_str(&format!(
            "{}\n  error[{}] column {}: {}\n",
            e.query, e.diagnostic.code, e.diagnostic.column, e.diagnostic.message
        ));
        if let Some(c) = &e.correction {
            out.push_str(&format!("  try: {c}\n"));
        }
        out.push('\n');
    }
    out
}
