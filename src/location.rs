//! Where the archive lives: `--archive PATH`, else `$QUARRY_HOME/archive.db`, else the XDG data
//! folder (`~/.local/share/quarry/archive.db`).

use std::path::PathBuf;

/// The archive path to use, given the `--archive` flag.
pub fn archive_path(flag: Option<PathBuf>) -> PathBuf {
    if let Some(path) = flag {
        return path;
    }
    if let Some(home) = std::env::var_os("QUARRY_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home).join("archive.db");
    }
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("quarry")
        .join("archive.db")
}

/// The OS user, the default owner of ingested sessions.
pub fn os_user() -> Option<String> {
    std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .ok()
        .filter(|u| !u.is_empty())
}
