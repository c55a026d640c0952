//! Scopes: what a session may see, decided before any planning. `admin` sees everything; a
//! reader scope sees the sessions its predicate and/or owner select, and of those only the
//! public tables and columns, credentials masked (see `docs/security.md`).
//!
//! Reader scopes are named in a scopes file (TOML; `scopes.toml` beside the archive unless
//! `--scopes FILE` says otherwise):
//!
//! ```toml
//! [scope.alice]
//! owner = "alice"
//!
//! [scope.acme]
//! sessions = "repo:acme-web OR cwd:/home/alice"
//! owner = "alice"          # optional: both must hold when both are given
//! ```
//!
//! A scope's `sessions` predicate is quarry's own language, matched exactly
//! ([`predicate::SessionPredicate`]).

pub mod predicate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use self::predicate::SessionPredicate;

/// The name of the built-in scope that sees everything.
pub const ADMIN: &str = "admin";

/// What a session may see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every table, column and session.
    #[default]
    Admin,
    /// The sessions a reader scope selects, and only what readers may see of them.
    Reader(ReaderScope),
}

impl Scope {
    /// The scope's name (`admin`, or the reader scope's).
    pub fn name(&self) -> &str {
        match self {
            Scope::Admin => ADMIN,
            Scope::Reader(r) => &r.name,
        }
    }

    /// Whether it is the admin scope.
    pub fn is_admin(&self) -> bool {
        matches!(self, Scope::Admin)
    }

    /// What identifies the scope in a cursor's digest and in the keys of values kept per scope:
    /// its name and definition.
    pub fn identity(&self) -> String {
        match self {
            Scope::Admin => "admin".into(),
            Scope::Reader(reader) => format!("{}\u{0}{}", reader.name, reader.definition_key()),
        }
    }
}

/// A reader scope: its sessions are those matching `sessions` (when given) whose owner is
/// `owner` (when given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderScope {
    /// Its name in the scopes file.
    pub name: String,
    /// The session predicate, checked when the scope was made.
    pub sessions: Option<SessionPredicate>,
    /// The owner its sessions must have.
    pub owner: Option<String>,
    /// The one session it sees (a conversation's own tools: [`ReaderScope::pinned`]).
    pub session: Option<String>,
}

impl ReaderScope {
    /// A reader scope; at least one of `sessions` and `owner` must be given.
    pub fn new(
        name: &str,
        sessions: Option<&str>,
        owner: Option<&str>,
    ) -> Result<ReaderScope, ScopeError> {
        if name.eq_ignore_ascii_case(ADMIN) {
            return Err(ScopeError::Invalid {
                scope: name.into(),
                message: "`admin` is built in and cannot be redefined".into(),
            });
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(ScopeError::Invalid {
                scope: format!("{name:?}"),
                message: "a scope's name is letters, digits, `-`, `_` and `.`".into(),
            });
        }
        if sessions.is_none() && owner.is_none() {
            return Err(ScopeError::Invalid {
                scope: name.into(),
                message: "give `sessions` (a session predicate), `owner`, or both".into(),
            });
        }
        let sessions = sessions
            .map(SessionPredicate::parse)
            .transpose()
            .map_err(|message| ScopeError::Invalid {
                scope: name.into(),
                message,
            })?;
        Ok(ReaderScope {
            name: name.into(),
            sessions,
            owner: owner.map(str::to_string),
            session: None,
        })
    }

    /// The reader scope of one session and nothing else: what a conversation's own tools see
    /// (`quarry mcp --session ID`), whatever their arguments say. Named `session`.
    pub fn pinned(session_id: &str) -> ReaderScope {
        ReaderScope {
            name: "session".into(),
            sessions: None,
            owner: None,
            session: Some(session_id.to_string()),
        }
    }

    /// What the scope says, without its name: two scopes with the same key see the same rows
    /// (a long-lived engine keeps one view per key, so an edited scope gets a new one).
    pub fn definition_key(&self) -> String {
        serde_json::json!({
            "sessions": self.sessions.as_ref().map(SessionPredicate::text),
            "owner": self.owner,
            "session": self.session,
        })
        .to_string()
    }

    /// Whether a session with these field values (`session_id`, `owner`, and the predicate's
    /// columns) is in the scope.
    pub fn admits(&self, fields: &dyn Fn(&str) -> Option<String>) -> bool {
        let owner_ok = match &self.owner {
            Some(owner) => fields("owner").as_deref() == Some(owner.as_str()),
            None => true,
        };
        let pinned_ok = match &self.session {
            Some(id) => fields("session_id").as_deref() == Some(id.as_str()),
            None => true,
        };
        owner_ok && pinned_ok && self.sessions.as_ref().is_none_or(|p| p.matches(fields))
    }
}

/// Why a scope could not be found or made.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// The scopes file cannot be read.
    #[error("cannot read the scopes file {}: {message}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A scope of the file is wrong.
    #[error("scope {scope}: {message}")]
    Invalid {
        /// The scope.
        scope: String,
        /// What is wrong.
        message: String,
    },
    /// No scope has the name asked for.
    #[error("no scope named {name} in {}{}", .path.display(), known_names(.known))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The scopes file.
        path: PathBuf,
        /// The names it defines.
        known: Vec<String>,
    },
}

fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        " (it defines none; `admin` is built in)".into()
    } else {
        format!(" (it defines {}; `admin` is built in)", known.join(", "))
    }
}

/// The scopes file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopesToml {
    #[serde(default)]
    scope: BTreeMap<String, ScopeToml>,
}

/// One `[scope.NAME]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeToml {
    sessions: Option<String>,
    owner: Option<String>,
    /// For people reading the file.
    #[allow(dead_code)]
    description: Option<String>,
}

/// The scopes file beside `archive`: `scopes.toml` in its folder.
pub fn default_scopes_file(archive: &Path) -> PathBuf {
    archive
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("scopes.toml")
}

/// Every reader scope `text` (a scopes file's contents) defines, by name.
pub fn parse_scopes(text: &str) -> Result<BTreeMap<String, ReaderScope>, ScopeError> {
    let file: ScopesToml = toml::from_str(text).map_err(|e| ScopeError::Invalid {
        scope: "(file)".into(),
        message: e.to_string(),
    })?;
    file.scope
        .iter()
        .map(|(name, s)| {
            ReaderScope::new(name, s.sessions.as_deref(), s.owner.as_deref())
                .map(|scope| (name.clone(), scope))
        })
        .collect()
}

/// The scope called `name`: `admin`, or a reader scope of the scopes file at `file`.
pub fn resolve(name: &str, file: &Path) -> Result<Scope, ScopeError> {
    if name == ADMIN {
        return Ok(Scope::Admin);
    }
    if name.is_empty() {
        return Err(ScopeError::Invalid {
            scope: "\"\"".into(),
            message: "give a scope's name (or `admin`)".into(),
        });
    }
    let text = std::fs::read_to_string(file).map_err(|e| ScopeError::Unreadable {
        path: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut scopes = parse_scopes(&text).map_err(|e| match e {
        ScopeError::Invalid { scope, message } => ScopeError::Invalid {
            scope,
            message: format!("{message} (in {})", file.display()),
        },
        other => other,
    })?;
    let known: Vec<String> = scopes.keys().cloned().collect();
    scopes
        .remove(name)
        .map(Scope::Reader)
        .ok_or_else(|| ScopeError::Unknown {
            name: name.into(),
            path: file.to_path_buf(),
            known,
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_scopes_file_parses_and_checks_its_scopes() {
        let scopes = parse_scopes(
            r#"
            [scope.alice]
            owner = "alice"
            [scope.acme]
            sessions = "repo:acme-web OR cwd:/home/alice"
            owner = "alice"
            description = "the acme web work"
            "#,
        )
        .unwrap();
        assert_eq!(scopes.len(), 2);
        assert_eq!(scopes["alice"].owner.as_deref(), Some("alice"));
        assert!(scopes["acme"].sessions.is_some());
    }

    #[test]
    fn wrong_scopes_are_refused_with_their_name() {
        for (text, needle) in [
            ("[scope.empty]\n", "give `sessions`"),
            ("[scope.admin]\nowner = \"x\"\n", "built in"),
            ("[scope.Admin]\nowner = \"x\"\n", "built in"),
            ("[scope.\" admin\"]\nowner = \"x\"\n", "a scope's name"),
            ("[scope.bad]\nsessions = \"repo:\"\n", "bad"),
            ("[scope.x]\nownr = \"x\"\n", "unknown field"),
            ("[scope.fts]\nsessions = \"hello\"\n", "fts"),
        ] {
            let err = parse_scopes(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn both_owner_and_predicate_must_hold() {
        let scope = ReaderScope::new("s", Some("repo:acme-web"), Some("alice")).unwrap();
        let row = |repo: &'static str, owner: &'static str| {
            move |f: &str| match f {
                "repo" => Some(repo.to_string()),
                "owner" => Some(owner.to_string()),
                _ => None,
            }
        };
        assert!(scope.admits(&row("acme-web", "alice")));
        assert!(!scope.admits(&row("acme-web", "bob")));
        assert!(!scope.admits(&row("other", "alice")));
    }

    #[test]
    fn a_pinned_scope_admits_its_session_only() {
        let scope = ReaderScope::pinned("claude-code:abc");
        let row = |id: &'static str| move |f: &str| (f == "session_id").then(|| id.to_string());
        assert!(scope.admits(&row("claude-code:abc")));
        assert!(!scope.admits(&row("claude-code:abcd")));
        assert!(!scope.admits(&|_: &str| None));
    }

    #[test]
    fn resolve_names_what_the_file_defines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scopes.toml");
        std::fs::write(&file, "[scope.alice]\nowner = \"alice\"\n").unwrap();
        assert_eq!(resolve("admin", &file).unwrap(), Scope::Admin);
        assert_eq!(resolve("alice", &file).unwrap().name(), "alice");
        let err = resolve("bob", &file).unwrap_err().to_string();
        assert!(err.contains("bob") && err.contains("alice"), "{err}");
        let missing = resolve("alice", &dir.path().join("none.toml")).unwrap_err();
        assert!(matches!(missing, ScopeError::Unreadable { .. }));
    }
}
