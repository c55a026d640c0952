//! `quarry complete --examples|--errors [--format json]`: parser-valid examples per unit and form,
//! and typical mistakes with their diagnostic and correction (the spec's
//! `query_completions(kind=example|error)`). Thin glue over `quarry_grammar::complete`.

use std::io::Write;

use quarry::Format;

use crate::flags::Cli;
use crate::{Failure, exit_with};

/// `quarry complete`.
pub fn run_complete(cli: &Cli, examples: bool, errors: bool) -> Result<(), Failure> {
    exit_with(run(examples, errors, cli.format() == Format::Json))
}

/// Runs `complete`. With neither flag, lists the examples. JSON is
/// `{"examples":[{unit, form, query}]}` and/or `{"errors":[{query, mistake, diagnostic,
/// correction}]}` (one object holding the keys asked for). Returns the exit code (always 0).
pub fn run(examples: bool, errors: bool, json: bool) -> i32 {
    let examples = examples || !errors;
    let out = if json {
        let mut obj = serde_json::Map::new();
        if examples {
            obj.insert(
                "examples".into(),
                serde_json::to_value(quarry_grammar::complete::examples()).unwrap_or_default(),
            );
        }
        if errors {
            obj.insert(
                "errors".into(),
                serde_json::to_value(quarry_grammar::complete::errors()).unwrap_or_default(),
            );
        }
        let text =
            serde_json::to_string_pretty(&serde_json::Value::Object(obj)).unwrap_or_default();
        format!("{text}\n")
    } else {
        let mut text = String::new();
        if examples {
            text.push_str(&quarry_grammar::complete::examples_text());
        }
        if errors {
            if examples {
                text.push('\n');
            }
            text.push_str(&quarry_grammar::complete::errors_text());
        }
        text
    };
    // A closed pipe (`quarry complete --examples | head`) is not an error.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    0
}
