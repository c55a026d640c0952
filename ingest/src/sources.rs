//! Agents that keep their sessions in a SQLite database rather than in files (OpenCode and its
//! fork Kilo CLI, which share one schema, Goose, Cursor, Crush), read one session at a time.
//!
//! The database is opened read-only while the agent may be writing it: no lock is taken beyond
//! a reader's, and a reader sees the WAL's committed pages. Each session becomes a document of
//! its own, named `<database>#<session id>`: its rows as JSON Lines (the session, then each
//! message followed by its parts), read in one transaction so the rows agree. The archive
//! treats such a document as a whole: when the agent changes a session (a message's tokens
//! filled in as its steps finish, a title set later), the session's document changes and
//! replaces what the archive holds for it; an unchanged session's document is skipped by its
//! hash. A session the agent deleted keeps its archived copy.

use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};

use super::discover::Candidate;

/// Which agent's database a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// OpenCode's `opencode.db` (or a release channel's `opencode-<channel>.db`).
    OpenCode,
    /// Kilo CLI's `kilo.db` (or `kilo-<channel>.db`, or an older channel's
    /// `opencode-<channel>.db` in Kilo's data folder `kilo`).
    Kilo,
    /// Goose's `sessions/sessions.db`.
    Goose,
    /// Cline's task folders ([`super::cline`]).
    Cline,
    /// Roo Code's task folders.
    RooCode,
    /// Kilo Code's task folders (the extension before Kilo 7).
    KiloCode,
    /// Cursor's `state.vscdb` (the user folder's and each workspace's).
    Cursor,
    /// Crush's per-project `.crush/crush.db`.
    Crush,
    /// Cline's SDK session folders ([`super::cline_sdk`]).
    ClineSdk,
}

impl Kind {
    /// The kind of database a file's name says it is (what a folder's walk looks for).
    pub fn of(path: &Path) -> Option<Kind> {
        let name = path.file_name()?.to_str()?;
        let named = |agent: &str| {
            let channel = name
                .strip_prefix(agent)
                .and_then(|n| n.strip_prefix('-'))
                .and_then(|n| n.strip_suffix(".db"))
                .is_some_and(|c| {
                    !c.is_empty()
                        && c.chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-' | '.'))
                });
            channel || name.strip_suffix(".db") == Some(agent)
        };
        let in_kilo = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|f| f == "kilo");
        let in_sessions = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|f| f == "sessions");
        if name == "state.vscdb" {
            return Some(Kind::Cursor);
        }
        if name == "crush.db" {
            return Some(Kind::Crush);
        }
        if named("kilo") || (named("opencode") && in_kilo) {
            Some(Kind::Kilo)
        } else if name == "sessions.db" && in_sessions {
            Some(Kind::Goose)
        } else {
            named("opencode").then_some(Kind::OpenCode)
        }
    }

    /// The agent's name in a session's document.
    pub fn agent(self) -> &'static str {
        match self {
            Kind::OpenCode => "opencode",
            Kind::Kilo => "kilo",
            Kind::Goose => "goose",
            Kind::Cline => "cline",
            Kind::RooCode => "roo-code",
            Kind::KiloCode => "kilo-code",
            Kind::Cursor => "cursor",
            Kind::Crush => "crush",
            Kind::ClineSdk => "cline-sdk",
        }
    }

    /// The kind an agent's name in a document names.
    pub fn named(agent: &str) -> Option<Kind> {
        [
            Kind::OpenCode,
            Kind::Kilo,
            Kind::Goose,
            Kind::Cline,
            Kind::RooCode,
            Kind::KiloCode,
            Kind::Cursor,
            Kind::Crush,
            Kind::ClineSdk,
        ]
        .into_iter()
        .find(|k| k.agent() == agent)
    }

    /// The kind of database its tables say it is: OpenCode's `session`, `message` and `part`,
    /// each message and part a JSON `data` column (Kilo's are the same: the name tells them
    /// apart, OpenCode's where it does not).
    fn detect(conn: &Connection, path: &Path) -> rusqlite::Result<Option<Kind>> {
        let has = |table: &str, column: &str| has_column(conn, table, column);
        // VS Code's own store has the name and the table too: it holds no conversation.
        if Kind::of(path) == Some(Kind::Cursor) || super::cursor::is_store(conn)? {
            return Ok(Some(Kind::Cursor));
        }
        if super::crush::is_store(conn)? {
            return Ok(Some(Kind::Crush));
        }
        if has("sessions", "working_dir")? && has("messages", "content_json")? {
            return Ok(Some(Kind::Goose));
        }
        let opencode =
            has("session", "parent_id")? && has("message", "data")? && has("part", "message_id")?;
        Ok(opencode.then(|| {
            Kind::named_by_variable(path)
                .or_else(|| Kind::of(path))
                .unwrap_or(Kind::OpenCode)
        }))
    }

    /// The agent whose variable (`$OPENCODE_DB`, `$KILO_DB`) names this file, whatever its name.
    fn named_by_variable(path: &Path) -> Option<Kind> {
        let same = |var: &str| {
            std::env::var_os(var).is_some_and(|named| {
                let named = Path::new(&named);
                named == path
                    || named
                        .canonicalize()
                        .is_ok_and(|n| path.canonicalize().is_ok_and(|p| p == n))
            })
        };
        if same("KILO_DB") {
            Some(Kind::Kilo)
        } else {
            same("OPENCODE_DB").then_some(Kind::OpenCode)
        }
    }
}

