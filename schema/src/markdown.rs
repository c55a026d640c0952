//! The column tables of `docs/tables.md`, generated from the declaration.
//!
//! The document keeps its prose by hand; each table's column table sits between two markers,
//! `<!-- generated: table NAME -->` and `<!-- end generated -->`, and [`regenerate_markdown`]
//! rewrites what is between them.

use crate::{TABLES, Table, Visibility, table};

const START: &str = "<!-- generated: table ";
const START_END: &str = " -->";
const END: &str = "<!-- end generated -->";

/// The Markdown column table of `table`: one row per column with its type (and `, nullable`
/// when it may be NULL) and its meaning (admin-only, masked and identity columns say so). Ends with a newline.
pub fn markdown_columns(table: &Table) -> String {
    let mut out = String::from("| column | type | meaning |\n|---|---|---|\n");
    let computed = table
        .computed
        .iter()
        .map(|c| (c, " (computed at query time)"));
    for (c, note) in table.columns.iter().map(|c| (c, "")).chain(computed) {
        let nullable = if c.nullable { ", nullable" } else { "" };
        let admin = match c.visibility {
            Visibility::AdminOnly if table.visibility == Visibility::Public => {
                " (admin scope only)"
            }
            Visibility::Masked => " (credentials masked outside the admin scope)",
            Visibility::Identity => " (outside the admin scope: only the scope's own owner)",
            _ => "",
        };
        out.push_str(&format!(
            "| {} | {}{} | {}{}{} |\n",
            c.name,
            c.ty.name(),
            nullable,
            c.doc.replace('|', "\\|"),
            admin,
            note
        ));
    }
    out
}

/// `doc` with every generated section replaced by [`markdown_columns`] of its table. A section
/// is a line `<!-- generated: table NAME -->`, then anything, then a line
/// `<!-- end generated -->` (markers stand on lines of their own; mentions inside prose are
/// text). Fails when a marker names no declared table, a section is not closed, or a declared
/// table has no section or more than one.
pub fn regenerate_markdown(doc: &str) -> Result<String, String> {
    let mut out = String::with_capacity(doc.len());
    let mut seen: Vec<&str> = Vec::new();
    // The section being replaced: its table's name while inside one.
    let mut open: Option<&str> = None;
    for line in doc.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let start = bare
            .strip_prefix(START)
            .and_then(|m| m.strip_suffix(START_END))
            .map(str::trim);
        match (open, start) {
            (Some(name), Some(_)) => {
                return Err(format!(
                    "the section of {name} has no `{END}` before the next one"
                ));
            }
            (None, Some(name)) => {
                let declared =
                    table(name).ok_or_else(|| format!("`{bare}` names no declared table"))?;
                if seen.contains(&declared.name) {
                    return Err(format!("table {name} has two generated sections"));
                }
                seen.push(declared.name);
                out.push_str(line);
                out.push_str(&markdown_columns(declared));
                open = Some(declared.name);
            }
            (Some(_), None) if bare == END => {
                out.push_str(line);
                open = None;
            }
            (Some(_), None) => {}
            (None, None) => out.push_str(line),
        }
    }
    if let Some(name) = open {
        return Err(format!("the section of {name} has no `{END}`"));
    }
    let missing: Vec<&str> = TABLES
        .iter()
        .map(|t| t.name)
        .filter(|n| !seen.contains(n))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no generated section (`{START}NAME{START_END}`) for: {}",
            missing.join(", ")
        ));
    }
    Ok(out)
}

/// Checks that the Markdown file at `path` equals [`regenerate_markdown`] of itself; with
/// `bless`, rewrites the file instead (when it differs). The error shows the differing lines.
pub fn check_markdown_file(path: &std::path::Path, bless: bool) -> Result<(), String> {
    let doc = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let generated = regenerate_markdown(&doc).map_err(|e| format!("{}: {e}", path.display()))?;
    if generated == doc {
        return Ok(());
    }
    if bless {
        return std::fs::write(path, generated).map_err(|e| format!("{}: {e}", path.display()));
    }
    Err(format!(
        "{} differs from the declaration of the tables (rerun with QUARRY_BLESS=1 to rewrite it):\n{}",
        path.display(),
        line_diff(&doc, &generated)
    ))
}

/// The lines between the common head and tail of `old` and `new`: `-` old, `+` new.
fn line_diff(old: &str, new: &str) -> String {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = format!("@@ line {} @@\n", head + 1);
    for line in &old[head..old.len() - tail] {
        out.push_str(&format!("-{line}\n"));
    }
    for line in &new[head..new.len() - tail] {
        out.push_str(&format!("+{line}\n"));
    }
    out
}
