//! The typed IR: every value parsed once by the resolver (numbers, dates, booleans, enum members,
//! `has:` evidence, bracket filters), and shown in `explain` as it was before typing.

use quarry_grammar::ast::CmpOp;
use quarry_grammar::check;
use quarry_grammar::ir::{
    BracketFilter, DateLit, DurationUnit, FieldPred, Literal, Number, PipelineStage, Pred, Test,
    Value,
};
use quarry_grammar::registry::Evidence;

/// The only field test of `query`'s filter.
fn field_test(query: &str) -> FieldPred {
    let resolved = check(query).unwrap_or_else(|d| panic!("{query}: {d}"));
    match resolved.predicate() {
        Some(Pred::Field(f)) => f.clone(),
        other => panic!("{query}: not one field test: {other:?}"),
    }
}

#[test]
fn since_is_a_typed_date_bound() {
    let f = field_test("since:2026-01-02");
    assert_eq!(f.source.column(), Some("created_at"));
    let Test::Compare {
        op: CmpOp::Ge,
        value:
            Literal::Date(DateLit::Absolute {
                year,
                month,
                day,
                time,
                ..
            }),
    } = f.test
    else {
        panic!("{:?}", f.test);
    };
    assert_eq!((year, month, day, time), (2026, 1, 2, None));
}

#[test]
fn relative_and_zoned_times_are_typed() {
    let f = field_test("since:7d");
    assert_eq!(
        f.test,
        Test::Compare {
            op: CmpOp::Ge,
            value: Literal::Date(DateLit::Relative {
                amount: 7,
                unit: DurationUnit::Days
            })
        }
    );
    let f = field_test("until:2026-01-02T10:30:00.250+02:00");
    let Test::Compare {
        op: CmpOp::Le,
        value: Literal::Date(DateLit::Absolute { time: Some(t), .. }),
    } = f.test
    else {
        panic!("{:?}", f.test);
    };
    assert_eq!((t.hour, t.minute, t.second, t.millis), (10, 30, 0, 250));
    assert_eq!(t.offset_minutes, Some(120));
}

#[test]
fn counts_and_numbers_are_typed() {
    let f = field_test("messages where words:>=10");
    assert_eq!(f.source.column(), Some("word_count"));
    assert_eq!(
        f.test,
        Test::Compare {
            op: CmpOp::Ge,
            value: Literal::Int(10)
        }
    );
    let f = field_test("sessions where reported_cost_usd >= 1.5");
    assert_eq!(
        f.test,
        Test::Compare {
            op: CmpOp::Ge,
            value: Literal::Float(1.5)
        }
    );
    assert_eq!(Literal::from(Number::Int(3)), Literal::Int(3));
}

#[test]
fn booleans_enums_and_text_are_typed() {
    assert_eq!(
        field_test("actions where is_error:true").test,
        Test::Bool { value: true }
    );
    assert_eq!(
        field_test("actions where is_error:no").test,
        Test::Bool { value: false }
    );
    assert_eq!(
        field_test("messages where role:(USER|assistant)").test,
        Test::Match {
            values: vec![Value::Enum("user"), Value::Enum("assistant")]
        }
    );
    assert_eq!(
        field_test("messages where text:timeout").test,
        Test::Match {
            values: vec![Value::Text("timeout".into())]
        }
    );
}

#[test]
fn a_value_may_end_in_a_quoted_part_after_its_last_colon() {
    // Found by the differential fuzzer (issue 24): ChatGPT export ids hold spaces, and
    // `lineage:id:"..."` was a `missing_conjunction` error.
    let id = "chatgpt-export:synthetic-3248 synthetic-3248 synthe";
    let resolved = check(&format!("lineage:id:\"{id}\"")).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(
        resolved.predicate(),
        Some(&Pred::Lineage {
            session_id: id.to_string()
        })
    );
    assert_eq!(
        field_test("sessions where session:chatgpt-export:\"a b\"").test,
        Test::Match {
            values: vec![Value::Text("chatgpt-export:a b".into())]
        }
    );
    // A word that ends in a colon with a space before the string is still two clauses.
    assert!(check("sessions where session:chatgpt-export: \"a b\"").is_err());
}

#[test]
fn has_values_carry_their_evidence() {
    let f = field_test("has:(tools|attachments)");
    let Test::Match { values } = f.test else {
        panic!("{:?}", f.test);
    };
    assert_eq!(
        values.first(),
        Some(&Value::Evidence(Evidence::Counter {
            name: "tools",
            column: "tool_use_messages"
        }))
    );
    match values.get(1) {
        Some(Value::Evidence(Evidence::Row { values, .. })) => {
            assert_eq!(*values, ["image", "document"])
        }
        other => panic!("{other:?}"),
    }
}

fn filters(query: &str) -> Vec<BracketFilter> {
    let resolved = check(query).unwrap_or_else(|d| panic!("{query}: {d}"));
    resolved
        .pipeline_stages
        .iter()
        .find_map(|s| match s {
            PipelineStage::Project { projections } => {
                Some(projections.iter().flat_map(|p| p.filters.clone()).collect())
            }
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn bracket_filters_are_bound_and_typed() {
    let f =
        filters("sessions with actions[is_error:yes, exit_code:2, tool:Bash], messages[role:User]");
    let typed: Vec<(&str, Value)> = f.iter().map(|f| (f.column, f.value.clone())).collect();
    assert_eq!(
        typed,
        [
            ("is_error", Value::Bool(true)),
            ("exit_code", Value::Number(Number::Int(2))),
            ("tool_name", Value::Text("Bash".into())),
            ("role", Value::Enum("user")),
        ]
    );
    let d = check("sessions with actions[is_error:maybe]").unwrap_err();
    let first = &d.diagnostics[0];
    assert_eq!(first.code.to_string(), "invalid_bool");
    assert_eq!(
        first.correction.as_deref(),
        Some("sessions with actions[is_error:true]")
    );
}

#[test]
fn explain_shows_typed_values_as_written() {
    let e = quarry_grammar::explain::explain("has:tools with actions[is_error:yes]").unwrap();
    let json: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
    let filter = &json["resolved"]["pipeline_stages"][1]["predicate"];
    assert_eq!(filter["test"]["values"], serde_json::json!(["tools"]));
    assert_eq!(filter["source"]["type"], "derived");
    let project = &json["resolved"]["pipeline_stages"][2]["projections"][0];
    assert_eq!(project["filters"], serde_json::json!([["is_error", "yes"]]));
    let e = quarry_grammar::explain::explain("since:2026-01-02T10:00:00Z").unwrap();
    let json: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
    let value = &json["resolved"]["pipeline_stages"][1]["predicate"]["test"]["value"];
    assert_eq!(value["value"]["has_time"], true);
    assert_eq!(value["value"]["text"], "2026-01-02T10:00:00Z");
}
