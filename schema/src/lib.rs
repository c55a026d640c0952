//! The one declaration of every table of quarry's archive: columns with their types,
//! nullability, one-line meanings and visibility; keys, the owning-session column, links between
//! tables, the time column, the columns a full-text index covers, and which rows a re-ingest
//! replaces.
//!
//! Everything else derives from it: the providers' Arrow schemas, the ingest's `INSERT`
//! statements, the catalog `quarry tables` lists, the column tables of `docs/tables.md`
//! ([`markdown_columns`]), and the language's field registry. The SQLite DDL is the one other
//! place a table is written down — as the fixed migration history — and a drift test compares
//! a migrated archive with this declaration, column by column.
//!
//! The crate has no dependencies, so every other crate of the workspace can use it.
//!
//! ```
//! use quarry_schema::{ColumnType, table};
//!
//! let messages = table("messages").expect("declared");
//! assert_eq!(messages.session_key, Some("session_id"));
//! assert_eq!(messages.time_column, Some("occurred_at_ms"));
//! let at = messages.column("occurred_at_ms").expect("declared");
//! assert_eq!(at.ty, ColumnType::Time);
//! assert_eq!(at.ty.sql_type(), "INTEGER"); // epoch milliseconds UTC in SQLite
//! assert!(messages.column_names().any(|c| c == "turn_committed"));
//! assert!(!table("events_raw").expect("declared").is_visible_to_readers());
//! ```

#![warn(missing_docs)]

mod markdown;
pub mod refs;
mod tables;

pub use markdown::{check_markdown_file, markdown_columns, regenerate_markdown};
pub use tables::TABLES;

/// The type of a column, as the engine sees it; SQLite stores each as [`ColumnType::sql_type`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// UTF-8 text.
    Text,
    /// A 64-bit signed integer.
    Integer,
    /// A 64-bit float.
    Real,
    /// A flag, stored in SQLite as the integer 0 or 1.
    Boolean,
    /// A point in time, stored in SQLite as epoch milliseconds UTC; an Arrow timestamp
    /// (milliseconds, UTC) to the engine. Durations are [`ColumnType::Integer`].
    Time,
    /// Text holding a JSON document (object or array).
    Json,
}

impl ColumnType {
    /// The type the SQLite DDL declares for the column: `INTEGER`, `REAL` or `TEXT`.
    pub fn sql_type(self) -> &'static str {
        match self {
            ColumnType::Text | ColumnType::Json => "TEXT",
            ColumnType::Integer | ColumnType::Boolean | ColumnType::Time => "INTEGER",
            ColumnType::Real => "REAL",
        }
    }

    /// The type's name for people: `text`, `integer`, `real`, `boolean`, `time`, `json`.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Text => "text",
            ColumnType::Integer => "integer",
            ColumnType::Real => "real",
            ColumnType::Boolean => "boolean",
            ColumnType::Time => "time",
            ColumnType::Json => "json",
        }
    }
}

/// Who may read a table or a column, and how a reader scope sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    /// Every scope, as stored.
    Public,
    /// Every scope; a reader sees it with credentials masked (tool inputs and outputs, message
    /// and context text: anything a secret can be pasted into).
    Masked,
    /// A person's identity (`sessions.owner`, `assertions.author_ref`): a reader sees it only
    /// where it is the reader's own owner, NULL elsewhere.
    Identity,
    /// Only the admin scope (raw payloads, bookkeeping).
    AdminOnly,
}

/// What kind of object a table is in SQLite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// A table of the catalog.
    Table,
    /// A view of the catalog (`events`).
    View,
    /// An FTS5 full-text index (`blocks_fts`), reached through the full-text leaves of the
    /// language, never scanned as a table.
    FullText,
    /// The archive's own records (`meta`, `source_files`); not in the catalog.
    Bookkeeping,
}

/// One column of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// SQL name.
    pub name: &'static str,
    /// Type.
    pub ty: ColumnType,
    /// Whether it may be NULL (the DDL has no `NOT NULL`).
    pub nullable: bool,
    /// One line: what the value means (Markdown, as `docs/tables.md` shows it).
    pub doc: &'static str,
    /// Who may read it (a column can be narrower than its table).
    pub visibility: Visibility,
}

impl Column {
    /// Whether every scope may read the column.
    pub fn is_visible_to_readers(&self) -> bool {
        self.visibility != Visibility::AdminOnly
    }
}

