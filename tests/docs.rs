//! The table reference (`docs/tables.md`) covers every table and column of the schema, and its
//! column tables are the ones the declaration of the tables generates.

use std::path::Path;

/// Each `<!-- generated: table NAME -->` section equals `quarry_schema::markdown_columns`, and
/// every declared table has one. `QUARRY_BLESS=1` rewrites the sections instead of failing.
#[test]
fn tables_doc_sections_are_generated_from_the_declaration() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tables.md");
    let bless = std::env::var("QUARRY_BLESS").is_ok_and(|v| v == "1");
    if let Err(diff) = quarry_schema::check_markdown_file(&path, bless) {
        panic!("{diff}");
    }
}

#[test]
fn tables_doc_names_every_table_and_column() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tables.md"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let archive = quarry_archive::Archive::open(&dir.path().join("a.db")).unwrap();
    let mut missing = Vec::new();
    let mut tables: Vec<(String, Vec<String>)> = archive
        .tables()
        .unwrap()
        .into_iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.columns.into_iter().map(|c| c.0).collect(),
            )
        })
        .collect();
    for extra in ["meta", "source_files"] {
        let mut stmt = archive
            .conn()
            .prepare(&format!("SELECT name FROM pragma_table_info('{extra}')"))
            .unwrap();
        let columns = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        tables.push((extra.to_string(), columns));
    }
    for (table, columns) in tables {
        let Some(at) = doc
            .find(&format!("## {table}"))
            .or_else(|| doc.find(&format!("### {table}")))
            .or_else(|| doc.find(&format!(" {table} and ")))
        else {
            missing.push(table);
            continue;
        };
        let section = &doc[at..];
        for column in columns {
            if !section.contains(&format!("| {column} |")) {
                missing.push(format!("{table}.{column}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/tables.md does not document: {missing:?}"
    );
}
