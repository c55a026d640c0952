//! A scope's session predicate: quarry's compact language (`repo:acme-web OR cwd:/home/alice`),
//! matched exactly whatever a field's everyday matching is. A scope grants access, so nothing
//! may match more than it says: `repo:acme-web` does not grant `acme-web-old`, and a `cwd`
//! value is a path prefix on component boundaries (`/home/alice` grants `/home/alice` and
//! `/home/alice/src`, never `/home/alice2`).
//!
//! Allowed: `field:value` and `field:(a|b)` on a text column of `sessions`, joined by `AND`
//! (or juxtaposed), `OR`, `NOT` / `-` and parentheses. Anything else (full-text terms,
//! comparisons, `exists`, pipeline stages) is refused when the scope is made.

use quarry_grammar::ast::{Expr, ExprKind, FieldTest, SourceForm};
use quarry_schema::ColumnType;

/// The fields whose value is a path, matched as a prefix on path-component boundaries.
const PATH_FIELDS: &[&str] = &["cwd"];

/// A checked session predicate (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPredicate {
    text: String,
    node: Node,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Any(Vec<Node>),
    All(Vec<Node>),
    Not(Box<Node>),
    /// The column equals one of the values (a path field: lies under one of them).
    Field {
        column: &'static str,
        values: Vec<String>,
    },
}

impl SessionPredicate {
    /// Parses and checks `text`; the error says what is not allowed and where.
    pub fn parse(text: &str) -> Result<SessionPredicate, String> {
        let query = quarry_grammar::parse(text).map_err(|d| {
            let first = d
                .diagnostics
                .first()
                .map(|d| d.message.clone())
                .unwrap_or_default();
            format!("the sessions predicate `{text}` does not parse: {first}")
        })?;
        if query.source.form != SourceForm::Compact
            || !query.stages.is_empty()
            || !query.projections.is_empty()
        {
            return Err(format!(
                "the sessions predicate `{text}` must be field clauses only (like `repo:acme-web OR cwd:/home/alice`), without a unit, `where` or `|` stages"
            ));
        }
        let expr = query
            .source
            .predicate
            .as_ref()
            .ok_or_else(|| "the sessions predicate is empty".to_string())?;
        Ok(SessionPredicate {
            text: text.to_string(),
            node: node(expr, text)?,
        })
    }

    /// The predicate as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The sessions columns it reads.
    pub fn columns(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        collect_columns(&self.node, &mut out);
        out
    }

    /// Whether a session whose column values `fields` gives matches. As in the language, a
    /// clause on a NULL field is unknown, and so is its negation: `-git_branch:main` does not
    /// grant a session without a branch.
    pub fn matches(&self, fields: &dyn Fn(&str) -> Option<String>) -> bool {
        eval(&self.node, fields) == Some(true)
    }
}

fn node(expr: &Expr, text: &str) -> Result<Node, String> {
    let refuse = |what: &str| {
        let at = text.get(expr.span.start..expr.span.end).unwrap_or(text);
        Err(format!(
            "{what} (`{at}`) is not allowed in a scope's sessions predicate: use field:value clauses on sessions' text fields, with AND, OR, NOT and parentheses"
        ))
    };
    Ok(match &expr.kind {
        ExprKind::Or { operands } => Node::Any(
            operands
                .iter()
                .map(|e| node(e, text))
                .collect::<Result<_, _>>()?,
        ),
        ExprKind::And { operands, .. } => Node::All(
            operands
                .iter()
                .map(|e| node(e, text))
                .collect::<Result<_, _>>()?,
        ),
        ExprKind::Not { operand, .. } => Node::Not(Box::new(node(operand, text)?)),
        ExprKind::Group { inner } => node(inner, text)?,
        ExprKind::Field(clause) => {
            let column = session_text_column(&clause.field.name).ok_or_else(|| {
                format!(
                    "a scope cannot select on `{}`; it selects on the text fields of sessions shown as stored: {}",
                    clause.field.display(),
                    scope_fields().join(", ")
                )
            })?;
            let values = match &clause.test {
                FieldTest::Match { value } => vec![value.text.clone()],
                FieldTest::AnyOf { values } => values.iter().map(|v| v.text.clone()).collect(),
                FieldTest::Compare { .. } | FieldTest::Between { .. } => {
                    return refuse("a comparison");
                }
            };
            if values.iter().any(|v| v.is_empty()) {
                return refuse("an empty value");
            }
            Node::Field { column, values }
        }
        ExprKind::Text { .. } | ExprKind::Fts { .. } => return refuse("a full-text (fts) term"),
        ExprKind::Exists { .. } => return refuse("`exists`"),
        ExprKind::Seq { .. } => return refuse("`seq`"),
    })
}

/// The text columns of `sessions` a scope may select on (everything but masked text).
fn scope_fields() -> Vec<&'static str> {
    quarry_schema::table("sessions")
        .map(|t| {
            t.columns
                .iter()
                .filter(|c| {
                    c.ty == ColumnType::Text && c.visibility != quarry_schema::Visibility::Masked
                })
                .map(|c| c.name)
                .collect()
        })
        .unwrap_or_default()
}

fn session_text_column(name: &str) -> Option<&'static str> {
    scope_fields().into_iter().find(|c| *c == name)
}