/// A column naming a row of another table: `column` of this table holds `table.references`
/// (e.g. `messages.session_id` → `sessions.session_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The column of this table.
    pub column: &'static str,
    /// The table it points to.
    pub table: &'static str,
    /// The column of that table it holds.
    pub references: &'static str,
}

/// One source format's sessions: the `sessions.origin` value, the harness its runs record, and
/// whether its files are transcripts of one record a line (re-derived from `events_raw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OriginDecl {
    /// The `origin` column value (`origin:` in the language).
    pub name: &'static str,
    /// The `runs.harness` value.
    pub harness: &'static str,
    /// Whether the source is a JSONL transcript, one record a line.
    pub lines: bool,
    /// The agent's name in messages.
    pub label: &'static str,
}

/// Every origin an archive can hold, in the order ingest names them: the one list the
/// language's value check, re-derivation and the adapters read.
pub const ORIGINS: &[OriginDecl] = &[
    OriginDecl {
        name: "claude-code-session",
        harness: "claude-code",
        lines: true,
        label: "Claude Code",
    },
    OriginDecl {
        name: "codex-session",
        harness: "codex",
        lines: true,
        label: "Codex",
    },
    OriginDecl {
        name: "chatgpt-export",
        harness: "chatgpt",
        lines: false,
        label: "ChatGPT",
    },
    OriginDecl {
        name: "claude-ai-export",
        harness: "claude-ai",
        lines: false,
        label: "Claude.ai",
    },
    OriginDecl {
        name: "gemini-cli-session",
        harness: "gemini-cli",
        lines: true,
        label: "Gemini CLI",
    },
    OriginDecl {
        name: "aistudio-drive",
        harness: "aistudio",
        lines: false,
        label: "AI Studio",
    },
    OriginDecl {
        name: "pi-session",
        harness: "pi",
        lines: true,
        label: "pi",
    },
    OriginDecl {
        name: "qwen-code-session",
        harness: "qwen-code",
        lines: true,
        label: "Qwen Code",
    },
    OriginDecl {
        name: "kimi-cli-session",
        harness: "kimi-cli",
        lines: true,
        label: "Kimi CLI",
    },
    OriginDecl {
        name: "copilot-cli-session",
        harness: "copilot-cli",
        lines: true,
        label: "GitHub Copilot CLI",
    },
    OriginDecl {
        name: "opencode-session",
        harness: "opencode",
        lines: true,
        label: "OpenCode",
    },
    OriginDecl {
        name: "kilo-session",
        harness: "kilo",
        lines: true,
        label: "Kilo CLI",
    },
    OriginDecl {
        name: "goose-session",
        harness: "goose",
        lines: true,
        label: "Goose",
    },
    OriginDecl {
        name: "amp-thread",
        harness: "amp",
        lines: false,
        label: "Amp",
    },
    OriginDecl {
        name: "cline-task",
        harness: "cline",
        lines: false,
        label: "Cline",
    },
    OriginDecl {
        name: "roo-code-task",
        harness: "roo-code",
        lines: false,
        label: "Roo Code",
    },
    OriginDecl {
        name: "kilo-code-task",
        harness: "kilo-code",
        lines: false,
        label: "Kilo Code",
    },
    OriginDecl {
        name: "aider-chat",
        harness: "aider",
        lines: false,
        label: "Aider",
    },
    OriginDecl {
        name: "cursor-chat",
        harness: "cursor",
        lines: true,
        label: "Cursor",
    },
    OriginDecl {
        name: "crush-session",
        harness: "crush",
        lines: true,
        label: "Crush",
    },
    OriginDecl {
        name: "cline-session",
        harness: "cline",
        lines: false,
        label: "Cline (SDK sessions)",
    },
];

/// The closed vocabulary of `assertions.status`, in the spec's order.
pub const ASSERTION_STATUSES: &[&str] = &[
    "active",
    "candidate",
    "accepted",
    "rejected",
    "deferred",
    "superseded",
    "deleted",
    "inactive",
];

/// Rows of a table that a reader scope sees only when its owner wrote them: those whose
/// `column` holds one of `values`, unless their `author` is the reader's owner (`assertions`:
/// candidates, and claims judged out of force, stay private to their author).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorPrivate {
    /// The column that marks a row private.
    pub column: &'static str,
    /// The values that mark it.
    pub values: &'static [&'static str],
    /// The column naming the row's author.
    pub author: &'static str,
}

