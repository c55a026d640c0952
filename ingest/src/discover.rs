//! Finding transcript files: the default locations of each tool, and walking given paths.

use std::path::{Path, PathBuf};

/// The default transcript locations, as messages name them (the environment variables of
/// [`default_roots`] move them).
pub const DEFAULT_LOCATIONS: &str = "~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, ~/.pi/agent/sessions, ~/.qwen/projects, ~/.kimi/sessions, ~/.copilot/session-state, ~/.local/share/opencode/opencode.db (and storage), ~/.local/share/kilo/kilo.db, ~/.local/share/goose/sessions/sessions.db, ~/.local/share/amp/threads, the editors' Cline, Roo Code and Kilo Code task folders, ~/.cline/data/sessions, Aider's .aider.chat.history.md in the home folder's repositories, Cursor's state.vscdb (global and per workspace) and ~/.cursor/projects/*/agent-transcripts, the Crush projects ~/.local/share/crush/projects.json lists";

/// The default transcript roots that exist on this machine: `~/.claude/projects` (or
/// `$CLAUDE_CONFIG_DIR/projects`), `~/.codex/sessions` (or `$CODEX_HOME/sessions`),
/// `~/.gemini/tmp`, `~/.pi/agent/sessions` (or `$PI_CODING_AGENT_DIR/sessions`; pi expands
/// a leading `~` in it) and `~/.qwen/projects` (or `$QWEN_RUNTIME_DIR/projects`, else
/// `$QWEN_HOME/projects`), `~/.kimi/sessions` (or `$KIMI_SHARE_DIR/sessions`) and
/// `~/.copilot/session-state` (or `$COPILOT_HOME/session-state`), and the databases of OpenCode
/// (`$OPENCODE_DB`, else each `opencode.db` / `opencode-<channel>.db` in
/// `${XDG_DATA_HOME:-~/.local/share}/opencode`, and its `storage` folder of older releases'
/// JSON files) and Kilo CLI (`$KILO_DB`, else `kilo.db` and
/// its channels' in `${XDG_DATA_HOME:-~/.local/share}/kilo`), Goose's `sessions.db`
/// ([`goose_database`]) and Amp's threads (`${XDG_DATA_HOME:-~/.local/share}/amp/threads`, on
/// macOS too).
pub fn default_roots() -> Vec<PathBuf> {
    let home = dirs::home_dir();
    let claude = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".claude")));
    let codex = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".codex")));
    let gemini = home.as_ref().map(|h| h.join(".gemini").join("tmp"));
    // pi reads an empty value as unset.
    let pi = match std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        Some(dir) if dir == "~" => home.clone(),
        Some(dir) => match dir.to_str().and_then(|d| d.strip_prefix("~/")) {
            Some(rest) => home.as_ref().map(|h| h.join(rest)),
            None => Some(PathBuf::from(dir)),
        },
        None => home.as_ref().map(|h| h.join(".pi").join("agent")),
    };
    let qwen = env_dir("QWEN_RUNTIME_DIR")
        .or_else(|| env_dir("QWEN_HOME"))
        .or_else(|| home.as_ref().map(|h| h.join(".qwen")));
    let kimi = env_dir("KIMI_SHARE_DIR").or_else(|| home.as_ref().map(|h| h.join(".kimi")));
    let copilot = env_dir("COPILOT_HOME").or_else(|| home.as_ref().map(|h| h.join(".copilot")));
    let amp = data_home(home.as_deref()).map(|d| d.join("amp").join("threads"));
    [
        claude.map(|c| c.join("projects")),
        codex.map(|c| c.join("sessions")),
        gemini,
        pi.map(|p| p.join("sessions")),
        qwen.map(|q| q.join("projects")),
        kimi.map(|k| k.join("sessions")),
        copilot.map(|c| c.join("session-state")),
        amp,
    ]
    .into_iter()
    .flatten()
    .filter(|p| p.is_dir())
    .chain(task_folders(home.as_deref()))
    .chain(databases(home.as_deref(), "OPENCODE_DB", "opencode"))
    .chain(databases(home.as_deref(), "KILO_DB", "kilo"))
    .chain(goose_database(home.as_deref()))
    .chain(aider_histories(home.as_deref()))
    .chain(cursor_stores(home.as_deref()))
    .chain(crush_databases(home.as_deref()))
    .collect()
}

