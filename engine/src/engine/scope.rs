//! Reader scopes over a long-lived engine. A reader scope sees only its sessions: every catalog
//! table it may see is wrapped in a [`ScopedTable`] over the stored provider, every other table
//! is absent, so neither language can name what is not there.
//!
//! What a scope admits is kept per scope *definition* (what its predicate and owner say, not
//! its name, so an edited scopes file takes effect at the next request) and per archive
//! generation: the sessions it admits, grouped by snapshot partition (the UTC month a session
//! was created in), and the archive's hidden messages, grouped the same way and shared by every
//! scope. When the generation moves, only the partitions the archive's writers recorded in
//! `snapshot_changes` since are read again (the same record the snapshot's incremental refresh
//! trusts); a replaced archive, or one that went back, is read whole. Nothing is read when
//! nothing changed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quarry_providers::scoped::{ReaderView, ScopedTable, session_column};
use quarry_udf::functions::MemberSet;
use rusqlite::{Connection, params};

use super::cost::{Pricing, priced};
use super::view::{Catalog, Stamp, View, read_only};
use crate::error::{Error, engine_error};
use crate::scope::ReaderScope;

/// At most this many scope definitions keep their views; the least recently used goes first.
const KEPT_SCOPES: usize = 64;

/// The snapshot partition of a session row, over its `created_at` (see
/// [`quarry_archive::SNAPSHOT_PARTITION`]).
const PARTITION: &str = quarry_archive::SNAPSHOT_PARTITION;

/// The views of reader scopes, kept between requests.
#[derive(Default)]
pub struct Readers {
    scopes: HashMap<String, Kept>,
    hidden: Option<Grouped>,
    uses: u64,
}

/// One scope definition's admitted sessions and its view.
struct Kept {
    admitted: Grouped,
    view: Option<(Arc<Catalog>, Arc<View>)>,
    used: u64,
}

/// Ids grouped by snapshot partition, as of one archive stamp, and all of them as one set.
struct Grouped {
    stamp: Stamp,
    by_partition: BTreeMap<String, Vec<String>>,
    all: Arc<MemberSet>,
}

/// What the archive changed between two stamps.
enum Change {
    /// Nothing.
    Nothing,
    /// The rows of these partitions.
    Partitions(Vec<String>),
    /// Anything: read it whole.
    Whole,
}

/// What building a view needs of the engine.
pub struct Parts<'a> {
    /// The archive file.
    pub archive: &'a Path,
    /// The engine's session state.
    pub template: &'a datafusion::execution::context::SessionState,
    /// The price table of the computed cost columns.
    pub pricing: &'a Arc<Pricing>,
}

impl Readers {
    /// The view of `scope` over `catalog`, brought up to `catalog`'s generation.
    pub async fn view(
        &mut self,
        scope: &ReaderScope,
        catalog: &Arc<Catalog>,
        parts: &Parts<'_>,
    ) -> Result<Arc<View>, Error> {
        self.uses += 1;
        let key = scope.definition_key();
        let stamp = catalog.stamp;
        if let Some(kept) = self.scopes.get_mut(&key) {
            kept.used = self.uses;
            if let Some((seen, view)) = &kept.view
                && Arc::ptr_eq(seen, catalog)
            {
                return Ok(view.clone());
            }
        }
        let hidden = refreshed(self.hidden.take(), stamp, parts.archive, hidden_messages).await;
        let hidden = self.hidden.insert(hidden?);
        let previous = self.scopes.remove(&key).map(|k| k.admitted);
        let reader = scope.clone();
        let admitted = refreshed(previous, stamp, parts.archive, move |conn, partitions| {
            admitted_sessions(conn, &reader, partitions)
        })
        .await?;
        // On the snapshot (rows that cannot change), a scope that admits every session needs
        // no session filter on the tables whose rows each belong to one.
        let every_session = catalog.chosen.source == crate::answer::Source::Snapshot
            && admitted.all.len() == session_count(parts.archive).await?;
        let view = Arc::new(reader_view(
            scope,
            &admitted,
            hidden,
            every_session,
            catalog,
            parts,
        )?);
        self.scopes.insert(
            key,
            Kept {
                admitted,
                view: Some((catalog.clone(), view.clone())),
                used: self.uses,
            },
        );
        self.forget_unused();
        Ok(view)
    }

