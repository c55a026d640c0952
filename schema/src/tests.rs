//! The declaration is consistent with itself: every name it refers to exists, with the right
//! type; the catalog leads the list; docs are one line each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use crate::*;

#[test]
fn names_are_unique() {
    let mut tables = HashSet::new();
    for t in TABLES {
        assert!(tables.insert(t.name), "table {} twice", t.name);
        let mut columns = HashSet::new();
        for c in t.columns {
            assert!(columns.insert(c.name), "{}.{} twice", t.name, c.name);
        }
        assert!(!t.columns.is_empty(), "{} has no columns", t.name);
    }
}

#[test]
fn every_referenced_column_exists() {
    for t in TABLES {
        let has = |c: &str| t.column(c).is_some();
        for k in t.key {
            assert!(has(k), "{}: key {k}", t.name);
        }
        if let Some(s) = t.session_key {
            assert!(has(s), "{}: session key {s}", t.name);
            assert_eq!(t.column(s).unwrap().ty, ColumnType::Text);
        }
        if let Some(time) = t.time_column {
            assert_eq!(
                t.column(time).map(|c| c.ty),
                Some(ColumnType::Time),
                "{}: time column {time}",
                t.name
            );
        }
        for f in t.fulltext {
            assert_eq!(
                t.column(f).map(|c| c.ty),
                Some(ColumnType::Text),
                "{}.{f}",
                t.name
            );
        }
        for l in t.links {
            let own = t
                .column(l.column)
                .unwrap_or_else(|| panic!("{}: link {l:?}", t.name));
            let target = table(l.table).unwrap_or_else(|| panic!("{}: link {l:?}", t.name));
            let referenced = target
                .column(l.references)
                .unwrap_or_else(|| panic!("{}: link {l:?}", t.name));
            assert_eq!(own.ty, referenced.ty, "{}: link {l:?}", t.name);
            assert!(
                target.key.contains(&l.references),
                "{}: {l:?} is no key",
                t.name
            );
        }
    }
}

#[test]
fn catalog_leads_the_list_in_catalog_order() {
    let names: Vec<&str> = CATALOG.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "sessions",
            "messages",
            "blocks",
            "actions",
            "files",
            "assertions",
            "runs",
            "observed_events",
            "context_snapshots",
            "delegations",
            "events",
            "events_raw",
            "turns",
            "usage"
        ]
    );
    assert!(TABLES[CATALOG.len()..].iter().all(|t| !t.is_in_catalog()));
    assert!(CATALOG.iter().all(Table::is_in_catalog));
}

#[test]
fn replaced_tables_are_owned_by_a_session() {
    for t in TABLES.iter().filter(|t| t.replaced_per_session) {
        assert!(
            matches!(t.kind, TableKind::Table | TableKind::Bookkeeping),
            "{}",
            t.name
        );
        assert!(t.session_key.is_some(), "{}", t.name);
    }
    let replaced: Vec<&str> = TABLES
        .iter()
        .filter(|t| t.replaced_per_session)
        .map(|t| t.name)
        .collect();
    assert!(!replaced.contains(&"assertions"));
    // `usage` is resolved across files from `usage_records`, which a re-ingest replaces.
    assert!(!replaced.contains(&"usage"));
    assert!(replaced.contains(&"usage_records"));
    assert!(replaced.contains(&"events_raw") && replaced.contains(&"delegations"));
}

#[test]
fn the_events_view_is_events_raw_without_turn_committed() {
    let view = table("events").unwrap();
    let raw = table("events_raw").unwrap();
    assert_eq!(view.kind, TableKind::View);
    let expected: Vec<&Column> = raw
        .columns
        .iter()
        .filter(|c| c.name != "turn_committed")
        .collect();
    let got: Vec<&Column> = view.columns.iter().collect();
    assert_eq!(got, expected);
}

#[test]
fn visibility() {
    let raw = table("events_raw").unwrap();
    assert_eq!(raw.visibility, Visibility::AdminOnly);
    assert!(!raw.is_visible_to_readers());
    let events = table("events").unwrap();
    assert!(events.is_visible_to_readers());
    assert!(!events.column("payload").unwrap().is_visible_to_readers());
    assert!(events.column("seq").unwrap().is_visible_to_readers());
    for name in ["meta", "source_files", "blocks_fts"] {
        assert!(!table(name).unwrap().is_visible_to_readers(), "{name}");
    }
    let public: Vec<&str> = TABLES
        .iter()
        .filter(|t| t.is_visible_to_readers())
        .map(|t| t.name)
        .collect();
    assert_eq!(public.len(), CATALOG.len() - 1);
}

#[test]
fn times_are_epoch_ms_columns_and_durations_are_integers() {
    for t in TABLES {
        for c in t.columns {
            let timeish = (c.name.ends_with("_ms") && c.name != "duration_ms")
                || matches!(c.name, "created_at" | "updated_at" | "time");
            assert_eq!(
                c.ty == ColumnType::Time,
                timeish,
                "{}.{}: {:?}",
                t.name,
                c.name,
                c.ty
            );
        }
    }
    assert_eq!(
        table("sessions").unwrap().column("duration_ms").unwrap().ty,
        ColumnType::Integer
    );
    let flags: HashSet<&str> = TABLES
        .iter()
        .flat_map(|t| t.columns)
        .filter(|c| c.ty == ColumnType::Boolean)
        .map(|c| c.name)
        .collect();
    assert_eq!(
        flags,
        HashSet::from([
            "is_sidechain",
            "turn_committed",
            "is_error",
            "committed",
            "hidden"
        ])
    );
}