/// Crush's project databases: each project its `projects.json` lists (`data_dir`, relative to
/// the project's `path`, holding `crush.db`), in Crush's global data folder
/// (`$CRUSH_GLOBAL_DATA`, else `${XDG_DATA_HOME:-~/.local/share}/crush`, `%LOCALAPPDATA%\crush`
/// on Windows). Crush keeps that list since December 2025; a project older than that, or
/// elsewhere, is ingested by naming it (its `.crush` folder is found in a walk).
fn crush_databases(home: Option<&Path>) -> Vec<PathBuf> {
    let global = env_dir("CRUSH_GLOBAL_DATA").or_else(|| {
        if cfg!(windows) {
            dirs::data_local_dir().map(|d| d.join("crush"))
        } else {
            data_home(home).map(|d| d.join("crush"))
        }
    });
    let Some(list) = global.and_then(|g| std::fs::read_to_string(g.join("projects.json")).ok())
    else {
        return Vec::new();
    };
    let Ok(list) = serde_json::from_str::<serde_json::Value>(&list) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = list
        .get("projects")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let path = PathBuf::from(p.get("path")?.as_str()?);
            let data = p
                .get("data_dir")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| path.join(".crush"), |d| path.join(d));
            Some(data.join("crush.db"))
        })
        .filter(|db| db.is_file())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Cursor's `state.vscdb` stores that exist: the user folder's `globalStorage/state.vscdb` and
/// each `workspaceStorage/<hash>/state.vscdb`, in Cursor's user data
/// (`${XDG_CONFIG_HOME:-~/.config}/Cursor/User` on Linux, `~/Library/Application
/// Support/Cursor/User` on macOS, `%APPDATA%\Cursor\User` on Windows, `$VSCODE_APPDATA/Cursor`
/// where set) and a remote server's (`~/.cursor-server/data/User`); and the agent's transcripts,
/// `~/.cursor/projects/<workspace>/agent-transcripts`.
fn cursor_stores(home: Option<&Path>) -> Vec<PathBuf> {
    let mut users: Vec<PathBuf> = env_dir("VSCODE_APPDATA")
        .or_else(dirs::config_dir)
        .map(|c| c.join("Cursor").join("User"))
        .into_iter()
        .collect();
    users.extend(home.map(|h| h.join(".cursor-server").join("data").join("User")));
    let mut found = Vec::new();
    for user in users {
        found.push(user.join("globalStorage").join("state.vscdb"));
        let mut workspaces: Vec<PathBuf> = std::fs::read_dir(user.join("workspaceStorage"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path().join("state.vscdb"))
            .collect();
        workspaces.sort();
        found.extend(workspaces);
    }
    // The agent's transcripts, a folder per workspace (after the stores: a conversation in
    // both is the store's, read first).
    if let Some(projects) = home.map(|h| h.join(".cursor").join("projects")) {
        let mut transcripts: Vec<PathBuf> = std::fs::read_dir(projects)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path().join("agent-transcripts"))
            .filter(|p| p.is_dir())
            .collect();
        transcripts.sort();
        found.extend(transcripts);
    }
    found.retain(|p| p.exists());
    found
}

/// Folders never searched for Aider's histories: dependencies, build output, system folders.
const SKIPPED: &[&str] = &[
    "node_modules",
    "target",
    "vendor",
    "venv",
    "__pycache__",
    "Library",
    "AppData",
    "Applications",
    "go",
    "snap",
];

/// The most files and folders the search for Aider's histories looks at.
const AIDER_SEARCH_ENTRIES: usize = 200_000;

