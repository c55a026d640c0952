//! Opening an archive file: creating it, WAL mode, migrations, the `generation` counter, and
//! describing its tables (row counts and columns) for `quarry tables`.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::schema::{MIGRATIONS, SCHEMA_VERSION, key_hash};

/// What can go wrong opening or reading an archive.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The archive's folder could not be created.
    #[error("cannot create the archive folder {path}: {source}")]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// SQLite refused to open or write the file.
    #[error("cannot open the archive {path}: {source}")]
    Open {
        /// The archive file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// The file is an archive of a newer quarry.
    #[error(
        "the archive {path} has schema version {found}, newer than this quarry's {supported}; upgrade quarry"
    )]
    TooNew {
        /// The archive file.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// Version this build writes.
        supported: i64,
    },
    /// Any other SQLite failure.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// An open archive: one SQLite connection to the archive file.
pub struct Archive {
    conn: Connection,
    path: PathBuf,
    notices: Vec<String>,
}

/// One table of the catalog, as `quarry tables` prints it.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// SQL name.
    pub name: &'static str,
    /// What a row is.
    pub doc: &'static str,
    /// Row count (exact, `COUNT(*)`).
    pub rows: i64,
    /// Column names and declared SQLite types, in order.
    pub columns: Vec<(String, String)>,
    /// The table's declaration (column types, docs, keys, visibility).
    pub table: &'static quarry_schema::Table,
}

impl Archive {
    /// Opens (creating if needed) the archive at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, ArchiveError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| ArchiveError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let open_err = |source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        // A new file gets 64 KiB pages, SQLite's largest: long text rows fit on fewer pages,
        // B-trees are shallower, a batch's WAL frames fewer, and an ingest writes a third
        // faster than with 8 KiB (docs/benchmarks.md, "Ingest as the archive grows"). Set
        // before WAL mode, which fixes the page size.
        conn.pragma_update(None, "page_size", 65536)
            .map_err(open_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        // 64 MiB of page cache: a batch of files stays in memory until it commits.
        conn.pragma_update(None, "cache_size", -65536)
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "OFF")
            .map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(open_err)?;
        register_key_hash(&conn).map_err(open_err)?;
        let mut archive = Archive {
            conn,
            path: path.to_path_buf(),
            notices: Vec::new(),
        };
        archive.migrate()?;
        Ok(archive)
    }

    /// Opens an existing archive read-only (no migration, no creation).
    pub fn open_read_only(path: &Path) -> Result<Self, ArchiveError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Archive {
            conn,
            path: path.to_path_buf(),
            notices: Vec::new(),
        })
    }

    fn migrate(&mut self) -> Result<(), ArchiveError> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(ArchiveError::TooNew {
                path: self.path.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(migration)?;
            tx.pragma_update(None, "user_version", index as i64 + 1)?;
            tx.commit()?;
        }
        if version > 0 && version < 6 {
            self.report_statuses()?;
        }
        Ok(())
    }

    /// The notice of the version 6 migration: the assertion statuses outside the vocabulary
    /// it made `inactive`, with the values kept in `original_status`.
    fn report_statuses(&mut self) -> Result<(), ArchiveError> {
        let mut stmt = self.conn.prepare(
            "SELECT original_status, COUNT(*) FROM assertions WHERE original_status IS NOT NULL
             GROUP BY 1 ORDER BY 1",
        )?;
        let found: Vec<String> = stmt
            .query_map([], |r| {
                Ok(format!(
                    "'{}' ({})",
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?
                ))
            })?
            .collect::<Result<_, _>>()?;
        drop(stmt);
        if !found.is_empty() {
            self.notices.push(format!(
                "assertion statuses outside the vocabulary ({}) are now `inactive`, the value kept in `original_status`: {}",
                crate::schema::ASSERTION_STATUSES.join(", "),
                found.join(", ")
            ));
        }
        Ok(())
    }

    /// What opening the archive did that its user should know (a migration's report).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The archive file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for the ingest writer and the providers.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection, mutably (transactions).
    pub fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The current generation: bumped by every ingest commit that changed something.
    pub fn generation(&self) -> Result<i64, ArchiveError> {
        read_generation(&self.conn)
    }

    /// Every table of the catalog (`quarry_schema::CATALOG`) with its exact row count and its
    /// declared columns.
    pub fn tables(&self) -> Result<Vec<TableInfo>, ArchiveError> {
        quarry_schema::CATALOG
            .iter()
            .map(|table| {
                let rows: i64 = self.conn.query_row(
                    &format!("SELECT COUNT(*) FROM {}", table.name),
                    [],
                    |r| r.get(0),
                )?;
                // The stored columns, then those the engine computes (costs).
                let columns = table
                    .columns
                    .iter()
                    .chain(table.computed)
                    .map(|c| (c.name.to_string(), c.ty.sql_type().to_string()))
                    .collect();
                Ok(TableInfo {
                    name: table.name,
                    doc: table.doc,
                    rows,
                    columns,
                    table,
                })
            })
            .collect()
    }
}

