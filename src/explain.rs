//! `quarry explain QUERY [--format json]`: parses and resolves the query against the registry
//! (no archive is touched) and prints the typed AST with its ordered `pipeline_stages`, or the
//! diagnostics. Thin glue: the logic lives in `quarry_grammar::explain`.

use std::io::Write;

use quarry::Format;

use crate::flags::Cli;
use crate::{Failure, exit_with, stderr_color};

/// `quarry explain QUERY`.
pub fn run_explain(query: &str, cli: &Cli) -> Result<(), Failure> {
    exit_with(run(query, cli.format() == Format::Json, stderr_color()))
}

/// Runs `explain`. Prints the explanation to stdout (JSON when `json`), or the diagnostics: to
/// stderr with a caret under the query (ANSI colours when `color`), or as the error body
/// (`{code, class, status, message, diagnostics, rendered}`, as HTTP and MCP send it) on stdout
/// when `json`. Returns the exit code: 0 on success, 2 on a query error.
pub fn run(query: &str, json: bool, color: bool) -> i32 {
    match quarry_grammar::explain::explain(query) {
        Ok(explanation) => {
            let text = if json {
                format!("{}\n", explanation.to_json())
            } else {
                explanation.to_text()
            };
            // A closed pipe (`quarry explain ... | head`) is not an error.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            0
        }
        Err(diagnostics) => {
            if json {
                let body = quarry::Error::Query(diagnostics).body(Some(query));
                let _ = writeln!(std::io::stdout().lock(), "{}", body.to_json());
            } else {
                let rendered = quarry_grammar::render(query, &diagnostics, color);
                let _ = std::io::stderr().lock().write_all(rendered.as_bytes());
            }
            2
        }
    }
}