/// One table (or view, or index) of the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    /// SQL name (underscores, as in `observed_events`).
    pub name: &'static str,
    /// One line: what a row is.
    pub doc: &'static str,
    /// Table, view, full-text index or bookkeeping.
    pub kind: TableKind,
    /// Columns, in the order the DDL declares them.
    pub columns: &'static [Column],
    /// The columns that identify a row (the primary key where the DDL declares one); empty when
    /// rows have no identifying key (`usage`, `blocks_fts`).
    pub key: &'static [&'static str],
    /// The column naming the session a row belongs to (`delegations`: the parent session);
    /// `None` for tables not owned by a session.
    pub session_key: Option<&'static str>,
    /// Columns holding a key of another table (parent/child links).
    pub links: &'static [Link],
    /// The column `time`, `sort by time` and time buckets read; `None` when rows have no time.
    pub time_column: Option<&'static str>,
    /// The columns a full-text index covers (on `blocks` and on its index `blocks_fts`).
    pub fulltext: &'static [&'static str],
    /// Who may read it; a public table may still have admin-only columns.
    pub visibility: Visibility,
    /// Whether a session's rows are deleted (by [`Table::session_key`]) and written again when
    /// the file holding the session is re-ingested. `blocks_fts` is kept in step with `blocks`
    /// by the ingest itself, so it is `false` here.
    pub replaced_per_session: bool,
    /// Columns the engine computes when a query reads them, after the stored ones: the cost
    /// columns, priced from the price table in force for that run. They are not in the archive
    /// or in a snapshot, so a new price table changes answers without rewriting either.
    pub computed: &'static [Column],
    /// Rows only their author sees in a reader scope, when the table has such rows.
    pub author_private: Option<AuthorPrivate>,
}

impl Table {
    /// The stored column called `name`.
    pub fn column(&self, name: &str) -> Option<&'static Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The stored or computed column called `name`: every column a query can read.
    pub fn query_column(&self, name: &str) -> Option<&'static Column> {
        self.column(name)
            .or_else(|| self.computed.iter().find(|c| c.name == name))
    }

    /// The names of every column a query can read: the stored ones in declaration order, then
    /// the computed ones.
    pub fn query_column_names(&self) -> impl Iterator<Item = &'static str> + use<> {
        let (columns, computed) = (self.columns, self.computed);
        columns.iter().chain(computed).map(|c| c.name)
    }

    /// Column names in declaration order.
    pub fn column_names(&self) -> impl Iterator<Item = &'static str> + use<> {
        let columns = self.columns;
        columns.iter().map(|c| c.name)
    }

    /// Whether the table finds a session's rows by its number in order of arrival
    /// ([`SESSION_NUM`], from `session_numbers`) rather than by the session id: the tables whose
    /// rows are many, so that a new session's rows append to the end of their index.
    pub fn numbered(&self) -> bool {
        self.session_key.is_some() && self.column(SESSION_NUM).is_some()
    }

    /// Whether every scope may read the table: a public table or view of the catalog (not
    /// bookkeeping, not a full-text index).
    pub fn is_visible_to_readers(&self) -> bool {
        self.visibility == Visibility::Public
            && matches!(self.kind, TableKind::Table | TableKind::View)
    }

    /// Whether the table is in the catalog (`quarry tables`, the query engine): a table or view.
    pub fn is_in_catalog(&self) -> bool {
        matches!(self.kind, TableKind::Table | TableKind::View)
    }

    /// The full-text index over this table's [`Table::fulltext`] columns (`blocks` →
    /// `blocks_fts`).
    pub fn fulltext_index(&self) -> Option<&'static Table> {
        TABLES.iter().find(|t| {
            t.kind == TableKind::FullText && t.name.strip_suffix("_fts") == Some(self.name)
        })
    }

    /// The columns holding a time, in declaration order.
    pub fn time_columns(&self) -> impl Iterator<Item = &'static Column> + use<> {
        let columns = self.columns;
        columns.iter().filter(|c| c.ty == ColumnType::Time)
    }
}

/// The column holding the owning session's number in order of arrival (see [`Table::numbered`]).
pub const SESSION_NUM: &str = "session_num";

/// The table (or view, or index) called `name` (SQL name, underscores).
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// The catalog: the tables and views of [`TABLES`], in catalog order (they lead the list).
pub const CATALOG: &[Table] = TABLES.split_at(catalog_len()).0;

const fn catalog_len() -> usize {
    let mut i = 0;
    while i < TABLES.len() && matches!(TABLES[i].kind, TableKind::Table | TableKind::View) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests;
