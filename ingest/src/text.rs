//! Small pure helpers shared by the adapters and derivations: word counts, timestamps, repo
//! names, tool classification, exit codes. No I/O.

use serde_json::Value;

/// Words of a text: whitespace-separated runs.
pub fn word_count(text: &str) -> i64 {
    text.split_whitespace().count() as i64
}

/// Parses an RFC 3339 / ISO 8601 timestamp into epoch milliseconds UTC.
pub fn parse_time(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
        .or_else(|| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc().timestamp_millis())
        })
}

/// Reads a JSON time value: RFC 3339 text, or epoch seconds (float) as ChatGPT writes them.
pub fn json_time(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::String(s) => parse_time(s),
        Value::Number(n) => n.as_f64().map(|secs| {
            if secs > 1e11 {
                secs as i64 // already milliseconds
            } else {
                (secs * 1000.0).round() as i64
            }
        }),
        _ => None,
    }
}

/// The repository name: last path component of a git remote URL, else of the working directory.
pub fn repo_name(git_remote: Option<&str>, cwd: Option<&str>) -> Option<String> {
    let from_remote = git_remote.and_then(|url| {
        let trimmed = url.trim().trim_end_matches('/');
        let trimmed = trimmed.strip_suffix(".git").unwrap_or(trimmed);
        trimmed
            .rsplit(['/', ':'])
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    });
    from_remote.or_else(|| {
        cwd.and_then(|c| {
            c.trim_end_matches(['/', '\\'])
                .rsplit(['/', '\\'])
                .next()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        })
    })
}

/// The semantic type of a tool call, from its name and (for shells) its command.
pub fn semantic_type(tool: &str, command: Option<&str>) -> &'static str {
    let name = tool.rsplit("__").next().unwrap_or(tool);
    match name.to_ascii_lowercase().as_str() {
        "read" | "view" | "read_file" | "notebookread" => "file_read",
        "write" | "write_file" | "create_file" => "file_write",
        "edit" | "multiedit" | "notebookedit" | "apply_patch" | "str_replace_editor"
        | "replace" => "file_edit",
        "bash" | "shell" | "exec_command" | "local_shell" | "run_shell_command"
        | "container.exec" => {
            if command.is_some_and(is_git_command) {
                "git"
            } else {
                "shell"
            }
        }
        "grep" | "glob" | "ls" | "search" | "find" | "list_directory" | "search_file_content" => {
            "search"
        }
        "webfetch" | "websearch" | "web_search_call" | "web_search" | "web_fetch"
        | "google_web_search" => "web",
        "task" | "agent" => "subagent",
        _ => "other",
    }
}

fn is_git_command(command: &str) -> bool {
    let c = command.trim_start();
    c == "git" || c.starts_with("git ")
}

/// An exit code stated in a tool's output text (`Exit code 1`, `Process exited with code 2`,
/// `exit_code: 0`).
pub fn exit_code_in(text: &str) -> Option<i64> {
    const MARKERS: [&str; 3] = ["Exit code ", "Process exited with code ", "exit code: "];
    let head: String = text.chars().take(400).collect();
    MARKERS.iter().find_map(|marker| {
        let at = head.find(marker)?;
        let digits: String = head[at + marker.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok()
    })
}

/// The command string of a shell-like tool input (`command` as text or argv; `cmd`).
pub fn command_of(input: &Value) -> Option<String> {
    let raw = input.get("command").or_else(|| input.get("cmd"))?;
    match raw {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            // `bash -lc "<script>"` is how Codex wraps every command: keep the script.
            match words.as_slice() {
                [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
                    Some((*script).to_string())
                }
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

/// The file path a tool input names (`file_path`, `path`, `notebook_path`), or the first file of
/// an `apply_patch` body.
pub fn path_of(input: &Value) -> Option<String> {
    for key in [
        "file_path",
        "path",
        "notebook_path",
        "filePath",
        "absolute_path",
    ] {
        if let Some(p) = input.get(key).and_then(Value::as_str) {
            return Some(p.to_string());
        }
    }
    let patch = input
        .get("input")
        .or_else(|| input.get("patch"))
        .and_then(Value::as_str)?;
    patch_path(patch)
}

/// The first file an `apply_patch` body touches.
pub fn patch_path(patch: &str) -> Option<String> {
    patch.lines().find_map(|line| {
        ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
            .iter()
            .find_map(|m| line.strip_prefix(m))
            .map(|p| p.trim().to_string())
    })
}

pub use quarry_archive::schema::fold_for_index;

/// Text of a JSON value that may be a string, an array of strings / `{text}` parts, or absent.
pub fn flatten_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| match item {
                Value::String(s) => Some(s.clone()),
                Value::Object(_) => item
                    .get("text")
                    .or_else(|| item.get("content"))
                    .map(|v| flatten_text(Some(v))),
                _ => None,
            })
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Object(_)) => value
            .and_then(|v| v.get("text"))
            .map(|v| flatten_text(Some(v)))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// A string field of a JSON object.
pub fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_any_whitespace() {
        assert_eq!(word_count("  a b\n\tc  "), 3);
        assert_eq!(word_count(""), 0);
    }

    #[test]
    fn times_parse_from_text_and_epoch_seconds() {
        assert_eq!(parse_time("1970-01-01T00:00:01.500Z"), Some(1500));
        assert_eq!(json_time(Some(&serde_json::json!(1.25))), Some(1250));
        assert_eq!(parse_time("garbage"), None);
    }

    #[test]
    fn repo_prefers_remote_then_cwd() {
        assert_eq!(
            repo_name(Some("git@github.com:acme/widgets.git"), Some("/x/y")).as_deref(),
            Some("widgets")
        );
        assert_eq!(
            repo_name(None, Some("/home/me/proj/")).as_deref(),
            Some("proj")
        );
        assert_eq!(repo_name(None, None), None);
    }

    #[test]
    fn tools_classify_as_design_says() {
        assert_eq!(semantic_type("Read", None), "file_read");
        assert_eq!(semantic_type("MultiEdit", None), "file_edit");
        assert_eq!(semantic_type("Bash", Some("git status")), "git");
        assert_eq!(semantic_type("exec_command", Some("ls")), "shell");
        assert_eq!(semantic_type("Glob", None), "search");
        assert_eq!(semantic_type("WebFetch", None), "web");
        assert_eq!(semantic_type("Task", None), "subagent");
        assert_eq!(semantic_type("Agent", None), "subagent");
        assert_eq!(semantic_type("mcp__github__create_issue", None), "other");
    }

    #[test]
    fn exit_codes_and_commands() {
        assert_eq!(exit_code_in("Exit code 127\nnot found"), Some(127));
        assert_eq!(exit_code_in("Process exited with code 0"), Some(0));
        assert_eq!(exit_code_in("fine"), None);
        let argv = serde_json::json!({"command": ["bash", "-lc", "rg foo"]});
        assert_eq!(command_of(&argv).as_deref(), Some("rg foo"));
        let patch = serde_json::json!({"input": "*** Begin Patch\n*** Update File: src/a.rs\n"});
        assert_eq!(path_of(&patch).as_deref(), Some("src/a.rs"));
    }

    #[test]
    fn index_text_folds_l_stroke() {
        assert_eq!(fold_for_index("Zażółć Łódź"), "Zażólć Lódź");
        assert!(matches!(
            fold_for_index("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
