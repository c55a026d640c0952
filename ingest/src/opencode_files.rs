//! OpenCode's sessions as its releases before 1.2.0 kept them (and Kilo CLI's before its
//! database): JSON files under `<data>/storage`, one per session, message and part, each the
//! whole object with its ids inside (`Storage.write`, `packages/opencode/src/storage/storage.ts`
//! at 1.1.65):
//!
//! - `session/<project id>/<session id>.json`: `{id, projectID, parentID?, directory, title,
//!   version, time {created, updated}}`;
//! - `message/<session id>/<message id>.json`: the message, as in the database's `data`;
//! - `part/<message id>/<part id>.json`: the part, likewise.
//!
//! OpenCode 1.2.0 (Kilo CLI likewise) copied the files into its database once, taking each id
//! from the file's path, and left them in place. This module turns one session's files into
//! the document a database's rows make ([`super::opencode::document`]): the session row under
//! the database's column names, each message's and part's object without its ids, in the
//! database's order. One reader ([`super::opencode::parse`]) serves both, and a migrated session
//! is one session in the archive, the database's ([`super::sources::is_files_document`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::sources::Kind;

/// Whether a folder is such a store: named `storage`, with `session` and `message` folders.
pub fn is_store(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "storage")
        && dir.join("session").is_dir()
        && dir.join("message").is_dir()
}

/// The store a file lies in, if any.
pub fn store_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|dir| is_store(dir))
        .map(Path::to_path_buf)
}

/// Whose store: Kilo CLI's when its data folder is `kilo`, else OpenCode's.
pub fn kind_of(store: &Path) -> Kind {
    let data = store.parent().and_then(Path::file_name);
    if data.is_some_and(|d| d == "kilo") {
        Kind::Kilo
    } else {
        Kind::OpenCode
    }
}

/// The JSON files of a folder, sorted by name; none when it does not exist.
fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                    files.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    files.sort();
    Ok(files)
}

/// A file's name without `.json`: the id OpenCode wrote it under.
fn id_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A file's JSON object; what does not parse as one is kept as its text (the reader reports
/// it, naming the file).
fn read(path: &Path) -> std::io::Result<Value> {
    let bytes = std::fs::read(path)?;
    Ok(serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&bytes).into_owned())))
}

/// The sessions of a store, oldest first, with the size of each one's message and part files.
pub fn sessions(store: &Path) -> std::io::Result<Vec<(String, u64)>> {
    let mut found = Vec::new();
    for project in std::fs::read_dir(store.join("session"))? {
        let project = project?.path();
        if !project.is_dir() {
            continue;
        }
        for file in json_files(&project)? {
            let created = read(&file)
                .ok()
                .and_then(|s| s.pointer("/time/created").and_then(Value::as_i64));
            let session = id_of(&file);
            let mut size = 0;
            for message in json_files(&store.join("message").join(&session))? {
                size += std::fs::metadata(&message).map_or(0, |m| m.len());
                for part in json_files(&store.join("part").join(id_of(&message)))? {
                    size += std::fs::metadata(&part).map_or(0, |m| m.len());
                }
            }
            found.push((created.unwrap_or(i64::MAX), session, size));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, id, size)| (id, size)).collect())
}

/// One session's files as the JSON Lines a database's rows make; `None` when its file is gone.
pub fn document(store: &Path, session: &str, agent: &str) -> std::io::Result<Option<Vec<u8>>> {
    let name = format!("{session}.json");
    let mut file = None;
    for project in std::fs::read_dir(store.join("session"))? {
        let candidate = project?.path().join(&name);
        if candidate.is_file() {
            file = Some(candidate);
            break;
        }
    }
    let Some(file) = file else {
        return Ok(None);
    };
    let info = read(&file)?;
    let field = |pointer: &str| info.pointer(pointer).cloned().unwrap_or(Value::Null);
    let row = serde_json::json!({
        "id": session,
        "project_id": field("/projectID"),
        "parent_id": field("/parentID"),
        "directory": field("/directory"),
        "title": field("/title"),
        "version": field("/version"),
        "time_created": field("/time/created"),
        "time_updated": field("/time/updated"),
    });
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    let mut first = serde_json::json!({"opencode": "session", "agent": agent, "row": row});
    if !info.is_object() {
        // Its fields are lost, not the session: the reader reports the file.
        first["data"] = info.clone();
        first["file"] = Value::String(file.display().to_string());
    }
    line(first);
    let mut messages = Vec::new();
    for path in json_files(&store.join("message").join(session))? {
        let data = without_ids(read(&path)?, &["id", "sessionID"]);
        let created = data.pointer("/time/created").and_then(Value::as_i64);
        messages.push((created.unwrap_or(i64::MAX), id_of(&path), path, data));
    }
    messages.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    for (_, id, path, data) in messages {
        line(serde_json::json!({
            "opencode": "message", "id": id, "data": data, "file": path.display().to_string()
        }));
        for part in json_files(&store.join("part").join(&id))? {
            let data = without_ids(read(&part)?, &["id", "sessionID", "messageID"]);
            line(serde_json::json!({
                "opencode": "part", "id": id_of(&part), "message_id": id, "data": data,
                "file": part.display().to_string()
            }));
        }
    }
    Ok(Some(out))
}

/// An object without the id fields the database keeps in columns.
fn without_ids(value: Value, ids: &[&str]) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(k, _)| !ids.contains(&k.as_str()))
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The hand-made store of older releases.
    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/agents/opencode/legacy/storage")
    }

    /// Every file of the store cut in half, one at a time: never a panic; the cut file's record
    /// is reported (a session file cut keeps its session, read by its name), and every other
    /// session reads as before.
    #[test]
    fn a_file_cut_short_costs_its_record_only() {
        let store = fixture();
        let sessions = super::sessions(&store).unwrap();
        let read = |store: &Path| -> Vec<(String, usize, usize)> {
            sessions
                .iter()
                .map(|(id, _)| {
                    let doc = super::document(store, id, "opencode").unwrap().unwrap();
                    let (_, parsed) =
                        crate::parse_bytes(&format!("{}#{id}", store.display()), &doc);
                    let usage = parsed.sessions.iter().map(|s| s.usage.len()).sum();
                    (id.clone(), usage, parsed.diagnostics.len())
                })
                .collect()
        };
        let before = read(&store);
        for file in walkdir::WalkDir::new(&store)
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .filter(|p| p.is_file())
        {
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("storage");
            for entry in walkdir::WalkDir::new(&store) {
                let entry = entry.unwrap();
                let target = copy.join(entry.path().strip_prefix(&store).unwrap());
                if entry.file_type().is_dir() {
                    std::fs::create_dir_all(&target).unwrap();
                } else {
                    std::fs::copy(entry.path(), &target).unwrap();
                }
            }
            let cut = copy.join(file.strip_prefix(&store).unwrap());
            let bytes = std::fs::read(&cut).unwrap();
            std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
            let after = read(&copy);
            let changed: Vec<_> = before.iter().zip(&after).filter(|(b, a)| b != a).collect();
            assert!(changed.len() <= 1, "{}: {changed:?}", file.display());
            for (b, a) in changed {
                // The cut record is reported; its calls are kept or fewer.
                assert!(a.1 <= b.1, "{}: {a:?} after {b:?}", file.display());
                assert!(a.2 > b.2, "{}: {a:?} after {b:?}", file.display());
            }
        }
    }
}
