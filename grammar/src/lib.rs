//! quarry's query language: lexer, parser, typed AST, unit/field registry and diagnostics.
//!
//! The stages, each its own function over its own type:
//!
//! | stage | function | input → output |
//! |---|---|---|
//! | lex | [`lexer::lex`] | `&str` → tokens |
//! | parse | [`parse`] | `&str` → [`Query`] (syntax tree, spans everywhere) |
//! | resolve | [`resolve`] | [`Query`] → [`Resolved`] (fields bound to the registry, typed values, ordered pipeline stages) |
//! | explain | [`explain::explain`] | `&str` → [`explain::Explanation`] (AST + stages, text or JSON) |
//!
//! Errors are [`Diagnostics`]: data with a stable code, a span and column, what was expected, the
//! supported fields and a correction that parses. [`render`] draws them with a caret under the
//! query. The crate depends on no engine: it never sees storage.
//!
//! ```
//! let resolved = quarry_grammar::check("messages where role:assistant | group by role | count")
//!     .map_err(|d| d.to_string())?;
//! assert_eq!(resolved.unit_source, "messages");
//! # Ok::<(), String>(())
//! ```

#![warn(missing_docs)]

pub mod ast;
pub mod complete;
pub mod dates;
pub mod diagnostic;
pub mod docs;
pub mod explain;
pub mod ir;
pub mod lexer;
pub mod parser;
pub mod ranked;
pub mod registry;
pub mod resolve;
pub mod suggest;

pub use ast::{Query, Span};
pub use diagnostic::{Diagnostic, DiagnosticCode, Diagnostics, render};
pub use parser::{MAX_NESTING, MAX_QUERY_BYTES};
pub use resolve::Resolved;

/// Parses a query into its syntax tree. Every correction in an error parses.
pub fn parse(query: &str) -> Result<Query, Diagnostics> {
    parser::parse(query).map_err(|d| finalize(query, d))
}

/// Resolves a parsed query against the registry. Every correction in an error parses.
pub fn resolve(query_text: &str, query: &Query) -> Result<Resolved, Diagnostics> {
    resolve::resolve(query_text, query).map_err(|d| finalize(query_text, d))
}

/// Parses and resolves a query.
pub fn check(query: &str) -> Result<Resolved, Diagnostics> {
    let parsed = parse(query)?;
    resolve(query, &parsed)
}

/// How many times a correction is re-checked and refined.
const REFINE_STEPS: usize = 4;

/// Makes every correction parse: a correction that does not parse is followed to its own
/// correction (or dropped); one that parses but does not resolve is refined the same way when the
/// refinement also parses.
fn finalize(query: &str, mut diags: Diagnostics) -> Diagnostics {
    for d in &mut diags.diagnostics {
        d.correction = d.correction.take().and_then(|c| refine(query, c));
    }
    diags
}

fn refine(original: &str, mut candidate: String) -> Option<String> {
    let mut best: Option<String> = None;
    for _ in 0..REFINE_STEPS {
        if candidate == original || candidate.trim().is_empty() {
            return best;
        }
        match parser::parse_raw(&candidate) {
            Err(d) => match d.correction {
                Some(next) if best.is_none() => candidate = next,
                _ => return best,
            },
            Ok(q) => {
                best = Some(candidate.clone());
                match resolve::resolve(&candidate, &q) {
                    Ok(_) => return best,
                    Err(ds) => match ds.first().and_then(|d| d.correction.clone()) {
                        Some(next) => candidate = next,
                        None => return best,
                    },
                }
            }
        }
    }
    best
}