/// Appends `value` to a document of JSON Lines (the form every store's session takes here).
pub fn json_line(out: &mut Vec<u8>, value: &Value) {
    out.extend_from_slice(value.to_string().as_bytes());
    out.push(b'\n');
}

/// Whether a database's table `table` has the column `column`.
pub fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Whether a database has the table `name`.
pub fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Whether a file starts as an SQLite database does.
pub fn is_sqlite(path: &Path) -> bool {
    let mut header = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header))
        .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// The agent database a changed file belongs to: the database itself, or its write-ahead log
/// (`<database>-wal`, where the agent's commits land first). Not the shared-memory index
/// (`-shm`), which readers write too.
pub fn database_of(path: &Path) -> Option<PathBuf> {
    if Kind::of(path).is_some() {
        return Some(path.to_path_buf());
    }
    let db = PathBuf::from(path.to_str()?.strip_suffix("-wal")?);
    Kind::of(&db).map(|_| db)
}

/// One session of an agent's database (or of OpenCode's folder of JSON files).
#[derive(Debug, Clone)]
pub struct SessionSource {
    /// The database file, or the `storage` folder.
    pub store: PathBuf,
    /// Whether the store is a folder of JSON files ([`super::opencode_files`]).
    pub files: bool,
    /// Whose database.
    pub kind: Kind,
    /// The session's id.
    pub session: String,
    /// The size of its rows' JSON (for progress).
    pub size: u64,
}

impl SessionSource {
    /// The document's name in the archive: `<canonical database or folder path>#<session id>`.
    pub fn name(&self) -> String {
        let store = self
            .store
            .canonicalize()
            .unwrap_or_else(|_| self.store.clone());
        format!("{}#{}", store.display(), self.session)
    }
}

/// A session kept as JSON files (OpenCode's `storage`, a Cline-family task folder) as its
/// document; `None` when it is gone.
pub fn files_document(source: &SessionSource) -> std::io::Result<Option<Vec<u8>>> {
    match source.kind {
        Kind::ClineSdk => {
            if !super::cline_sdk::is_session_folder(&source.store) {
                return Ok(None);
            }
            super::cline_sdk::document(&source.store).map(Some)
        }
        Kind::Cline | Kind::RooCode | Kind::KiloCode => {
            if !super::cline::is_task_folder(&source.store) {
                return Ok(None);
            }
            let kind = super::cline::kind_of(&source.store);
            super::cline::document(&source.store, kind).map(Some)
        }
        _ => super::opencode_files::document(&source.store, &source.session, source.kind.agent()),
    }
}

/// Whether an archived document's name is that of a session read from a folder of JSON files
/// (`.../storage#<session id>`), which the database the agent migrated it into supersedes.
pub fn is_files_document(name: &str) -> bool {
    name.rsplit_once('#')
        .is_some_and(|(store, _)| Path::new(store).file_name().is_some_and(|f| f == "storage"))
}

/// The session id of a document read from an agent's store (`<store>#<session id>`).
pub fn session_of(name: &str) -> Option<&str> {
    name.rsplit_once('#')
        .map(|(_, id)| id)
        .filter(|id| !id.is_empty() && !id.contains(['/', '\\']))
}

/// Opens a database read-only, as a reader beside the agent writing it.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // A checkpoint or WAL recovery by the agent can hold readers back for a moment.
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// The sessions a listing query gives: `(id, size)` rows, oldest first.
pub fn list(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare(sql)?;
    stmt.query_map([], |r| {
        Ok((
            text(r.get_ref(0)?),
            r.get::<_, Option<i64>>(1)?.unwrap_or(0).max(0) as u64,
        ))
    })?
    .collect()
}

/// The rows a query for one session gives, each as a JSON object of its columns (JSON text
/// columns, `*_json`, parsed where they parse).
pub fn rows(
    conn: &Connection,
    sql: &str,
    session: &str,
) -> rusqlite::Result<Vec<Map<String, Value>>> {
    let mut stmt = conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
    stmt.query_map([session], |r| {
        let mut row = Map::new();
        for (i, name) in names.iter().enumerate() {
            let value = match r.get_ref(i)? {
                ValueRef::Integer(n) => Value::from(n),
                ValueRef::Real(f) => Value::from(f),
                ValueRef::Null => Value::Null,
                other => {
                    let text = text(other);
                    match serde_json::from_str::<Value>(&text) {
                        Ok(json) if name.ends_with("_json") => json,
                        _ => Value::String(text),
                    }
                }
            };
            row.insert(name.clone(), value);
        }
        Ok(row)
    })?
    .collect()
}

