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

/// The OS user, the default owner of ingested sessions: the name the user database gives the
/// process's user (so it is known under CI and cron, where `$USER` is often unset), else
/// `$USER` / `$USERNAME`.
pub fn os_user() -> Option<String> {
    whoami::fallible::username()
        .ok()
        .or_else(|| {
            std::env::var("USER")
                .or_else(|_| std::env::var("USERNAME"))
                .ok()
        })
        .filter(|u| !u.is_empty())
}

/// This host's name, the default machine of ingested files: the kernel's host name (Linux),
/// else `$HOSTNAME` / `$COMPUTERNAME`.
pub fn host_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .or_else(|_| std::env::var("COMPUTERNAME"))
                .ok()
                .filter(|h| !h.is_empty())
        })
}