    /// The archive's hidden messages as of the last view built (`None` before one).
    pub fn hidden(&self) -> Option<Arc<MemberSet>> {
        self.hidden.as_ref().map(|h| h.all.clone())
    }

    /// Keeps at most [`KEPT_SCOPES`] scope definitions.
    fn forget_unused(&mut self) {
        while self.scopes.len() > KEPT_SCOPES {
            let Some(oldest) = self
                .scopes
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(key, _)| key.clone())
            else {
                return;
            };
            self.scopes.remove(&oldest);
        }
    }
}

/// `previous` brought up to `stamp`: the partitions changed since re-read with `read` (all of
/// them when there is nothing to start from).
async fn refreshed(
    previous: Option<Grouped>,
    stamp: Stamp,
    archive: &Path,
    read: impl Fn(&Connection, Option<&[String]>) -> rusqlite::Result<Vec<(String, String)>>
    + Send
    + 'static,
) -> Result<Grouped, Error> {
    let archive: PathBuf = archive.to_path_buf();
    super::blocking(move || {
        let fail = |e: rusqlite::Error| Error::archive(&archive, e);
        let conn = read_only(&archive).map_err(fail)?;
        let change = match &previous {
            None => Change::Whole,
            Some(p) => change_between(&conn, p.stamp, stamp).map_err(fail)?,
        };
        // What to read again: nothing, the changed partitions, or everything (`Some(None)`).
        let (mut by_partition, reread) = match (previous, change) {
            (Some(p), Change::Nothing) => (p.by_partition, None),
            (Some(p), Change::Partitions(partitions)) => {
                let mut by_partition = p.by_partition;
                for partition in &partitions {
                    by_partition.remove(partition);
                }
                (by_partition, Some(Some(partitions)))
            }
            (_, _) => (BTreeMap::new(), Some(None)),
        };
        if let Some(partitions) = reread {
            for (partition, id) in read(&conn, partitions.as_deref()).map_err(fail)? {
                by_partition.entry(partition).or_default().push(id);
            }
        }
        let all = Arc::new(MemberSet::new(by_partition.values().flatten().cloned()));
        Ok(Grouped {
            stamp,
            by_partition,
            all,
        })
    })
    .await
}

/// How many sessions the archive holds now.
async fn session_count(archive: &Path) -> Result<usize, Error> {
    let archive = archive.to_path_buf();
    super::blocking(move || {
        let fail = |e: rusqlite::Error| Error::archive(&archive, e);
        let conn = read_only(&archive).map_err(fail)?;
        let n: i64 = conn
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
            .map_err(fail)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    })
    .await
}

/// What the archive changed from `from` to `to`.
fn change_between(conn: &Connection, from: Stamp, to: Stamp) -> rusqlite::Result<Change> {
    if from.file != to.file || to.generation < from.generation {
        return Ok(Change::Whole);
    }
    if from.generation == to.generation {
        return Ok(Change::Nothing);
    }
    let mut statement =
        conn.prepare("SELECT partition FROM snapshot_changes WHERE generation > ?1")?;
    let partitions = statement
        .query_map(params![from.generation], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Change::Partitions(partitions))
}

/// A condition on `PARTITION` for `partitions` (`?1`, a JSON array of them), or none.
fn partition_filter(partitions: Option<&[String]>, alias: &str) -> (String, String) {
    match partitions {
        None => (String::new(), String::new()),
        Some(p) => (
            format!(
                " WHERE {} IN (SELECT value FROM json_each(?1))",
                PARTITION.replace("created_at", &format!("{alias}created_at"))
            ),
            serde_json::to_string(p).unwrap_or_else(|_| "[]".into()),
        ),
    }
}