/// Aider's chat histories: `$AIDER_CHAT_HISTORY_FILE`, and each `.aider.chat.history.md` in the
/// home folder and its folders four deep (a repository's root, where Aider writes it), hidden
/// folders and [`SKIPPED`] ones left out, at most [`AIDER_SEARCH_ENTRIES`] files and folders
/// looked at.
/// Aider keeps no index of its histories; a repository elsewhere is ingested by naming it.
fn aider_histories(home: Option<&Path>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = env_dir("AIDER_CHAT_HISTORY_FILE")
        .into_iter()
        .filter(|f| f.is_file())
        .collect();
    let Some(home) = home else {
        return found;
    };
    // Unsorted, so that a folder of a million files is read only as far as the limit.
    let walk = walkdir::WalkDir::new(home)
        .max_depth(5)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !e.file_type().is_dir()
                || e.depth() == 0
                || !(name.starts_with('.') || SKIPPED.contains(&name.as_ref()))
        });
    for entry in walk.filter_map(Result::ok).take(AIDER_SEARCH_ENTRIES) {
        if entry.file_type().is_file() && entry.file_name() == ".aider.chat.history.md" {
            found.push(entry.into_path());
        }
    }
    // Each once (`$AIDER_CHAT_HISTORY_FILE` may name one of them, relative to the folder of
    // the ingest), in a stable order.
    let mut seen = std::collections::BTreeMap::new();
    for path in found {
        seen.entry(path.canonicalize().unwrap_or_else(|_| path.clone()))
            .or_insert(path);
    }
    seen.into_values().collect()
}

/// The editors whose extensions' storage is searched for Cline-family task folders: VS Code
/// and the editors built on it, by the folder name each gives its user data.
const EDITORS: &[&str] = &[
    "Code",
    "Code - Insiders",
    "VSCodium",
    "VSCodium - Insiders",
    "Code - OSS",
    "Cursor",
    "Windsurf",
    "Positron",
    "Antigravity",
];

/// The extensions' folders (as the editor writes them, lower case).
const EXTENSIONS: &[&str] = &[
    "saoudrizwan.claude-dev",
    "rooveterinaryinc.roo-cline",
    "kilocode.kilo-code",
];

/// Cline's, Roo Code's and Kilo Code's `tasks` folders that exist: in each editor's user data
/// (`${XDG_CONFIG_HOME:-~/.config}/<editor>` on Linux, `~/Library/Application Support/<editor>`
/// on macOS, `%APPDATA%\<editor>` on Windows, `$VSCODE_APPDATA/<editor>` where set) and a remote
/// server's (`~/.vscode-server/data`, `~/.cursor-server/data`, ...), under
/// `User/globalStorage/<extension>/tasks`; and the CLIs' (`${CLINE_DATA_DIR:-${CLINE_DIR:-
/// ~/.cline}/data}/tasks`, Roo's `~/.vscode-mock/global-storage/tasks`, Kilo's
/// `~/.kilocode/cli/global/tasks`); and Cline 4's SDK sessions (`$CLINE_SESSION_DATA_DIR`, else
/// the `sessions` beside the CLI's `tasks`).
fn task_folders(home: Option<&Path>) -> Vec<PathBuf> {
    let mut data: Vec<PathBuf> = Vec::new();
    let config = env_dir("VSCODE_APPDATA").or_else(dirs::config_dir);
    if let Some(config) = config {
        data.extend(EDITORS.iter().map(|e| config.join(e)));
    }
    if let Some(home) = home {
        for server in [
            ".vscode-server",
            ".vscode-server-insiders",
            ".cursor-server",
            ".windsurf-server",
            ".vscode-remote",
        ] {
            data.push(home.join(server).join("data"));
        }
    }
    let mut found: Vec<PathBuf> = data
        .iter()
        .flat_map(|d| {
            EXTENSIONS
                .iter()
                .map(move |x| d.join("User").join("globalStorage").join(x).join("tasks"))
        })
        .collect();
    let cline = env_dir("CLINE_DATA_DIR").or_else(|| {
        env_dir("CLINE_DIR")
            .or_else(|| home.map(|h| h.join(".cline")))
            .map(|d| d.join("data"))
    });
    found.extend(cline.iter().map(|c| c.join("tasks")));
    // Cline 4's SDK sessions.
    found.extend(env_dir("CLINE_SESSION_DATA_DIR").or_else(|| cline.map(|c| c.join("sessions"))));
    if let Some(home) = home {
        found.push(home.join(".vscode-mock/global-storage/tasks"));
        found.push(home.join(".kilocode/cli/global/tasks"));
    }
    found.retain(|p| p.is_dir());
    found
}

