//! CLI tests of `quarry explain` and `quarry complete` (the grammar's verbs): output shape and exit
//! codes. A module of the `integration` test binary (`tests/main.rs`).

use std::process::{Command, Output};

fn quarry(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("run quarry {args:?}: {e}"))
}

fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn explain_json_prints_pipeline_stages() {
    let out = quarry(&[
        "explain",
        "messages where role:assistant | group by role | count",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout_json(&out);
    assert_eq!(json["unit_source"], "messages");
    let stages: Vec<&str> = json["pipeline_stages"]
        .as_array()
        .expect("pipeline_stages")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(stages, ["source", "filter", "group_by", "aggregate"]);
    assert!(json["ast"].is_object());
}

#[test]
fn explain_global_format_before_the_verb() {
    let out = quarry(&[
        "--format",
        "json",
        "explain",
        "sessions where repo:acme | messages where role:user",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout_json(&out);
    assert_eq!(json["pipeline_stages"][0]["stage"], "session_scope");
}

#[test]
fn explain_text_lists_stages() {
    let out = quarry(&[
        "explain",
        "actions where is_error:true | group by tool | count",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pipeline_stages"), "{text}");
    assert!(text.contains("group_by"), "{text}");
}

#[test]
fn explain_bad_query_exits_2_with_a_caret() {
    let out = quarry(&["explain", "messages role:assistant"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing_where"), "{err}");
    assert!(err.contains("1:10"), "line:column of the caret: {err}");
    assert!(
        err.contains("messages where role:assistant"),
        "correction: {err}"
    );
}

#[test]
fn explain_bad_query_json_has_column_and_correction() {
    let out = quarry(&["explain", "files where repo:acme", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let json = stdout_json(&out);
    let d = &json["diagnostics"][0];
    assert_eq!(d["code"], "unsupported_field");
    assert_eq!(d["column"], 13);
    assert_eq!(d["correction"], "files where session.repo:acme");
    assert!(
        d["supported_fields"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
}

#[test]
fn complete_examples_and_errors() {
    let out = quarry(&["complete", "--examples"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("messages where"), "{text}");

    let out = quarry(&["complete", "--errors", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let json = stdout_json(&out);
    let errors = json["errors"].as_array().expect("errors");
    assert!(errors.len() >= 20);
    for e in errors {
        assert!(
            e["diagnostic"]["column"].as_u64().is_some_and(|c| c >= 1),
            "{e}"
        );
        assert!(e["correction"].is_string(), "{e}");
    }
}
