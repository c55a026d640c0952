//! Drift between the declaration of the tables (`quarry_schema`) and what derives from it or
//! stands beside it: a migrated archive (the DDL of the migrations) has exactly the declared
//! tables and columns — names, declared types, NOT NULL, order, primary keys — and the
//! providers' Arrow schemas are the ones the declaration gives. (`docs.rs` checks the docs.)

use quarry_schema::{TABLES, TableKind};

/// A migrated, empty archive.
fn archive() -> (tempfile::TempDir, quarry_archive::Archive) {
    let dir = tempfile::tempdir().unwrap();
    let archive = quarry_archive::Archive::open(&dir.path().join("archive.db")).unwrap();
    (dir, archive)
}

/// `(name, declared type, notnull, pk)` of every column, in `cid` order.
fn pragma_columns(conn: &rusqlite::Connection, table: &str) -> Vec<(String, String, bool, i64)> {
    let mut stmt = conn
        .prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid")
        .unwrap();
    stmt.query_map([table], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[test]
fn migrated_archive_columns_equal_the_declaration() {
    let (_dir, archive) = archive();
    let conn = archive.conn();
    let mut problems = Vec::new();
    for table in TABLES {
        let actual = pragma_columns(conn, table.name);
        let expected: Vec<(String, String, bool)> = table
            .columns
            .iter()
            .map(|c| {
                let declared = match table.kind {
                    // FTS5 columns have no declared type.
                    TableKind::FullText => "",
                    _ => c.ty.sql_type(),
                };
                // SQLite reports no column of a view or an FTS5 table as NOT NULL; a view's
                // nullability is its base table's (checked in quarry-schema).
                let notnull =
                    matches!(table.kind, TableKind::Table | TableKind::Bookkeeping) && !c.nullable;
                (c.name.to_string(), declared.to_string(), notnull)
            })
            .collect();
        let got: Vec<(String, String, bool)> = actual
            .iter()
            .map(|(n, t, nn, _)| (n.clone(), t.clone(), *nn))
            .collect();
        if got != expected {
            problems.push(format!(
                "{}:\n  archive:     {got:?}\n  declaration: {expected:?}",
                table.name
            ));
        }
        // Where the DDL declares a primary key, it is the declared key.
        let pk: Vec<&str> = {
            let mut pk: Vec<(i64, &str)> = actual
                .iter()
                .filter(|c| c.3 > 0)
                .map(|c| (c.3, c.0.as_str()))
                .collect();
            pk.sort();
            pk.into_iter().map(|(_, n)| n).collect()
        };
        if !pk.is_empty() && pk != table.key {
            problems.push(format!(
                "{}: primary key {pk:?}, declared key {:?}",
                table.name, table.key
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn migrated_archive_has_exactly_the_declared_tables() {
    let (_dir, archive) = archive();
    let mut stmt = archive
        .conn()
        .prepare(
            "SELECT name, type, sql FROM sqlite_schema
             WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .unwrap();
    let objects: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let fulltext: Vec<&str> = TABLES
        .iter()
        .filter(|t| t.kind == TableKind::FullText)
        .map(|t| t.name)
        .collect();
    let mut found = Vec::new();
    for (name, kind, sql) in &objects {
        // FTS5 keeps its index in shadow tables named after it.
        if fulltext
            .iter()
            .any(|f| name.strip_prefix(f).is_some_and(|s| s.starts_with('_')))
        {
            continue;
        }
        let declared = quarry_schema::table(name)
            .unwrap_or_else(|| panic!("the archive has {kind} {name}, which is not declared"));
        let actual_kind = match (kind.as_str(), sql.starts_with("CREATE VIRTUAL TABLE")) {
            ("view", _) => "view",
            (_, true) => "virtual table",
            _ => "table",
        };
        let declared_kind = match declared.kind {
            TableKind::View => "view",
            TableKind::FullText => "virtual table",
            TableKind::Table | TableKind::Bookkeeping => "table",
        };
        assert_eq!(actual_kind, declared_kind, "{name}");
        found.push(name.as_str());
    }
    let mut declared: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
    declared.sort();
    assert_eq!(found, declared);
}

#[test]
fn catalog_listing_is_the_declared_catalog() {
    let (_dir, archive) = archive();
    let tables = archive.tables().unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t.name).collect();
    let catalog: Vec<&str> = quarry_schema::CATALOG.iter().map(|t| t.name).collect();
    assert_eq!(names, catalog);
    for t in &tables {
        // The stored columns as SQLite declares them, then those the engine computes.
        let mut expected: Vec<(String, String)> = pragma_columns(archive.conn(), t.name)
            .into_iter()
            .map(|(n, ty, _, _)| (n, ty))
            .collect();
        let declared = quarry_schema::table(t.name).unwrap();
        expected.extend(
            declared
                .computed
                .iter()
                .map(|c| (c.name.to_string(), c.ty.sql_type().to_string())),
        );
        assert_eq!(t.columns, expected, "{}", t.name);
    }
}

/// The Arrow type the declaration gives a column, written out here independently of the
/// providers, so a change on either side fails.
fn expected_arrow(ty: quarry_schema::ColumnType) -> datafusion::arrow::datatypes::DataType {
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    use quarry_schema::ColumnType;
    match ty {
        ColumnType::Text | ColumnType::Json => DataType::Utf8,
        ColumnType::Integer => DataType::Int64,
        ColumnType::Real => DataType::Float64,
        ColumnType::Boolean => DataType::Boolean,
        ColumnType::Time => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_schemas_equal_the_declaration() {
    use datafusion::arrow::datatypes::{Field, Schema};
    let (dir, _archive) = archive();
    let ctx = datafusion::prelude::SessionContext::new();
    quarry_providers::sqlite::register_archive(&ctx, &dir.path().join("archive.db")).unwrap();
    for table in quarry_schema::CATALOG {
        let expected = Schema::new(
            table
                .columns
                .iter()
                .map(|c| Field::new(c.name, expected_arrow(c.ty), c.nullable))
                .collect::<Vec<_>>(),
        );
        let provider = ctx.table_provider(table.name).await.unwrap();
        assert_eq!(provider.schema().as_ref(), &expected, "{}", table.name);
        // What a scan produces has that schema too.
        let df = ctx.table(table.name).await.unwrap();
        assert_eq!(
            df.schema().as_arrow(),
            &expected,
            "{} through the DataFrame",
            table.name
        );
    }
}
