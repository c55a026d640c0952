//! The parser: tokens → [`Query`], a typed syntax tree with spans.
//!
//! Recursive descent over the lexer's tokens. It checks the shape of the query (forms, stages,
//! operators, nesting) and stops at the first token that cannot continue a valid query, with a
//! diagnostic and a correction. Which fields exist is `resolve`'s concern; this module only asks
//! the registry which words are unit names (a unit prefix is never read as free text).

#![allow(clippy::result_large_err)] // one Diagnostic per failed parse; boxing buys nothing here

mod clause;
mod predicate;
mod projection;
mod stage;

use crate::ast::*;
use crate::diagnostic::{Diagnostic, DiagnosticCode as C, Diagnostics};
use crate::lexer::{Token, TokenKind, lex};
use crate::registry::{self, unit_by_name};
use crate::suggest::{example_clause, field_example_value};

/// The longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// The deepest nesting of parentheses, `NOT` and `exists` accepted.
pub const MAX_NESTING: usize = 32;

/// The words that start a pipeline stage.
pub const STAGE_WORDS: &[&str] = &["sort", "group", "count", "agg", "select", "limit", "offset"];

type PResult<T> = Result<T, Diagnostic>;

/// Parses a query into its syntax tree, or returns the first error with its column.
pub fn parse(query: &str) -> Result<Query, Diagnostics> {
    parse_raw(query).map_err(|d| Diagnostics::one(d.locate(query)))
}