/// The hidden messages of the sessions in `partitions` (all when `None`), with their sessions'
/// partitions.
fn hidden_messages(
    conn: &Connection,
    partitions: Option<&[String]>,
) -> rusqlite::Result<Vec<(String, String)>> {
    let (filter, arg) = partition_filter(partitions, "s.");
    // Whole: one pass over messages. In part: the changed sessions first (CROSS JOIN keeps that
    // order), their messages by the session index.
    let sql = match partitions {
        None => format!(
            "SELECT {}, m.message_id FROM messages m JOIN sessions s ON s.session_id = m.session_id WHERE m.hidden",
            PARTITION.replace("created_at", "s.created_at")
        ),
        Some(_) => format!(
            "SELECT {}, m.message_id FROM sessions s \
             CROSS JOIN session_numbers n ON n.session_id = s.session_id \
             CROSS JOIN messages m ON m.session_num = n.session_num{filter} AND m.hidden",
            PARTITION.replace("created_at", "s.created_at")
        ),
    };
    let mut statement = conn.prepare(&sql)?;
    let row = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, r.get(1)?));
    if partitions.is_some() {
        statement.query_map(params![arg], row)?.collect()
    } else {
        statement.query_map([], row)?.collect()
    }
}

/// The sessions `scope` admits in `partitions` (all when `None`), with their partitions.
pub fn admitted_sessions(
    conn: &Connection,
    scope: &ReaderScope,
    partitions: Option<&[String]>,
) -> rusqlite::Result<Vec<(String, String)>> {
    let mut columns: Vec<&'static str> = vec!["owner"];
    if let Some(p) = &scope.sessions {
        for c in p.columns() {
            if !columns.contains(&c) {
                columns.push(c);
            }
        }
    }
    let (filter, arg) = partition_filter(partitions, "");
    // The names are the schema's own, never the user's text.
    let sql = format!(
        "SELECT session_id, {PARTITION}, {} FROM sessions{filter}",
        columns.join(", ")
    );
    let mut statement = conn.prepare(&sql)?;
    let mut rows = if partitions.is_some() {
        statement.query(params![arg])?
    } else {
        statement.query([])?
    };
    let mut admitted = Vec::new();
    while let Some(row) = rows.next()? {
        let Some(id) = row.get::<_, Option<String>>(0)? else {
            continue;
        };
        let partition: String = row.get(1)?;
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(row.get::<_, Option<String>>(i + 2)?);
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
            admitted.push((partition, id));
        }
    }
    Ok(admitted)
}

/// The view of `scope`: every table it may see, scoped, then priced.
fn reader_view(
    scope: &ReaderScope,
    admitted: &Grouped,
    hidden: &Grouped,
    every_session: bool,
    catalog: &Catalog,
    parts: &Parts<'_>,
) -> Result<View, Error> {
    let view = ReaderView {
        sessions: admitted.all.clone(),
        owner: scope.owner.clone(),
        hidden_messages: hidden.all.clone(),
        every_session,
    };
    let mut tables = Vec::new();
    for (name, inner) in &catalog.stored {
        let Some(table) = quarry_schema::table(name) else {
            continue;
        };
        if !table.is_visible_to_readers() || session_column(table).is_none() {
            continue;
        }
        let scoped = ScopedTable::new(inner.clone(), table, view.clone()).map_err(engine_error)?;
        tables.push((
            *name,
            Arc::new(scoped) as Arc<dyn datafusion::datasource::TableProvider>,
        ));
    }
    let tables = priced(tables, parts.pricing)
        .and_then(super::unit_rows::with_unit_columns)
        .map_err(engine_error)?;
    View::new(parts.template, tables, &catalog.chosen)
}
