//! A reader scope applied to a session's catalog, before any planning: the sessions it admits
//! are read from the archive once, then every catalog table the scope may see is registered
//! again as a [`ScopedTable`] over the chosen source's provider, and every other table is
//! removed. Both languages plan against this catalog, so no query can name what is not there.

use std::path::Path;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use quarry_providers::scoped::{ReaderView, ScopedTable, session_column};
use rusqlite::Connection;

use super::engine_error;
use crate::api::Error;
use crate::scope::ReaderScope;

/// Replaces the catalog of `ctx` by what `scope` sees of it.
pub fn apply(ctx: &SessionContext, archive: &Path, scope: &ReaderScope) -> Result<(), Error> {
    let archive_error = |e: &dyn std::fmt::Display| Error::Archive {
        path: archive.to_path_buf(),
        message: e.to_string(),
    };
    let opened =
        quarry_providers::Archive::open_read_only(archive).map_err(|e| archive_error(&e))?;
    let view = ReaderView {
        sessions: Arc::new(admitted_sessions(opened.conn(), scope).map_err(|e| archive_error(&e))?),
        owner: scope.owner.clone(),
        hidden_messages: Arc::new(hidden_messages(opened.conn()).map_err(|e| archive_error(&e))?),
    };
    for table in quarry_schema::CATALOG {
        let Some(inner) = ctx.deregister_table(table.name).map_err(engine_error)? else {
            continue;
        };
        if !table.is_visible_to_readers() || session_column(table).is_none() {
            continue;
        }
        let scoped = ScopedTable::new(inner, table, view.clone()).map_err(engine_error)?;
        ctx.register_table(table.name, Arc::new(scoped))
            .map_err(engine_error)?;
    }
    Ok(())
}

/// The ids of the messages the source marks as never shown to the user.
fn hidden_messages(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement =
        conn.prepare("SELECT message_id FROM messages WHERE hidden ORDER BY message_id")?;
    let ids = statement
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// The ids of the sessions `scope` admits, read from the archive's `sessions` table.
pub fn admitted_sessions(conn: &Connection, scope: &ReaderScope) -> rusqlite::Result<Vec<String>> {
    let mut columns: Vec<&'static str> = vec!["owner"];
    if let Some(p) = &scope.sessions {
        for c in p.columns() {
            if !columns.contains(&c) {
                columns.push(c);
            }
        }
    }
    // The names are the schema's own, never the user's text.
    let sql = format!("SELECT session_id, {} FROM sessions", columns.join(", "));
    let mut statement = conn.prepare(&sql)?;
    let mut rows = statement.query([])?;
    let mut admitted = Vec::new();
    while let Some(row) = rows.next()? {
        let Some(id) = row.get::<_, Option<String>>(0)? else {
            continue;
        };
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(row.get::<_, Option<String>>(i + 1)?);
        }
        let field = |name: &str| {
            if name == "session_id" {
                return Some(id.clone());
            }
            columns
                .iter()
                .position(|c| *c == name)
                .and_then(|i| values[i].clone())
        };
        if scope.admits(&field) {
            admitted.push(id);
        }
    }
    admitted.sort();
    Ok(admitted)
}
