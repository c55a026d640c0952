//! Every correction the crate produces parses: for the completion mistakes, the snapshot
//! mistakes, and a sweep of generated mistakes over the registry.

use quarry_grammar::{check, complete, parse};

fn assert_corrections_parse(query: &str) {
    if let Err(diags) = check(query) {
        for d in &diags.diagnostics {
            if let Some(c) = &d.correction {
                assert!(
                    parse(c).is_ok(),
                    "correction `{c}` of `{query}` does not parse"
                );
                assert_ne!(c, query, "correction of `{query}` is the query itself");
            }
        }
    }
}

#[test]
fn completion_mistakes_are_rejected_with_corrections_that_resolve() {
    let errors = complete::errors();
    assert_eq!(
        errors.len(),
        complete::MISTAKES.len(),
        "every mistake is rejected"
    );
    for e in &errors {
        let c = e
            .correction
            .as_deref()
            .unwrap_or_else(|| panic!("{}: no correction", e.query));
        assert!(
            check(c).is_ok(),
            "correction `{c}` of `{}`: {:?}",
            e.query,
            check(c).err()
        );
    }
}

#[test]
fn completion_examples_resolve() {
    let examples = complete::examples();
    assert!(examples.len() > 80);
    for e in &examples {
        let r = check(&e.query).unwrap_or_else(|d| panic!("{}: {d}", e.query));
        assert_eq!(r.unit_source, e.unit, "{}", e.query);
    }
    for unit in quarry_grammar::registry::UNITS {
        assert!(
            examples.iter().any(|e| e.unit == unit.name),
            "no example for {}",
            unit.name
        );
    }
}

#[test]
fn snapshot_mistakes_have_parsing_corrections() {
    for (_, q) in crate::snapshots::MISTAKES {
        assert_corrections_parse(q);
    }
}

#[test]
fn generated_mistakes_have_parsing_corrections() {
    for u in quarry_grammar::registry::UNITS {
        for f in u.fields {
            let qs = [
                format!("{} where {}", u.name, f.name),
                format!("{} where {}:", u.name, f.name),
                format!("{} where {} = x", u.name, f.name),
                format!("{} where {}x:1", u.name, f.name),
                format!("{} where {}:(a|", u.name, f.name),
                format!("{} | group by {}x | count", u.name, f.name),
                format!("{} | agg p0:{}", u.name, f.name),
                format!("{} | agg avg:{}", u.name, f.name),
                format!("{} | sort by {} | sort by time", u.name, f.name),
                format!("{} {}:x", u.name, f.name),
                format!("sessions where exists {}({}:x)", u.name, f.name),
                format!("sessions where {}:x", f.name),
                format!("{}:x AND", f.name),
            ];
            for q in &qs {
                assert_corrections_parse(q);
            }
        }
    }
}