/// Reads the `generation` counter through any connection or transaction.
pub fn read_generation(conn: &Connection) -> Result<i64, ArchiveError> {
    let value: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Bumps the `generation` counter inside the caller's transaction and returns the new value.
pub fn bump_generation(conn: &Connection) -> Result<i64, ArchiveError> {
    let next = read_generation(conn)? + 1;
    conn.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'generation'",
        [next.to_string()],
    )?;
    Ok(next)
}

/// Registers [`crate::schema::KEY_HASH_FUNCTION`] (a response key's [`key_hash`]; NULL hashes
/// as the empty key) on `conn`.
fn register_key_hash(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        crate::schema::KEY_HASH_FUNCTION,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            Ok(key_hash(
                ctx.get::<Option<String>>(0)?.as_deref().unwrap_or(""),
            ))
        },
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fresh_archive_has_every_table_empty_and_generation_zero() {
        let dir = tempfile::tempdir().unwrap();
        let archive = Archive::open(&dir.path().join("a/b/archive.db")).unwrap();
        assert_eq!(archive.generation().unwrap(), 0);
        let tables = archive.tables().unwrap();
        assert_eq!(tables.len(), quarry_schema::CATALOG.len());
        assert!(tables.iter().all(|t| t.rows == 0 && !t.columns.is_empty()));
        let mode: String = archive
            .conn()
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn reopening_keeps_data_and_bumps_are_monotonic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("archive.db");
        {
            let archive = Archive::open(&path).unwrap();
            assert_eq!(bump_generation(archive.conn()).unwrap(), 1);
            assert_eq!(bump_generation(archive.conn()).unwrap(), 2);
        }
        let archive = Archive::open(&path).unwrap();
        assert_eq!(archive.generation().unwrap(), 2);
    }

    #[test]
    fn the_key_hash_is_blake3s_first_eight_bytes() {
        // BLAKE3 of the empty input is af1349b9f5f9a1a6...: the archive stores these bytes.
        assert_eq!(
            key_hash(""),
            i64::from_le_bytes([0xaf, 0x13, 0x49, 0xb9, 0xf5, 0xf9, 0xa1, 0xa6])
        );
        assert_ne!(key_hash("claude:msg_1"), key_hash("claude:msg_2"));
    }

    /// A new archive file at `path` with the first `version` migrations applied (what an
    /// archive of that version holds), the key hash registered as the archive registers it.
    fn at_version(path: &std::path::Path, version: usize) -> Connection {
        let conn = Connection::open(path).unwrap();
        super::register_key_hash(&conn).unwrap();
        for migration in &MIGRATIONS[..version] {
            conn.execute_batch(migration).unwrap();
        }
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
        conn
    }

    #[test]
    fn version_9_keeps_every_usage_row_and_hashes_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("archive.db");
        {
            let conn = at_version(&path, 8);
            conn.execute_batch(
                "INSERT INTO usage_records (session_id, response_key, recorded_via, input_tokens,
                     output_tokens, cache_read_tokens, cache_write_tokens, cache_write_5m_tokens,
                     cache_write_1h_tokens, seq)
                 VALUES ('a', 'claude:m1', 'transcript', 1, 2, 3, 4, 4, 0, 0),
                        ('b', 'claude:m1', 'transcript', 1, 5, 3, 4, 4, 0, 0),
                        ('b', 'claude:m2', 'progress', 7, 8, 9, 10, 6, 4, 1);
                 INSERT INTO usage (session_id, response_key, recorded_via, record_count,
                     input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                     cache_write_5m_tokens, cache_write_1h_tokens)
                 VALUES ('a', 'claude:m1', 'transcript', 2, 1, 5, 3, 4, 4, 0),
                        ('b', 'claude:m2', 'progress', 1, 7, 8, 9, 10, 6, 4);",
            )
            .unwrap();
        }
        let archive = Archive::open(&path).unwrap();
        let conn = archive.conn();
        let rows = |sql: &str| -> Vec<(String, String, i64, i64)> {
            let mut stmt = conn.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let m1 = key_hash("claude:m1");
        let m2 = key_hash("claude:m2");
        assert_eq!(
            rows(
                "SELECT session_id, response_key, output_tokens, key_hash FROM usage_records
                  ORDER BY session_id, seq"
            ),
            vec![
                ("a".into(), "claude:m1".into(), 2, m1),
                ("b".into(), "claude:m1".into(), 5, m1),
                ("b".into(), "claude:m2".into(), 8, m2),
            ]
        );
        assert_eq!(
            rows(
                "SELECT session_id, response_key, record_count, key_hash FROM usage
                  ORDER BY response_key"
            ),
            vec![
                ("a".into(), "claude:m1".into(), 2, m1),
                ("b".into(), "claude:m2".into(), 1, m2),
            ]
        );
        // A session still records a response once per kind.
        assert!(
            conn.execute(
                "INSERT INTO usage_records (session_id, response_key, recorded_via, input_tokens,
                     output_tokens, cache_read_tokens, cache_write_tokens, cache_write_5m_tokens,
                     cache_write_1h_tokens, seq, key_hash, session_num)
                 VALUES ('a', 'claude:m1', 'transcript', 0, 0, 0, 0, 0, 0, 5, ?1,
                         (SELECT session_num FROM session_numbers WHERE session_id = 'a'))",
                [m1],
            )
            .is_err()
        );
    }

    #[test]
    fn version_10_numbers_sessions_in_order_of_arrival_and_keeps_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("archive.db");
        {
            let conn = at_version(&path, 9);
            // Sessions `z` then `a` (arrival order, not id order); `orphan` has rows and no
            // session row; the source_resume row survives the table's rebuild.
            conn.execute_batch(
                "INSERT INTO sessions (session_id, origin, native_id, root_session_id, message_count,
                     word_count, user_messages, authored_user_messages, assistant_messages,
                     system_messages, tool_messages, tool_use_messages, thinking_messages,
                     paste_messages, user_words, authored_user_words, assistant_words,
                     input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                     source_path)
                 VALUES ('z', 'o', 'z', 'z', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'f'),
                        ('a', 'o', 'a', 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'f');
                 INSERT INTO messages (message_id, session_id, position, role, type,
                     material_origin, word_count, text, is_sidechain)
                 VALUES ('a/1', 'a', 0, 'user', 'text', 'human', 1, 'x', 0),
                        ('z/1', 'z', 0, 'user', 'text', 'human', 1, 'x', 0),
                        ('a/2', 'a', 1, 'user', 'text', 'human', 1, 'x', 0);
                 INSERT INTO turns (session_id, turn_id, committed) VALUES ('orphan', 't1', 1);
                 INSERT INTO source_resume (path, state) VALUES ('f', '{}');",
            )
            .unwrap();
        }
        let archive = Archive::open(&path).unwrap();
        let conn = archive.conn();
        let pairs = |sql: &str| -> Vec<(String, i64)> {
            let mut stmt = conn.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            pairs("SELECT session_id, session_num FROM session_numbers ORDER BY session_num"),
            vec![("z".into(), 1), ("a".into(), 2), ("orphan".into(), 3)]
        );
        assert_eq!(
            pairs("SELECT message_id, session_num FROM messages ORDER BY message_id"),
            vec![("a/1".into(), 2), ("a/2".into(), 2), ("z/1".into(), 1)]
        );
        assert_eq!(
            pairs("SELECT turn_id, session_num FROM turns"),
            vec![("t1".into(), 3)]
        );
        assert_eq!(
            pairs("SELECT path, length(state) FROM source_resume"),
            vec![("f".into(), 2)]
        );
        // A session's rows are found by its number, through the index.
        let plan: Vec<String> = conn
            .prepare(&format!(
                "EXPLAIN QUERY PLAN SELECT * FROM messages WHERE {}",
                crate::of_session("messages").unwrap()
            ))
            .unwrap()
            .query_map(["a"], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let plan = plan.join("; ");
        assert!(plan.contains("USING INDEX messages_session"), "{plan}");
    }

    #[test]
    fn version_11_numbers_actions_observed_events_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("archive.db");
        {
            let conn = at_version(&path, 10);
            // `z` then `a` already numbered (by their messages); `orphan` has only a file row.
            conn.execute_batch(
                "INSERT INTO session_numbers (session_id) VALUES ('z'), ('a');
                 INSERT INTO actions (action_id, session_id, message_id, tool_use_block_id,
                     tool_name, semantic_type, is_error)
                 VALUES ('a/b1', 'a', 'a/m1', 'a/b1', 'Read', 'file_read', 0),
                        ('z/b1', 'z', 'z/m1', 'z/b1', 'Bash', 'shell', 0);
                 INSERT INTO observed_events (event_id, session_id, kind)
                 VALUES ('z/session_started', 'z', 'session_started');
                 INSERT INTO files (session_id, path, action_count, first_message_id,
                     first_tool_use_block_id, last_tool_use_block_id)
                 VALUES ('orphan', 'src/lib.rs', 1, 'orphan/m1', 'orphan/b1', 'orphan/b1');",
            )
            .unwrap();
        }
        let archive = Archive::open(&path).unwrap();
        let conn = archive.conn();
        let pairs = |sql: &str| -> Vec<(String, i64)> {
            let mut stmt = conn.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            pairs("SELECT action_id, session_num FROM actions ORDER BY action_id"),
            vec![("a/b1".into(), 2), ("z/b1".into(), 1)]
        );
        assert_eq!(
            pairs("SELECT event_id, session_num FROM observed_events"),
            vec![("z/session_started".into(), 1)]
        );
        assert_eq!(
            pairs("SELECT path, session_num FROM files"),
            vec![("src/lib.rs".into(), 3)]
        );
        assert_eq!(
            pairs("SELECT session_id, session_num FROM session_numbers ORDER BY session_num"),
            vec![("z".into(), 1), ("a".into(), 2), ("orphan".into(), 3)]
        );
        for (table, index) in [
            ("actions", "actions_session"),
            ("observed_events", "observed_events_session"),
            ("files", "files_session"),
        ] {
            let plan: Vec<String> = conn
                .prepare(&format!(
                    "EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE {}",
                    crate::of_session(table).unwrap()
                ))
                .unwrap()
                .query_map(["a"], |r| r.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let plan = plan.join("; ");
            assert!(plan.contains(&format!("USING INDEX {index}")), "{plan}");
        }
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("archive.db");
        Archive::open(&path).unwrap();
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        assert!(matches!(
            Archive::open(&path),
            Err(ArchiveError::TooNew { .. })
        ));
    }

    #[test]
    fn fts_folds_diacritics() {
        let dir = tempfile::tempdir().unwrap();
        let archive = Archive::open(&dir.path().join("archive.db")).unwrap();
        archive
            .conn()
            .execute(
                "INSERT INTO blocks_fts (rowid, text) VALUES (1, 'Zażółć gęślą jaźń')",
                [],
            )
            .unwrap();
        let hits: i64 = archive
            .conn()
            .query_row(
                "SELECT COUNT(*) FROM blocks_fts WHERE blocks_fts MATCH 'gesla'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 1);
    }
}
