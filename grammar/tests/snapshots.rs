//! Snapshot tests of diagnostics: one snapshot per distinct mistake, with the JSON diagnostic and
//! the caret rendering. Review changes with `INSTA_UPDATE=always cargo test -p quarry-grammar`.

use quarry_grammar::{check, parse, render};

/// (snapshot name, mistaken query)
pub const MISTAKES: &[(&str, &str)] = &[
    ("empty_query", ""),
    ("empty_predicate", "messages where"),
    ("missing_where", "messages role:assistant"),
    (
        "missing_where_in_stage",
        "sessions where repo:acme | messages role:assistant",
    ),
    ("equals_on_text_field", "sessions where repo=acme"),
    (
        "spaced_equals_on_text_field",
        "assertions where kind = decision",
    ),
    ("missing_value", "files where path"),
    (
        "missing_value_after_colon",
        "files where path: AND tool:Edit",
    ),
    ("session_field_without_prefix", "messages where repo:acme"),
    ("child_field_on_sessions", "sessions where status:active"),
    (
        "missing_conjunction",
        "actions where session.repo:acme since:7d AND output:failed",
    ),
    (
        "plural_exists_unit",
        "sessions where exists messages(role:assistant)",
    ),
    (
        "unknown_exists_unit",
        "sessions where exists mesage(role:assistant)",
    ),
    ("unclosed_paren", "sessions where (repo:acme"),
    ("unmatched_paren", "messages where (role:user))"),
    (
        "negated_near",
        "sessions where NOT near:\"semantic search\"",
    ),
    ("dash_negated_semantic", "-semantic:\"query compiler\""),
    (
        "group_without_by",
        "messages where role:assistant | group role | count",
    ),
    (
        "non_integer_limit",
        "messages where role:assistant | limit many",
    ),
    ("misspelt_field", "messages where rol:assistant"),
    ("misspelt_enum_value", "messages where role:assitant"),
    ("text_field_as_metric", "messages | agg avg:role"),
    ("percentile_out_of_range", "messages | agg p100:words"),
    ("unknown_aggregate", "messages | agg count, mean:words"),
    ("bool_in_percentile", "actions | agg p90:is_error"),
    (
        "unknown_time_bucket",
        "messages | group by time:minute | count",
    ),
    ("time_without_bucket", "messages | group by time | count"),
    ("not_groupable", "messages | group by text | count"),
    (
        "sort_by_count_without_aggregate",
        "messages | sort by count desc",
    ),
    ("group_after_count", "messages | count | group by role"),
    ("duplicate_limit", "messages | limit 5 | limit 6"),
    (
        "lowercase_operator",
        "sessions where repo:acme and tag:review",
    ),
    (
        "text_on_sessions",
        "text:css {session_id example}: refactor",
    ),
    ("malformed_date", "sessions where since:last-week"),
    ("invalid_calendar_date", "sessions where until:2026-02-30"),
    ("invalid_number", "messages where words >= many"),
    ("invalid_bool", "actions where is_error:maybe"),
    ("unknown_session_field", "messages where session.rpo:acme"),
    (
        "unterminated_string",
        "sessions where title:\"query compiler",
    ),
    ("bare_text_in_where", "messages where timeout"),
    ("quoted_text_in_where", "messages where \"timeout\""),
    ("dash_in_where", "messages where role:user AND -type:text"),
    ("dangling_and", "sessions where repo:acme AND"),
    ("unknown_stage", "messages | grup by role | count"),
    (
        "misplaced_unit_stage",
        "messages where role:assistant | actions where tool:Bash",
    ),
    (
        "unit_query_mid_compact",
        "repo:acme messages where role:user",
    ),
    (
        "projection_on_rows",
        "messages where role:assistant with messages(role)",
    ),
    (
        "unknown_projection_column",
        "repo:acme with messages(word_count,words)",
    ),
    ("bad_bracket_field", "repo:acme with messages[tool:Bash]"),
    ("one_step_sequence", "sessions where seq(action:file_edit)"),
    (
        "bad_sequence_field",
        "sessions where seq(role:user -> action:shell)",
    ),
    ("lineage_without_id", "lineage:codex-session:abc"),
    (
        "exists_in_unit_predicate",
        "messages where exists block(type:code) AND role:user",
    ),
    ("near_in_unit_predicate", "messages where near:\"timeout\""),
    ("fts_in_unit_predicate", "actions where ~\"pytest\""),
    (
        "unclosed_alternatives",
        "sessions where origin:(codex-session|claude-code-session",
    ),
    ("trailing_pipe", "messages where role:user |"),
    ("select_after_aggregate", "messages | count | select role"),
    ("count_with_field", "messages | agg count:role"),
    ("sort_after_limit", "messages | limit 5 | sort by time"),
    ("field_typo_in_group", "actions | group by tol | count"),
    ("between_without_and", "messages where words between 1 5"),
    ("comparison_on_enum", "messages where role >= user"),
    ("alternatives_on_count", "sessions where messages:(1|2)"),
    ("unknown_field_with_colon_text", "https://example.com/path"),
];

fn snapshot_text(query: &str) -> String {
    let diags = check(query).expect_err(query);
    let json = serde_json::to_string_pretty(&diags).unwrap();
    let rendered = render(query, &diags, false);
    format!("query: {query}\n\n{rendered}\n{json}\n")
}

#[test]
fn diagnostics_snapshots() {
    let mut distinct = std::collections::HashSet::new();
    for (name, query) in MISTAKES {
        let diags = check(query).expect_err(query);
        let first = diags.first().unwrap();
        distinct.insert(first.code);
        if let Some(c) = &first.correction {
            assert!(parse(c).is_ok(), "{name}: correction `{c}` does not parse");
        }
        insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(*name, snapshot_text(query));
        });
    }
    assert!(MISTAKES.len() >= 30);
    assert!(distinct.len() >= 25, "distinct codes: {}", distinct.len());
}

#[test]
fn guards_reject_long_and_deep_queries() {
    let long = "a".repeat(quarry_grammar::MAX_QUERY_BYTES + 1);
    let d = check(&long).unwrap_err();
    assert_eq!(
        d.first().unwrap().code,
        quarry_grammar::DiagnosticCode::QueryTooLong
    );
    let deep = format!(
        "sessions where {}repo:a{}",
        "(".repeat(100),
        ")".repeat(100)
    );
    let d = check(&deep).unwrap_err();
    assert_eq!(
        d.first().unwrap().code,
        quarry_grammar::DiagnosticCode::NestingTooDeep
    );
    let nots = format!("sessions where {}repo:a", "NOT ".repeat(100));
    assert_eq!(
        check(&nots).unwrap_err().first().unwrap().code,
        quarry_grammar::DiagnosticCode::NestingTooDeep
    );
    let ok = format!("sessions where {}repo:a{}", "(".repeat(10), ")".repeat(10));
    assert!(check(&ok).is_ok());
}
