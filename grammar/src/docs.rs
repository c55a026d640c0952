//! Documentation rendered from the registry: the field table of `docs/language.md` and the
//! registry as JSON. This module owns no registry data.

use crate::registry::UNITS;

/// Renders the field table of `docs/language.md` (markdown) from the registry.
pub fn render_field_table() -> String {
    let mut out = String::new();
    for unit in UNITS {
        out.push_str(&format!(
            "### {} (`{}`, table `{}`)\n\n{}.\n\n",
            unit.name, unit.singular, unit.table, unit.doc
        ));
        out.push_str("| field | kind | source | group | metric | meaning | example |\n");
        out.push_str("|---|---|---|---|---|---|---|\n");
        for f in unit.fields {
            let kind = if f.values.is_empty() {
                f.kind.as_str().to_string()
            } else {
                format!("{} ({})", f.kind.as_str(), f.values.join(", "))
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} | `{}` |\n",
                f.name,
                kind,
                f.source.describe(),
                if f.groupable { "yes" } else { "" },
                if f.metric { "yes" } else { "" },
                f.doc.replace('|', "\\|"),
                f.example.replace('|', "\\|"),
            ));
        }
        if !unit.bracket_fields.is_empty() {
            out.push_str(&format!(
                "\nBracket fields (`with {}[...]`): {}.\n",
                unit.name,
                unit.bracket_fields
                    .iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out.push('\n');
    }
    out
}

/// Units and fields as JSON (for `quarry complete` and tools).
pub fn registry_json() -> serde_json::Value {
    serde_json::to_value(UNITS).unwrap_or(serde_json::Value::Null)
}