#[test]
fn docs_are_one_line() {
    for t in TABLES {
        assert!(!t.doc.is_empty() && !t.doc.contains('\n'), "{}", t.name);
        for c in t.columns {
            assert!(
                !c.doc.is_empty() && !c.doc.contains('\n'),
                "{}.{}",
                t.name,
                c.name
            );
        }
    }
}

#[test]
fn types_map_to_sqlite_storage() {
    use ColumnType::*;
    let sql: Vec<&str> = [Text, Integer, Real, Boolean, Time, Json]
        .iter()
        .map(|t| t.sql_type())
        .collect();
    assert_eq!(
        sql,
        ["TEXT", "INTEGER", "REAL", "INTEGER", "INTEGER", "TEXT"]
    );
    let names: Vec<&str> = [Text, Integer, Real, Boolean, Time, Json]
        .iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(
        names,
        ["text", "integer", "real", "boolean", "time", "json"]
    );
}

#[test]
fn blocks_have_their_fulltext_index() {
    let blocks = table("blocks").unwrap();
    let index = blocks.fulltext_index().unwrap();
    assert_eq!(index.name, "blocks_fts");
    assert_eq!(index.kind, TableKind::FullText);
    assert_eq!(index.column_names().collect::<Vec<_>>(), blocks.fulltext);
    assert_eq!(index.fulltext, blocks.fulltext);
    assert!(table("messages").unwrap().fulltext_index().is_none());
}

#[test]
fn lookups() {
    assert!(table("nope").is_none());
    let s = table("sessions").unwrap();
    assert_eq!(s.column_names().next(), Some("session_id"));
    assert!(s.column("nope").is_none());
    assert_eq!(
        s.time_columns().map(|c| c.name).collect::<Vec<_>>(),
        ["created_at", "updated_at"]
    );
}

fn skeleton() -> String {
    TABLES
        .iter()
        .map(|t| {
            format!(
                "## {}\nprose\n<!-- generated: table {} -->\nstale text\n<!-- end generated -->\n",
                t.name, t.name
            )
        })
        .collect()
}

#[test]
fn markdown_sections_regenerate() {
    let doc = skeleton();
    let once = regenerate_markdown(&doc).unwrap();
    assert_ne!(once, doc);
    assert!(!once.contains("stale text"));
    assert_eq!(regenerate_markdown(&once).unwrap(), once, "idempotent");
    assert!(once.contains("| session_id | text, nullable | `origin:native_id` |\n"));
    assert!(once.contains("| payload | json | the raw record (admin scope only) |\n"));
    assert!(once.contains("| created_at | time, nullable | first record time |\n"));
}

#[test]
fn markdown_sections_must_be_complete_and_known() {
    let doc = skeleton();
    let without = doc.replace("<!-- generated: table usage -->", "");
    assert!(regenerate_markdown(&without).unwrap_err().contains("usage"));
    let unknown = format!("{doc}<!-- generated: table nope -->\n<!-- end generated -->\n");
    assert!(regenerate_markdown(&unknown).unwrap_err().contains("nope"));
    let twice = format!("{doc}<!-- generated: table turns -->\n<!-- end generated -->\n");
    assert!(regenerate_markdown(&twice).unwrap_err().contains("two"));
    let open = format!("{doc}<!-- generated: table turns -->\n");
    assert!(regenerate_markdown(&open).is_err());
}

#[test]
fn markdown_escapes_pipes() {
    let t = Table {
        columns: &[Column {
            name: "x",
            ty: ColumnType::Text,
            nullable: false,
            doc: "a | b",
            visibility: Visibility::Public,
        }],
        ..*table("meta").unwrap()
    };
    assert_eq!(
        markdown_columns(&t),
        "| column | type | meaning |\n|---|---|---|\n| x | text | a \\| b |\n"
    );
}

/// `docs/tables.md` of the workspace: its generated sections equal the declaration
/// (`QUARRY_BLESS=1` rewrites them). The integration test `docs::` checks the same.
#[test]
fn tables_doc_is_generated() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tables.md");
    let bless = std::env::var("QUARRY_BLESS").is_ok_and(|v| v == "1");
    if let Err(e) = check_markdown_file(&path, bless) {
        panic!("{e}");
    }
}

#[test]
fn a_stale_file_fails_with_a_diff_and_blessing_fixes_it() {
    let dir = std::env::temp_dir().join(format!("quarry-schema-md-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tables.md");
    std::fs::write(&path, skeleton()).unwrap();
    let err = check_markdown_file(&path, false).unwrap_err();
    assert!(
        err.contains("-stale") && err.contains("+| column | type | meaning |"),
        "{err}"
    );
    check_markdown_file(&path, true).unwrap();
    check_markdown_file(&path, false).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_origin_column_names_every_origin() {
    let origin = table("sessions")
        .and_then(|t| t.columns.iter().find(|c| c.name == "origin"))
        .expect("sessions.origin");
    let mut names = HashSet::new();
    for o in ORIGINS {
        assert!(names.insert(o.name), "origin {} twice", o.name);
        assert!(
            origin.doc.contains(&format!("`{}`", o.name)),
            "the doc of sessions.origin does not name {}",
            o.name
        );
    }
}