fn collect_columns(node: &Node, out: &mut Vec<&'static str>) {
    match node {
        Node::Any(nodes) | Node::All(nodes) => nodes.iter().for_each(|n| collect_columns(n, out)),
        Node::Not(inner) => collect_columns(inner, out),
        Node::Field { column, .. } => {
            if !out.contains(column) {
                out.push(column);
            }
        }
    }
}

/// SQL's three-valued logic: `None` is unknown (a clause on a NULL field).
fn eval(node: &Node, fields: &dyn Fn(&str) -> Option<String>) -> Option<bool> {
    match node {
        Node::Any(nodes) => {
            let values: Vec<Option<bool>> = nodes.iter().map(|n| eval(n, fields)).collect();
            if values.contains(&Some(true)) {
                Some(true)
            } else if values.contains(&None) {
                None
            } else {
                Some(false)
            }
        }
        Node::All(nodes) => {
            let values: Vec<Option<bool>> = nodes.iter().map(|n| eval(n, fields)).collect();
            if values.contains(&Some(false)) {
                Some(false)
            } else if values.contains(&None) {
                None
            } else {
                Some(true)
            }
        }
        Node::Not(inner) => eval(inner, fields).map(|v| !v),
        Node::Field { column, values } => {
            let stored = fields(column)?;
            Some(if PATH_FIELDS.contains(column) {
                values.iter().any(|v| under_path(&stored, v))
            } else {
                values.contains(&stored)
            })
        }
    }
}

/// Whether `path` is `prefix` or lies under it, on path-component boundaries, after `.` and
/// `..` are resolved in both (as text: `/home/alice/../bob` is `/home/bob`).
fn under_path(path: &str, prefix: &str) -> bool {
    let (Some(path), Some(prefix)) = (components(path), components(prefix)) else {
        return false;
    };
    path.len() >= prefix.len() && path[..prefix.len()] == prefix[..]
}

/// The components of an absolute path with `.`, `..` and empty parts resolved; `None` for a
/// relative path or one that climbs above the root.
fn components(path: &str) -> Option<Vec<&str>> {
    if !path.starts_with('/') {
        return None;
    }
    let mut out = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            p => out.push(p),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn session<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |f: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == f)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn repo_matches_exactly() {
        let p = SessionPredicate::parse("repo:acme-web").unwrap();
        assert!(p.matches(&session(&[("repo", "acme-web")])));
        assert!(!p.matches(&session(&[("repo", "acme-web-old")])));
        assert!(!p.matches(&session(&[("repo", "ACME-WEB")])));
        assert!(!p.matches(&session(&[])));
    }

    #[test]
    fn cwd_matches_on_component_boundaries() {
        let p = SessionPredicate::parse("cwd:/home/alice").unwrap();
        for yes in ["/home/alice", "/home/alice/", "/home/alice/src/x"] {
            assert!(p.matches(&session(&[("cwd", yes)])), "{yes}");
        }
        for no in [
            "/home/alice2",
            "/home/alicex/y",
            "/home",
            "home/alice",
            "/home/alice/../bob/secret",
            "/../home/alice",
        ] {
            assert!(!p.matches(&session(&[("cwd", no)])), "{no}");
        }
        let slash = SessionPredicate::parse("cwd:/home/alice/").unwrap();
        assert!(!slash.matches(&session(&[("cwd", "/home/alice2")])));
    }

    #[test]
    fn boolean_structure_holds() {
        let p = SessionPredicate::parse("repo:acme-web OR cwd:/home/alice").unwrap();
        assert!(p.matches(&session(&[("repo", "acme-web")])));
        assert!(p.matches(&session(&[("cwd", "/home/alice/w")])));
        assert!(!p.matches(&session(&[("repo", "x"), ("cwd", "/tmp")])));
        let p = SessionPredicate::parse("origin:codex-session -repo:(a|b)").unwrap();
        assert!(p.matches(&session(&[("origin", "codex-session"), ("repo", "c")])));
        assert!(!p.matches(&session(&[("origin", "codex-session"), ("repo", "b")])));
        assert_eq!(p.columns(), vec!["origin", "repo"]);
        // A NULL field is unknown, and so is its negation (as in the language).
        let p = SessionPredicate::parse("-git_branch:main").unwrap();
        assert!(!p.matches(&session(&[])));
        assert!(p.matches(&session(&[("git_branch", "dev")])));
        let p = SessionPredicate::parse("git_branch:main OR repo:x").unwrap();
        assert!(p.matches(&session(&[("repo", "x")])));
        assert!(!p.matches(&session(&[("cwd", "/home/alice/./w")])));
        let p = SessionPredicate::parse("cwd:/home/alice").unwrap();
        assert!(p.matches(&session(&[("cwd", "/home/alice/./w/../src")])));
    }

    #[test]
    fn what_a_scope_cannot_say_is_refused() {
        for (text, needle) in [
            ("hello", "full-text"),
            ("repo:x | count", "field clauses only"),
            ("messages where role:user", "field clauses only"),
            ("duration_ms:>5", "cannot select on"),
            ("title:secret", "cannot select on"),
            ("nope:x", "cannot select on"),
        ] {
            let err = SessionPredicate::parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