/// Parses without locating the column (used to check corrections).
pub(crate) fn parse_raw(query: &str) -> PResult<Query> {
    if query.len() > MAX_QUERY_BYTES {
        let cut = floor_char_boundary(query, MAX_QUERY_BYTES);
        return Err(Diagnostic::new(
            C::QueryTooLong,
            Span::new(cut, query.len()),
            format!(
                "the query is {} bytes long; the limit is {MAX_QUERY_BYTES}",
                query.len()
            ),
        )
        .hint("split the question into smaller queries"));
    }
    let tokens = lex(query)?;
    let mut p = Parser {
        q: query,
        toks: tokens,
        pos: 0,
        depth: 0,
    };
    p.query()
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Whether `s` is a field identifier: `name` or `session.name` (letters, digits, `_`, dots).
pub(crate) fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let mut chars = part.chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

struct Parser<'q> {
    q: &'q str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

const EOF_TOKEN: Token = Token {
    kind: TokenKind::Eof,
    span: Span { start: 0, end: 0 },
};

impl<'q> Parser<'q> {
    // ---- token access -------------------------------------------------------------------

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Token {
        self.toks
            .get(self.pos + n)
            .or_else(|| self.toks.last())
            .unwrap_or(&EOF_TOKEN)
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn peek_word(&self) -> Option<&str> {
        match &self.peek().kind {
            TokenKind::Word(w) => Some(w.as_str()),
            _ => None,
        }
    }

    fn word_at(&self, n: usize) -> Option<&str> {
        match &self.peek_at(n).kind {
            TokenKind::Word(w) => Some(w.as_str()),
            _ => None,
        }
    }

    fn at_word(&self, w: &str) -> bool {
        self.peek_word() == Some(w)
    }

    fn at(&self, kind: &TokenKind) -> bool {
        &self.peek().kind == kind
    }

    fn prev_end(&self) -> usize {
        match self.pos.checked_sub(1).and_then(|i| self.toks.get(i)) {
            Some(t) => t.span.end,
            None => 0,
        }
    }

    fn adjacent(&self, n: usize) -> bool {
        // token n is directly attached to token n-1 (no whitespace between)
        let cur = self.peek_at(n).span.start;
        let prev = if n == 0 {
            self.prev_end()
        } else {
            self.peek_at(n - 1).span.end
        };
        cur == prev
    }

    // ---- errors ---------------------------------------------------------------------------

    fn unexpected(&self, message: &str, expected: &[&str]) -> Diagnostic {
        let t = self.peek();
        let code = if t.kind == TokenKind::Eof {
            C::UnexpectedEnd
        } else {
            C::UnexpectedToken
        };
        Diagnostic::new(code, t.span, message)
            .expected(expected.iter().copied())
            .found(t.describe())
    }

    /// The query with `text` inserted before the current token.
    fn insert_here(&self, d: Diagnostic, text: &str) -> Diagnostic {
        let at = self.peek().span.start;
        let fixed = if self.peek().kind == TokenKind::Eof {
            format!("{}{}", self.q.trim_end(), text.trim_end())
        } else {
            match crate::diagnostic::splice(self.q, Span::new(at, at), text) {
                Some(f) => f,
                None => return d,
            }
        };
        d.correction(fixed)
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Diagnostic::new(
                C::NestingTooDeep,
                self.peek().span,
                format!("the predicate nests deeper than {MAX_NESTING} levels"),
            )
            .hint("flatten the parentheses or split the query"));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---- query ----------------------------------------------------------------------------

    fn query(&mut self) -> PResult<Query> {
        if self.at(&TokenKind::Eof) {
            return Err(
                Diagnostic::new(C::EmptyQuery, Span::new(0, 0), "the query is empty")
                    .expected([
                        "a unit (`messages where ...`)",
                        "a field clause (`repo:acme`)",
                    ])
                    .correction("sessions"),
            );
        }
        let source = self.source()?;
        let mut stages = Vec::new();
        while self.at(&TokenKind::Pipe) {
            self.bump();
            stages.push(self.stage()?);
        }
        let mut projections = Vec::new();
        if self.at_word("with") {
            let with = self.bump();
            projections = self.projections(with.span)?;
        }
        if !self.at(&TokenKind::Eof) {
            return Err(self.trailing());
        }
        Ok(Query {
            source,
            stages,
            projections,
            span: Span::new(0, self.q.len()),
        })
    }

    /// The error for a token left over after a complete query.
    fn trailing(&self) -> Diagnostic {
        let t = self.peek();
        if t.kind == TokenKind::RParen {
            let d = Diagnostic::new(C::UnmatchedParen, t.span, "this `)` closes nothing")
                .expected(["`|`", "end of query"])
                .found("`)`");
            return d.replace(self.q, t.span, "");
        }
        let d = self.unexpected(
            "this cannot continue the query",
            &["`|`", "`with`", "end of query"],
        );
        match crate::diagnostic::splice(self.q, Span::new(t.span.start, self.q.len()), "") {
            Some(fixed) if !fixed.trim().is_empty() => d.correction(fixed.trim_end().to_string()),
            _ => d,
        }
    }

    fn is_unit_head(&self) -> bool {
        match self.peek_word() {
            Some(w) if unit_by_name(w).is_some() => {
                let next = &self.peek_at(1).kind;
                let cmp = matches!(next, TokenKind::Cmp(_));
                let between = self.word_at(1) == Some("between");
                !(cmp || between)
            }
            _ => false,
        }
    }

    fn source(&mut self) -> PResult<SourceClause> {
        if self.is_unit_head() {
            let t = self.bump();
            let name = word_name(&t);
            let (form, predicate) = self.unit_rest(&name)?;
            let end = self.prev_end();
            return Ok(SourceClause {
                form,
                unit: Some(name),
                predicate,
                span: Span::new(t.span.start, end),
            });
        }
        let start = self.peek().span.start;
        let predicate = self.or_expr(true)?;
        Ok(SourceClause {
            form: SourceForm::Compact,
            unit: None,
            predicate: Some(predicate),
            span: Span::new(start, self.prev_end()),
        })
    }

    /// After a unit name: `where P`, nothing, or an error.
    fn unit_rest(&mut self, unit: &Name) -> PResult<(SourceForm, Option<Expr>)> {
        if self.at_word("where") {
            let where_tok = self.bump();
            if self.at_predicate_end() {
                let example = example_clause(&unit.text);
                let d = Diagnostic::new(
                    C::EmptyPredicate,
                    if self.at(&TokenKind::Eof) {
                        Span::new(where_tok.span.end, where_tok.span.end)
                    } else {
                        self.peek().span
                    },
                    format!("`{} where` needs a predicate", unit.text),
                )
                .expected(["a predicate (`field:value`)"])
                .found(self.peek().describe())
                .hint(format!(
                    "write `{} where {example}`, or `{}` alone for all rows",
                    unit.text, unit.text
                ));
                let d = self.insert_here(d, &format!(" {example} "));
                let d = match d.correction.as_deref().map(normalize_space) {
                    Some(c) => d.correction(c),
                    None => d,
                };
                return Err(d);
            }
            let pred = self.or_expr(false)?;
            return Ok((SourceForm::Where, Some(pred)));
        }
        match &self.peek().kind {
            TokenKind::Eof | TokenKind::Pipe | TokenKind::RParen => Ok((SourceForm::Bare, None)),
            TokenKind::Word(w) if w == "with" => Ok((SourceForm::Bare, None)),
            _ => {
                let d = Diagnostic::new(
                    C::MissingWhere,
                    self.peek().span,
                    format!(
                        "`{}` must be followed by `where` and a predicate",
                        unit.text
                    ),
                )
                .expected(["`where`", "`|`", "end of query"])
                .found(self.peek().describe())
                .hint("a unit name at the start of a query or stage selects rows of that unit; it is never read as text")
                .hint(format!("to search for the word, quote it: \"{}\"", unit.text));
                Err(self.insert_here(d, "where "))
            }
        }
    }

    fn at_predicate_end(&self) -> bool {
        match &self.peek().kind {
            TokenKind::Eof | TokenKind::Pipe | TokenKind::RParen => true,
            TokenKind::Word(w) => w == "with",
            _ => false,
        }
    }
}

trait TrimCorrection {
    fn correction_trimmed(self) -> Diagnostic;
}

impl TrimCorrection for Diagnostic {
    fn correction_trimmed(mut self) -> Diagnostic {
        if let Some(c) = self.correction.take() {
            let t = c.trim().to_string();
            if !t.is_empty() {
                self.correction = Some(t);
            }
        }
        self
    }
}

fn internal() -> Diagnostic {
    Diagnostic::new(C::Internal, Span::default(), "internal parser error")
}

fn normalize_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn span_of(exprs: &[Expr]) -> Span {
    match (exprs.first(), exprs.last()) {
        (Some(a), Some(b)) => a.span.to(b.span),
        _ => Span::default(),
    }
}

fn word_name(t: &Token) -> Name {
    let text = match &t.kind {
        TokenKind::Word(w) => w.clone(),
        _ => String::new(),
    };
    Name { text, span: t.span }
}

fn field_ref(name: &str, span: Span) -> FieldRef {
    match name.strip_prefix("session.") {
        Some(rest) => FieldRef {
            session: true,
            name: rest.to_string(),
            span,
        },
        None => FieldRef {
            session: false,
            name: name.to_string(),
            span,
        },
    }
}

fn field_expr(field: FieldRef, test: FieldTest, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Field(FieldClause { field, test, span }),
        span,
    }
}

/// Whether some unit (or `session.`) has a field of that name.
fn is_known_field(name: &str) -> bool {
    let bare = name.strip_prefix("session.").unwrap_or(name);
    registry::UNITS.iter().any(|u| u.field(bare).is_some())
}
