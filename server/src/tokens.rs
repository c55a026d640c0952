//! The tokens file: the bearer tokens `quarry serve` accepts, each mapped to a scope. Only a
//! token's SHA-256 is stored, never the token; `quarry token add` prints the token once.
//!
//! ```toml
//! # quarry tokens: `quarry token add|list|revoke` keep this file (mode 0600).
//! [[token]]
//! name = "alice-laptop"
//! scope = "alice"
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! created_at = "2026-12-01T20:30:00Z"
//! ```
//!
//! The file must be private to its owner: the server refuses to start on a file other users
//! can read or write, and a running server re-reads it whenever it changes (so a revocation
//! takes effect at the next request). Changes are written to a new file that replaces the old
//! one by rename, so a reader never sees half a file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a token's text starts with (so secret scanners and people can tell what it is).
pub const TOKEN_PREFIX: &str = "qry_";

/// Random bytes in a token: 256 bits.
const TOKEN_BYTES: usize = 32;

/// Why the tokens file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file cannot be read or written.
    #[error("cannot use the tokens file {}: {message}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The file is not a tokens file.
    #[error("the tokens file {} is not valid: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Other users may read (or write) the file.
    #[error(
        "the tokens file {} can be read or written by other users (mode {mode:04o}); make it private with `chmod 600 {}`",
        .path.display(),
        .path.display()
    )]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A name that is not allowed, or already taken, or unknown.
    #[error("{0}")]
    Name(String),
    /// No random bytes could be had from the operating system.
    #[error("cannot make a random token: {0}")]
    Random(String),
}

/// One token as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Who or what holds the token (recorded in the audit trail as `who`).
    pub name: String,
    /// The scope its requests run under (`admin`, or a reader scope of the scopes file).
    pub scope: String,
    /// The token's SHA-256, in lowercase hex.
    pub sha256: String,
    /// When it was made (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// The tokens file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    /// The tokens, in the order they were added.
    #[serde(default, rename = "token")]
    pub tokens: Vec<TokenEntry>,
}

impl Tokens {
    /// Reads the tokens file at `path`, which must be private to its owner.
    pub fn load(path: &Path) -> Result<Tokens, TokenError> {
        check_private(path)?;
        Self::read(path)
    }

    /// Reads the tokens file at `path`, or no tokens when there is no file yet.
    pub fn load_or_empty(path: &Path) -> Result<Tokens, TokenError> {
        if path.exists() {
            Self::load(path)
        } else {
            Ok(Tokens::default())
        }
    }

    fn read(path: &Path) -> Result<Tokens, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
        let tokens: Tokens = toml::from_str(&text).map_err(|e| TokenError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        for entry in &tokens.tokens {
            check_name(&entry.name).map_err(|message| TokenError::Invalid {
                path: path.to_path_buf(),
                message,
            })?;
            if entry.sha256.len() != 64 || !entry.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(TokenError::Invalid {
                    path: path.to_path_buf(),
                    message: format!("token {}: sha256 is not 64 hex digits", entry.name),
                });
            }
        }
        Ok(tokens)
    }

    /// The entry whose hash is the hash of `token`, if any.
    pub fn find(&self, token: &str) -> Option<&TokenEntry> {
        let hash = sha256_hex(token);
        self.tokens
            .iter()
            .find(|e| e.sha256.eq_ignore_ascii_case(&hash))
    }

    /// Writes the file at `path` (mode 0600), replacing it whole.
    pub fn save(&self, path: &Path) -> Result<(), TokenError> {
        let mut text = String::from(
            "# quarry tokens: each [[token]] is a bearer token's name, scope and SHA-256 (never the token\n# itself). Keep with `quarry token add|list|revoke`; the file must stay private (0600).\n\n",
        );
        text.push_str(&toml::to_string(self).map_err(|e| TokenError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?);
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&folder).map_err(|e| io_error(path, &e))?;
        // A temporary file is 0600 from its creation, so the hashes are never readable by others.
        let mut file = tempfile::Builder::new()
            .prefix(".tokens.")
            .suffix(".partial")
            .tempfile_in(&folder)
            .map_err(|e| io_error(path, &e))?;
        use std::io::Write;
        file.write_all(text.as_bytes())
            .and_then(|_| file.as_file().sync_all())
            .map_err(|e| io_error(path, &e))?;
        file.persist(path).map_err(|e| io_error(path, &e.error))?;
        Ok(())
    }

    /// Adds a token called `name` for `scope` and returns its text (the only time it is seen).
    pub fn add(&mut self, name: &str, scope: &str) -> Result<String, TokenError> {
        check_name(name).map_err(TokenError::Name)?;
        if self.tokens.iter().any(|e| e.name == name) {
            return Err(TokenError::Name(format!(
                "a token named {name} exists already; revoke it first or choose another name"
            )));
        }
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let token = format!("{TOKEN_PREFIX}{}", hex(&bytes));
        self.tokens.push(TokenEntry {
            name: name.to_string(),
            scope: scope.to_string(),
            sha256: sha256_hex(&token),
            created_at: Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()),
        });
        Ok(token)
    }

    /// Removes the token called `name`.
    pub fn revoke(&mut self, name: &str) -> Result<TokenEntry, TokenError> {
        let position = self
            .tokens
            .iter()
            .position(|e| e.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.tokens.iter().map(|e| e.name.as_str()).collect();
                TokenError::Name(if known.is_empty() {
                    format!("no token named {name}: the file holds none")
                } else {
                    format!(
                        "no token named {name} (the file holds {})",
                        known.join(", ")
                    )
                })
            })?;
        Ok(self.tokens.remove(position))
    }
}