/// Goose's database: `$GOOSE_PATH_ROOT/data/sessions/sessions.db`, else
/// `${XDG_DATA_HOME:-~/.local/share}/goose/sessions/sessions.db` (on macOS too).
fn goose_database(home: Option<&Path>) -> Option<PathBuf> {
    let db = match env_dir("GOOSE_PATH_ROOT") {
        Some(root) => root.join("data"),
        None => data_home(home)?.join("goose"),
    }
    .join("sessions")
    .join("sessions.db");
    db.is_file().then_some(db)
}

/// An agent's databases: the file the variable `var` names, else those in its data folder
/// `${XDG_DATA_HOME:-~/.local/share}/<folder>`; and the folder's `storage` of JSON files,
/// which releases before the database wrote.
fn databases(home: Option<&Path>, var: &str, folder: &str) -> Vec<PathBuf> {
    let storage = data_home(home)
        .map(|d| d.join(folder).join("storage"))
        .filter(|s| super::opencode_files::is_store(s));
    let mut found = database_files(home, var, folder);
    found.extend(storage);
    found
}

/// The database files of [`databases`].
fn database_files(home: Option<&Path>, var: &str, folder: &str) -> Vec<PathBuf> {
    let folder = data_home(home).map(|d| d.join(folder));
    if let Some(db) = env_dir(var) {
        // The agent reads a relative name inside its data folder.
        let db = match &folder {
            Some(folder) if db.is_relative() => folder.join(db),
            _ => db,
        };
        return vec![db].into_iter().filter(|p| p.is_file()).collect();
    }
    let Some(folder) = folder else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(&folder)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && super::sources::Kind::of(p).is_some())
        .collect();
    found.sort();
    found
}

/// The folder agents keep their data in: `$XDG_DATA_HOME`, else `~/.local/share` (on macOS too,
/// as the agents that use it do).
fn data_home(home: Option<&Path>) -> Option<PathBuf> {
    env_dir("XDG_DATA_HOME").or_else(|| home.map(|h| h.join(".local").join("share")))
}

/// The folder an environment variable names, when it is set and not empty.
fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// A candidate input file, or a path that could not be read.
#[derive(Debug)]
pub enum Candidate {
    /// A file with a transcript-like extension.
    File(PathBuf),
    /// An agent's session database (`sources::Kind` names which), before its sessions are
    /// listed.
    Database(PathBuf),
    /// OpenCode's (or Kilo CLI's) `storage` folder of JSON files, from its releases before the
    /// database, before its sessions are listed.
    Files(PathBuf),
    /// One session of an agent's database, read as a document of its own.
    Session(super::sources::SessionSource),
    /// A path that exists (or is a link) but cannot be read as a file, with the reason.
    Unreadable(PathBuf, String),
}

/// Whether a file name looks like a transcript or export (JSON, JSON Lines, or an Aider chat
/// history: `.aider.chat.history.md`, or `<name>.aider.chat.history.md`).
pub fn is_transcript_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "json" | "ndjson")
    ) || path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".aider.chat.history.md"))
}

