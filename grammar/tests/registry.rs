//! Registry tests: names unique, every field documented with an example that resolves, columns
//! real, enum values present.

use quarry_grammar::check;
use quarry_grammar::registry::{FieldKind, Source, UNITS, unit_by_name, unit_def};
use std::collections::HashSet;

#[test]
fn unit_names_are_unique() {
    let mut names = HashSet::new();
    for u in UNITS {
        assert!(names.insert(u.name), "duplicate unit name {}", u.name);
        if u.singular != u.name {
            assert!(
                names.insert(u.singular),
                "duplicate unit name {}",
                u.singular
            );
        }
        assert_eq!(u.table, u.name.replace('-', "_"));
        assert_eq!(unit_def(u.id).name, u.name);
        assert_eq!(unit_by_name(u.singular).map(|x| x.id), Some(u.id));
    }
    assert_eq!(UNITS.len(), 13);
}

#[test]
fn field_names_are_unique_and_documented() {
    for u in UNITS {
        let mut names = HashSet::new();
        for f in u.fields {
            assert!(
                names.insert(f.name),
                "{}: duplicate field {}",
                u.name,
                f.name
            );
            assert!(!f.doc.trim().is_empty(), "{}.{}: no doc", u.name, f.name);
            assert!(
                !f.example.trim().is_empty(),
                "{}.{}: no example",
                u.name,
                f.name
            );
            assert_eq!(
                f.kind == FieldKind::Enum,
                !f.values.is_empty(),
                "{}.{}: enum values",
                u.name,
                f.name
            );
        }
        for b in u.bracket_fields {
            assert!(
                u.field(b).is_some(),
                "{}: bracket field {b} is not a field",
                u.name
            );
        }
    }
}

#[test]
fn every_field_reads_a_real_column() {
    for u in UNITS {
        if let Some(t) = u.time_column {
            assert!(u.has_column(t), "{}: time column {t}", u.name);
        }
        if let Some(s) = u.session_column {
            assert!(u.has_column(s), "{}: session column {s}", u.name);
        }
        for f in u.fields {
            match f.source {
                Source::Column { column } => {
                    assert!(u.has_column(column), "{}.{} → {column}", u.name, f.name)
                }
                Source::Via { unit, column } => {
                    assert!(
                        unit_def(unit).has_column(column),
                        "{}.{} → via {column}",
                        u.name,
                        f.name
                    )
                }
                Source::AnyOf { columns } => {
                    for c in columns {
                        assert!(u.has_column(c), "{}.{} → {c}", u.name, f.name);
                    }
                }
                Source::Derived { .. } | Source::Lane => {}
            }
            if f.metric {
                assert!(
                    f.source.column().is_some(),
                    "{}.{}: metric without column",
                    u.name,
                    f.name
                );
            }
        }
    }
}

#[test]
fn design_columns_are_named_as_in_the_archive() {
    let m = unit_by_name("messages").unwrap();
    assert_eq!(
        m.field("words").unwrap().source.column(),
        Some("word_count")
    );
    assert_eq!(m.field("type").unwrap().source.column(), Some("type"));
    assert_eq!(
        m.field("time").unwrap().source.column(),
        Some("occurred_at_ms")
    );
    let s = unit_by_name("sessions").unwrap();
    assert_eq!(
        s.field("messages").unwrap().source.column(),
        Some("message_count")
    );
    assert!(matches!(
        s.field("tool").unwrap().source,
        Source::Via { .. }
    ));
    assert_eq!(
        unit_by_name("observed-events").unwrap().table,
        "observed_events"
    );
}

#[test]
fn every_field_example_resolves() {
    let mut failures = Vec::new();
    for u in UNITS {
        for f in u.fields {
            let q = format!("{} where {}", u.name, f.example);
            if let Err(d) = check(&q) {
                failures.push(format!("{q}: {d}"));
            }
            if f.groupable {
                let q = format!("{} | group by {} | count", u.name, f.name);
                if let Err(d) = check(&q) {
                    failures.push(format!("{q}: {d}"));
                }
            }
            if f.metric {
                let agg = if f.is_bool() { "avg" } else { "p90" };
                let q = format!("{} | agg count, {agg}:{}", u.name, f.name);
                if let Err(d) = check(&q) {
                    failures.push(format!("{q}: {d}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn session_fields_work_from_every_unit() {
    for u in UNITS.iter().filter(|u| u.name != "sessions") {
        for q in [
            format!(
                "{} where session.repo:acme AND session.messages:>=2",
                u.name
            ),
            format!(
                "{} | group by session.repo | agg count, avg:session.duration_ms",
                u.name
            ),
        ] {
            assert!(check(&q).is_ok(), "{q}: {:?}", check(&q).err());
        }
    }
}

#[test]
fn every_unit_takes_the_full_pipeline() {
    for u in UNITS {
        let g = u
            .fields
            .iter()
            .find(|f| f.groupable)
            .map(|f| f.name)
            .unwrap();
        let q = format!(
            "{} | group by {g}, time:month | agg count, count_distinct:{g} | sort by count desc | offset 1 | limit 5",
            u.name
        );
        assert!(check(&q).is_ok(), "{q}: {:?}", check(&q).err());
        let q = format!(
            "{} | sort by time desc | select {g} | offset 10 | limit 10",
            u.name
        );
        assert!(check(&q).is_ok(), "{q}: {:?}", check(&q).err());
    }
}

/// The registry's columns are the declaration's (`quarry_schema`): every field's column, `via`
/// column and `any of` columns exist in the declared table of their unit, dates read time
/// columns, bracket fields read own columns, and every `has:` value has its evidence.
#[test]
fn registry_columns_exist_in_the_declared_tables() {
    use quarry_grammar::registry::Evidence;
    use quarry_schema::{ColumnType, table};
    let declared = |unit: quarry_grammar::registry::UnitId, column: &str| {
        let name = unit_def(unit).table;
        table(name)
            .unwrap_or_else(|| panic!("{name} is not declared"))
            .query_column(column)
            .map(|c| c.ty)
    };
    for u in UNITS {
        let t = table(u.table).unwrap_or_else(|| panic!("{} is not declared", u.table));
        assert_eq!(u.time_column, t.time_column, "{}", u.name);
        for f in u.fields {
            let columns: Vec<(quarry_grammar::registry::UnitId, &str)> = match f.source {
                Source::Column { column } => vec![(u.id, column)],
                Source::Via { unit, column } => vec![(unit, column)],
                Source::AnyOf { columns } => columns.iter().map(|c| (u.id, *c)).collect(),
                Source::Derived { evidence, .. } => {
                    let names: Vec<&str> = evidence.iter().map(|e| e.name()).collect();
                    assert_eq!(names, f.values, "{}.{}: evidence per value", u.name, f.name);
                    evidence
                        .iter()
                        .map(|e| match e {
                            Evidence::Counter { column, .. } => (u.id, *column),
                            Evidence::Row { unit, column, .. } => (*unit, *column),
                        })
                        .collect()
                }
                Source::Lane => vec![],
            };
            for (unit, column) in columns {
                let ty = declared(unit, column);
                assert!(
                    ty.is_some(),
                    "{}.{} → {column}: not declared",
                    u.name,
                    f.name
                );
                if f.kind == FieldKind::Date {
                    assert_eq!(ty, Some(ColumnType::Time), "{}.{}", u.name, f.name);
                }
            }
        }
        for b in u.bracket_fields {
            let column = u.field(b).and_then(|f| f.source.column());
            assert!(
                column.is_some_and(|c| t.column(c).is_some()),
                "{}: bracket field {b} reads no declared column",
                u.name
            );
        }
    }
}