/// A token's name: letters, digits, `.`, `_`, `-` and `@`, at most 100 of them.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 100
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
    {
        return Err(format!(
            "{name:?} is not a token name: use 1 to 100 letters, digits, `.`, `_`, `-` or `@`"
        ));
    }
    Ok(())
}

/// Refuses a file that other users may read or write (a tokens file holds what lets requests
/// in: even hashes should stay private).
pub fn check_private(path: &Path) -> Result<(), TokenError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, &e))?;
    if !meta.is_file() {
        return Err(TokenError::Invalid {
            path: path.to_path_buf(),
            message: "it is not a regular file".into(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(TokenError::NotPrivate {
                path: path.to_path_buf(),
                mode,
            });
        }
        // Another user's file, or a folder others may write (where they could rename their
        // own private file over this one), is not private either. (`/proc/self` is the
        // process's own: its owner is the effective user, on Linux.)
        if let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid())
            && meta.uid() != me
        {
            return Err(TokenError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "it belongs to another user (uid {}); the server's own user must own it",
                    meta.uid()
                ),
            });
        }
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(folder_meta) = std::fs::metadata(folder) {
            let folder_mode = folder_meta.permissions().mode();
            let sticky = folder_mode & 0o1000 != 0;
            if folder_mode & 0o022 != 0 && !sticky {
                return Err(TokenError::Invalid {
                    path: path.to_path_buf(),
                    message: format!(
                        "its folder {} can be written by other users (mode {:04o}), who could replace the file",
                        folder.display(),
                        folder_mode & 0o7777
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Runs `change` on the tokens file at `path` under an exclusive lock (a `.lock` file beside
/// it), so two `quarry token` runs at once cannot undo each other's change.
pub fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut Tokens) -> Result<T, TokenError>,
) -> Result<T, TokenError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    if let Some(folder) = lock_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|e| io_error(path, &e))?;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| io_error(&lock_path, &e))?;
    lock.lock().map_err(|e| io_error(&lock_path, &e))?;
    let mut tokens = Tokens::load_or_empty(path)?;
    let out = change(&mut tokens)?;
    tokens.save(path)?;
    Ok(out)
}

/// `text`'s SHA-256 in lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn io_error(path: &Path, e: &std::io::Error) -> TokenError {
    TokenError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// A file's identity and version: when any part changes, it must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: u64,
    #[cfg(unix)]
    changed: (i64, i64),
}

impl FileStamp {
    /// The stamp of the file at `path` now.
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        let meta = std::fs::metadata(path)?;
        Ok(FileStamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(&meta),
            #[cfg(unix)]
            changed: (
                std::os::unix::fs::MetadataExt::ctime(&meta),
                std::os::unix::fs::MetadataExt::ctime_nsec(&meta),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_token_is_found_by_its_hash_and_only_the_hash_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let mut tokens = Tokens::default();
        let token = tokens.add("alice", "alice").unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(token.len(), TOKEN_PREFIX.len() + 2 * TOKEN_BYTES);
        tokens.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&token), "the token itself is never written");
        // An independent hash of the token: sha256 of the empty string is the known constant.
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let loaded = Tokens::load(&path).unwrap();
        assert_eq!(loaded.find(&token).unwrap().name, "alice");
        assert!(loaded.find("qry_wrong").is_none());
        assert!(loaded.find(&token[..token.len() - 1]).is_none());
    }

    #[test]
    fn two_tokens_differ_and_names_are_unique() {
        let mut tokens = Tokens::default();
        let a = tokens.add("a", "admin").unwrap();
        let b = tokens.add("b", "admin").unwrap();
        assert_ne!(a, b);
        assert!(tokens.add("a", "admin").is_err());
        assert!(tokens.add("has space", "admin").is_err());
        assert_eq!(tokens.revoke("a").unwrap().name, "a");
        assert!(tokens.revoke("a").unwrap_err().to_string().contains("b"));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        Tokens::default().save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Tokens::load(&path).unwrap_err();
        assert!(
            matches!(err, TokenError::NotPrivate { mode: 0o644, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("chmod 600"));
    }

    #[test]
    fn a_malformed_file_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        Tokens::default().save(&path).unwrap();
        std::fs::write(&path, "[[token]]\nname = \"x\"\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let err = Tokens::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("tokens.toml") && err.contains("missing field"),
            "{err}"
        );
    }
}