/// Every candidate file under `paths`, sorted, each once. A missing path is an error for the
/// caller to report before any work starts.
pub fn walk(paths: &[PathBuf]) -> Vec<Candidate> {
    let mut files = Vec::new();
    for root in paths {
        let mut entries = walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = entries.next() {
            match entry {
                Ok(entry) => {
                    let path = entry.path().to_path_buf();
                    // OpenCode's JSON files are read a session at a time, not file by file.
                    if entry.file_type().is_dir() && super::opencode_files::is_store(&path) {
                        files.push(Candidate::Files(path));
                        entries.skip_current_dir();
                        continue;
                    }
                    // A Cline-family task folder is one session, its files one document.
                    if entry.file_type().is_dir() && super::cline::is_task_folder(&path) {
                        files.push(Candidate::Session(super::sources::SessionSource {
                            kind: super::cline::kind_of(&path)
                                .unwrap_or(super::sources::Kind::Cline),
                            session: entry.file_name().to_string_lossy().into_owned(),
                            size: super::cline::size(&path),
                            store: path,
                            files: true,
                        }));
                        entries.skip_current_dir();
                        continue;
                    }
                    // The folder a Cursor workspace's store belongs to.
                    if path.file_name().is_some_and(|n| n == "workspace.json")
                        && path.with_file_name("state.vscdb").is_file()
                    {
                        continue;
                    }
                    // A Cline SDK session folder: its messages files one document.
                    if entry.file_type().is_dir() && super::cline_sdk::is_session_folder(&path) {
                        files.push(Candidate::Session(super::sources::SessionSource {
                            kind: super::sources::Kind::ClineSdk,
                            session: entry.file_name().to_string_lossy().into_owned(),
                            size: super::cline_sdk::size(&path),
                            store: path,
                            files: true,
                        }));
                        entries.skip_current_dir();
                        continue;
                    }
                    // Roo's index of its task folders.
                    if path.file_name().is_some_and(|n| n == "_index.json")
                        && path
                            .parent()
                            .and_then(Path::file_name)
                            .is_some_and(|n| n == "tasks")
                    {
                        continue;
                    }
                    // An agent's database: named as the agent names it in a folder, or given
                    // itself (`$OPENCODE_DB`, a path on the command line) and an SQLite file.
                    let database = super::sources::Kind::of(&path).is_some()
                        || (entry.depth() == 0 && super::sources::is_sqlite(&path));
                    if database && entry.file_type().is_file() {
                        files.push(Candidate::Database(path));
                        continue;
                    }
                    // A file given itself may be an Aider history under any name
                    // (`--chat-history-file`, `$AIDER_CHAT_HISTORY_FILE`): its content decides.
                    let given_history = entry.depth() == 0
                        && entry.file_type().is_file()
                        && !is_transcript_name(&path)
                        && super::aider::is_history_file(&path);
                    if !is_transcript_name(&path) && !given_history {
                        continue;
                    }
                    let file_type = entry.file_type();
                    if file_type.is_file() {
                        files.push(Candidate::File(path));
                    } else if file_type.is_symlink() {
                        match std::fs::metadata(&path) {
                            Ok(m) if m.is_file() => files.push(Candidate::File(path)),
                            Ok(_) => {
                                files.push(Candidate::Unreadable(path, "not a regular file".into()))
                            }
                            Err(e) => files.push(Candidate::Unreadable(
                                path,
                                format!("dangling or unreadable link: {e}"),
                            )),
                        }
                    } else if file_type.is_dir() && entry.depth() > 0 {
                        files.push(Candidate::Unreadable(
                            path,
                            "a directory named like a transcript".into(),
                        ));
                    } else if file_type.is_dir() {
                        // The root itself named *.json: walk into it silently.
                    } else {
                        files.push(Candidate::Unreadable(path, "not a regular file".into()));
                    }
                }
                Err(e) => {
                    let path = e
                        .path()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| root.clone());
                    files.push(Candidate::Unreadable(path, e.to_string()));
                }
            }
        }
    }
    files
}