/// A column's text, whatever SQLite holds.
pub fn text(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Null => String::new(),
    }
}

/// Every candidate with each database (and folder of JSON files) replaced by its sessions, or
/// by the reason it could not be read.
pub fn expand(candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut out = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        let path = match candidate {
            Candidate::Database(path) => path,
            Candidate::Files(store) => {
                let kind = super::opencode_files::kind_of(&store);
                match super::opencode_files::sessions(&store) {
                    Ok(list) => out.extend(list.into_iter().map(|(session, size)| {
                        Candidate::Session(SessionSource {
                            store: store.clone(),
                            files: true,
                            kind,
                            session,
                            size,
                        })
                    })),
                    Err(e) => out.push(Candidate::Unreadable(
                        store,
                        format!("cannot list the sessions of the folder: {e}"),
                    )),
                }
                continue;
            }
            other => {
                out.push(other);
                continue;
            }
        };
        let listed = open(&path).and_then(|conn| match Kind::detect(&conn, &path)? {
            Some(kind) => Ok(Some((kind, sessions(&conn, kind)?))),
            None => Ok(None),
        });
        match listed {
            Ok(None) => out.push(Candidate::Unreadable(
                path,
                "an SQLite database, but not one of an agent quarry reads".to_string(),
            )),
            Ok(Some((kind, list))) => out.extend(list.into_iter().map(|(session, size)| {
                Candidate::Session(SessionSource {
                    store: path.clone(),
                    files: false,
                    kind,
                    session,
                    size,
                })
            })),
            Err(e) => out.push(Candidate::Unreadable(
                path,
                format!("cannot read the database: {e}"),
            )),
        }
    }
    out
}

/// The sessions of a database, with the size of each one's rows.
fn sessions(conn: &Connection, kind: Kind) -> rusqlite::Result<Vec<(String, u64)>> {
    match kind {
        Kind::OpenCode | Kind::Kilo => super::opencode::sessions(conn),
        Kind::Goose => super::goose::sessions(conn),
        Kind::Cursor => super::cursor::sessions(conn),
        Kind::Crush => super::crush::sessions(conn),
        Kind::Cline | Kind::RooCode | Kind::KiloCode | Kind::ClineSdk => Ok(Vec::new()),
    }
}

/// A session's document: its rows as JSON Lines, read in one transaction (`None`: the session
/// is gone).
pub fn document(conn: &Connection, source: &SessionSource) -> rusqlite::Result<Option<Vec<u8>>> {
    // Rolled back when dropped, whatever happens: the connection reads the next session.
    let read = conn.unchecked_transaction()?;
    let rows = match source.kind {
        Kind::OpenCode | Kind::Kilo => {
            super::opencode::document(&read, &source.session, source.kind.agent())?
        }
        Kind::Goose => super::goose::document(&read, &source.session)?,
        Kind::Cursor => super::cursor::document(&read, &source.store, &source.session)?,
        Kind::Crush => super::crush::document(&read, &source.session)?,
        Kind::Cline | Kind::RooCode | Kind::KiloCode | Kind::ClineSdk => None,
    };
    read.finish()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{Kind, database_of};

    #[test]
    fn databases_are_known_by_name_in_a_folder_and_by_their_log() {
        assert_eq!(Kind::of(Path::new("/d/opencode.db")), Some(Kind::OpenCode));
        assert_eq!(
            Kind::of(Path::new("/d/opencode-dev.db")),
            Some(Kind::OpenCode)
        );
        assert_eq!(Kind::of(Path::new("/d/opencode-.db")), None);
        assert_eq!(Kind::of(Path::new("/d/opencode.db.bak")), None);
        assert_eq!(Kind::of(Path::new("/d/archive.db")), None);
        assert_eq!(Kind::of(Path::new("/d/kilo.db")), Some(Kind::Kilo));
        assert_eq!(Kind::of(Path::new("/d/kilo-beta.db")), Some(Kind::Kilo));
        assert_eq!(
            Kind::of(Path::new("/d/kilo/opencode-dev.db")),
            Some(Kind::Kilo)
        );
        assert_eq!(Kind::of(Path::new("/d/kilocode.db")), None);
        // A commit lands in the write-ahead log first; readers write the shared-memory index.
        let db = Some(PathBuf::from("/d/opencode.db"));
        assert_eq!(database_of(Path::new("/d/opencode.db-wal")), db);
        assert_eq!(database_of(Path::new("/d/opencode.db")), db);
        assert_eq!(database_of(Path::new("/d/opencode.db-shm")), None);
        assert_eq!(database_of(Path::new("/d/archive.db-wal")), None);
    }
}
