//! The parser: tokens → [`Query`], a typed syntax tree with spans.
//!
//! Recursive descent over the lexer's tokens. It checks the shape of the query (forms, stages,
//! operators, nesting) and stops at the first token that cannot continue a valid query, with a
//! diagnostic and a correction. Which fields exist is `resolve`'s concern; this module only asks
//! the registry which words are unit names (a unit prefix is never read as free text).

#![allow(clippy::result_large_err)] // one Diagnostic per failed parse; boxing buys nothing here

use crate::ast::*;
use crate::diagnostic::{Diagnostic, DiagnosticCode as C, Diagnostics};
use crate::lexer::{CmpOp, Token, TokenKind, lex};
use crate::registry::{self, unit_by_name};

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

    // ---- predicates ---------------------------------------------------------------------

    fn or_expr(&mut self, compact: bool) -> PResult<Expr> {
        let first = self.and_expr(compact)?;
        if !self.at_word("OR") {
            return Ok(first);
        }
        let mut operands = vec![first];
        while self.at_word("OR") {
            self.bump();
            operands.push(self.and_expr(compact)?);
        }
        let span = span_of(&operands);
        Ok(Expr {
            kind: ExprKind::Or { operands },
            span,
        })
    }

    fn and_expr(&mut self, compact: bool) -> PResult<Expr> {
        let first = self.unary(compact)?;
        let mut operands = vec![first];
        let mut implicit = false;
        loop {
            if self.at_word("AND") {
                self.bump();
                operands.push(self.unary(compact)?);
                continue;
            }
            if self.at_word("OR") {
                break;
            }
            if compact && self.starts_clause(true) {
                implicit = true;
                operands.push(self.unary(compact)?);
                continue;
            }
            if !compact {
                self.check_where_continuation()?;
            }
            break;
        }
        if operands.len() == 1 {
            return operands.pop().ok_or_else(internal);
        }
        let span = span_of(&operands);
        Ok(Expr {
            kind: ExprKind::And { operands, implicit },
            span,
        })
    }

    /// In a `where` predicate, a clause directly after a clause is an error (no implicit AND).
    fn check_where_continuation(&self) -> PResult<()> {
        if let Some(w) = self.peek_word()
            && matches!(w, "and" | "or" | "not")
        {
            let upper = w.to_ascii_uppercase();
            let d = Diagnostic::new(
                C::LowercaseOperator,
                self.peek().span,
                format!("Boolean operators are written in upper case: `{upper}`"),
            )
            .expected(["`AND`", "`OR`", "`|`", "end of query"])
            .found(self.peek().describe());
            return Err(d.replace(self.q, self.peek().span, &upper));
        }
        if self.starts_clause(false) {
            let d = Diagnostic::new(
                C::MissingConjunction,
                self.peek().span,
                "two clauses of a `where` predicate need `AND` or `OR` between them",
            )
            .expected(["`AND`", "`OR`", "`|`", "end of query"])
            .found(self.peek().describe())
            .hint("juxtaposed clauses mean AND only in the compact form (without `where`)");
            return Err(self.insert_here(d, "AND "));
        }
        Ok(())
    }

    /// Whether the current token can start a clause.
    fn starts_clause(&self, compact: bool) -> bool {
        match &self.peek().kind {
            TokenKind::Str(_) | TokenKind::Tilde | TokenKind::Minus | TokenKind::LParen => true,
            TokenKind::Word(w) => match w.as_str() {
                "AND" | "OR" => false,
                "with" => compact && self.word_at(1).is_none_or(|u| unit_by_name(u).is_none()),
                _ => true,
            },
            _ => false,
        }
    }

    fn unary(&mut self, compact: bool) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner(compact);
        self.leave();
        r
    }

    fn unary_inner(&mut self, compact: bool) -> PResult<Expr> {
        if self.at_word("NOT") {
            let not = self.bump();
            let operand = self.unary(compact)?;
            let span = not.span.to(operand.span);
            return Ok(Expr {
                kind: ExprKind::Not {
                    operand: Box::new(operand),
                    dash: false,
                },
                span,
            });
        }
        if self.at(&TokenKind::Minus) {
            let minus = self.peek().clone();
            if !compact {
                let d = Diagnostic::new(
                    C::UnexpectedToken,
                    minus.span,
                    "`-` negation belongs to the compact form; inside `where` write `NOT`",
                )
                .expected(["a predicate", "`NOT`"])
                .found("`-`");
                return Err(d.replace(self.q, minus.span, "NOT "));
            }
            self.bump();
            let operand = self.atom(compact)?;
            let span = minus.span.to(operand.span);
            return Ok(Expr {
                kind: ExprKind::Not {
                    operand: Box::new(operand),
                    dash: true,
                },
                span,
            });
        }
        self.atom(compact)
    }

    fn atom(&mut self, compact: bool) -> PResult<Expr> {
        let tok = self.peek().clone();
        match &tok.kind {
            TokenKind::LParen => self.group(compact),
            TokenKind::Tilde => self.fts(),
            TokenKind::Str(s) => {
                if !compact {
                    let d = Diagnostic::new(
                        C::BareTextInPredicate,
                        tok.span,
                        "quoted text alone is not a predicate inside `where`",
                    )
                    .expected(["`field:value`", "`~\"text\"`"])
                    .found(tok.describe())
                    .hint("use `~\"...\"` for full-text search or `text:\"...\"` for a substring");
                    return Err(d.replace(self.q, Span::new(tok.span.start, tok.span.start), "~"));
                }
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Text {
                        text: s.clone(),
                        quoted: true,
                    },
                    span: tok.span,
                })
            }
            TokenKind::Word(w) => self.word_atom(w.clone(), tok.span, compact),
            TokenKind::RParen if self.depth <= 1 => {
                let d = Diagnostic::new(C::UnmatchedParen, tok.span, "this `)` closes nothing")
                    .expected(["a predicate"])
                    .found("`)`");
                Err(d.replace(self.q, tok.span, ""))
            }
            _ => {
                let d = self.unexpected(
                    "expected a predicate here",
                    &["`field:value`", "`(`", "`NOT`", "`exists`", "`~\"text\"`"],
                );
                Err(self.drop_dangling_operator(d))
            }
        }
    }

    fn group(&mut self, compact: bool) -> PResult<Expr> {
        let open = self.bump();
        let inner = self.or_expr(compact)?;
        if !self.at(&TokenKind::RParen) {
            let col = crate::diagnostic::column_of(self.q, open.span.start);
            let d = Diagnostic::new(
                C::UnclosedParen,
                self.peek().span,
                format!("the `(` at column {col} is never closed"),
            )
            .expected(["`)`", "`AND`", "`OR`"])
            .found(self.peek().describe());
            return Err(self.insert_here(d, ")"));
        }
        let close = self.bump();
        Ok(Expr {
            kind: ExprKind::Group {
                inner: Box::new(inner),
            },
            span: open.span.to(close.span),
        })
    }

    fn fts(&mut self) -> PResult<Expr> {
        let tilde = self.bump();
        let t = self.peek().clone();
        let text = match &t.kind {
            TokenKind::Str(s) if self.adjacent(0) => s.clone(),
            TokenKind::Word(w) if self.adjacent(0) && !w.contains(':') => w.clone(),
            _ => {
                let d = Diagnostic::new(
                    C::MissingValue,
                    t.span,
                    "`~` must be followed directly by the text to search",
                )
                .expected(["`~\"text\"`"])
                .found(t.describe());
                return Err(d.replace(self.q, tilde.span, "~\"text\""));
            }
        };
        self.bump();
        Ok(Expr {
            kind: ExprKind::Fts { text },
            span: tilde.span.to(t.span),
        })
    }

    fn word_atom(&mut self, w: String, span: Span, compact: bool) -> PResult<Expr> {
        // keywords
        if w == "exists" && self.is_exists() {
            return self.exists();
        }
        if w == "seq" && self.peek_at(1).kind == TokenKind::LParen {
            return self.seq();
        }
        if matches!(w.as_str(), "AND" | "OR") {
            return Err(self.unexpected(
                &format!("`{w}` needs a predicate before it"),
                &["a predicate"],
            ));
        }
        if w == "where" || (w == "with" && !compact) {
            return Err(self.unexpected(&format!("`{w}` cannot stand here"), &["a predicate"]));
        }
        if compact && unit_by_name(&w).is_some() && self.word_at(1) == Some("where") {
            let d = Diagnostic::new(
                C::MisplacedUnitStage,
                span,
                format!("`{w} where ...` must start the query or follow `|`"),
            )
            .expected(["a clause", "`|`"])
            .found(format!("`{w}`"));
            return Err(self.insert_here(d, "| "));
        }
        // field:value
        if let Some((name, rest)) = w.split_once(':')
            && is_ident(name)
        {
            return self.colon_clause(name, rest, span);
        }
        // readable comparison: field OP value / field between A and B
        if is_ident(&w) {
            if let TokenKind::Cmp(op) = self.peek_at(1).kind {
                return self.readable_compare(&w, span, op);
            }
            if self.word_at(1) == Some("between") {
                return self.between(&w, span);
            }
        }
        if compact {
            self.bump();
            return Ok(Expr {
                kind: ExprKind::Text {
                    text: w,
                    quoted: false,
                },
                span,
            });
        }
        if is_ident(&w) && self.value_missing_after(1) && is_known_field(&w) {
            let example = field_example_value(&w);
            let d = Diagnostic::new(
                C::MissingValue,
                self.peek_at(1).span,
                format!("field `{w}` needs a value: `{w}:VALUE`"),
            )
            .expected([format!("`{w}:VALUE`"), format!("`{w} >= N`")])
            .found(self.peek_at(1).describe());
            return Err(d.replace(self.q, span, &format!("{w}:{example}")));
        }
        let d = Diagnostic::new(
            C::BareTextInPredicate,
            span,
            format!("bare text `{w}` is not a predicate inside `where`"),
        )
        .expected(["`field:value`", "`~\"text\"`", "`NOT`", "`(`"])
        .found(format!("`{w}`"))
        .hint("use `field:value`, or `~\"...\"` for full-text search");
        Err(d.replace(self.q, span, &format!("text:\"{}\"", w.replace('"', ""))))
    }

    /// At the end of a predicate after `AND`/`OR`/`NOT`: the correction drops the operator.
    fn drop_dangling_operator(&self, d: Diagnostic) -> Diagnostic {
        let prev = self.pos.checked_sub(1).and_then(|i| self.toks.get(i));
        match prev {
            Some(Token {
                kind: TokenKind::Word(w),
                span,
            }) if matches!(w.as_str(), "AND" | "OR" | "NOT") => {
                let head = self.q.get(..span.start).unwrap_or("").trim_end();
                let tail = self.q.get(self.peek().span.start..).unwrap_or("");
                let fixed = format!("{head} {tail}").trim().to_string();
                if fixed.is_empty() {
                    d
                } else {
                    d.correction(fixed)
                }
            }
            _ => d,
        }
    }

    fn value_missing_after(&self, n: usize) -> bool {
        match &self.peek_at(n).kind {
            TokenKind::Eof | TokenKind::Pipe | TokenKind::RParen => true,
            TokenKind::Word(w) => matches!(w.as_str(), "AND" | "OR" | "with"),
            _ => false,
        }
    }

    fn is_exists(&self) -> bool {
        match self.word_at(1) {
            Some(u) => unit_by_name(u).is_some() || self.peek_at(2).kind == TokenKind::LParen,
            None => false,
        }
    }

    fn exists(&mut self) -> PResult<Expr> {
        let kw = self.bump();
        let unit_tok = self.bump();
        let unit = word_name(&unit_tok);
        if registry::unit_by_singular(&unit.text).is_none() {
            if let Some(u) = registry::unit_by_plural(&unit.text) {
                let d = Diagnostic::new(
                    C::PluralStructuralUnit,
                    unit.span,
                    format!("`exists` takes the singular unit name: `{}`", u.singular),
                )
                .expected([format!("`{}`", u.singular)])
                .found(format!("`{}`", unit.text));
                return Err(d.replace(self.q, unit.span, u.singular));
            }
            let singulars: Vec<&str> = registry::UNITS.iter().map(|u| u.singular).collect();
            let mut d = Diagnostic::new(
                C::UnknownUnit,
                unit.span,
                format!("`{}` is not a unit", unit.text),
            )
            .expected(singulars.iter().map(|s| format!("`{s}`")))
            .found(format!("`{}`", unit.text));
            if let Some(best) = crate::resolve::closest(&unit.text, &singulars) {
                d = d.replace(self.q, unit.span, best);
            }
            return Err(d);
        }
        if !self.at(&TokenKind::LParen) {
            let d = self.unexpected(
                &format!("`exists {}` must be followed by `(predicate)`", unit.text),
                &["`(`"],
            );
            return Err(d);
        }
        self.enter()?;
        self.bump();
        let inner = self.or_expr(false);
        self.leave();
        let inner = inner?;
        if !self.at(&TokenKind::RParen) {
            let d = Diagnostic::new(
                C::UnclosedParen,
                self.peek().span,
                format!("`exists {}(` is never closed", unit.text),
            )
            .expected(["`)`", "`AND`", "`OR`"])
            .found(self.peek().describe());
            return Err(self.insert_here(d, ")"));
        }
        let close = self.bump();
        Ok(Expr {
            kind: ExprKind::Exists {
                unit,
                predicate: Box::new(inner),
            },
            span: kw.span.to(close.span),
        })
    }

    fn seq(&mut self) -> PResult<Expr> {
        let kw = self.bump();
        self.bump(); // (
        let mut steps = Vec::new();
        loop {
            steps.push(self.seq_step()?);
            if self.at(&TokenKind::Arrow) {
                self.bump();
                continue;
            }
            break;
        }
        if !self.at(&TokenKind::RParen) {
            let d = Diagnostic::new(
                C::InvalidSequence,
                self.peek().span,
                "a sequence step must be followed by `->` or `)`",
            )
            .expected(["`->`", "`)`", "`AND`"])
            .found(self.peek().describe());
            return Err(self.insert_here(d, ")"));
        }
        let close = self.bump();
        if steps.len() < 2 {
            let d = Diagnostic::new(
                C::InvalidSequence,
                close.span,
                "`seq(...)` needs at least two steps joined by `->`",
            )
            .expected(["`->`"])
            .found("`)`");
            let Some(first) = steps.first() else {
                return Err(d);
            };
            let text = first.span.text(self.q).to_string();
            return Err(d.replace(self.q, first.span, &format!("{text} -> {text}")));
        }
        Ok(Expr {
            kind: ExprKind::Seq { steps },
            span: kw.span.to(close.span),
        })
    }

    fn seq_step(&mut self) -> PResult<SeqStep> {
        let mut clauses = Vec::new();
        loop {
            let tok = self.peek().clone();
            let clause = match &tok.kind {
                TokenKind::Word(w) => match w.split_once(':') {
                    Some((name, rest)) if is_ident(name) => {
                        let e = self.colon_clause(name, rest, tok.span)?;
                        match e.kind {
                            ExprKind::Field(fc) => fc,
                            _ => return Err(internal()),
                        }
                    }
                    _ => return Err(self.seq_step_error()),
                },
                _ => return Err(self.seq_step_error()),
            };
            clauses.push(clause);
            if self.at_word("AND") {
                self.bump();
                continue;
            }
            break;
        }
        let span = match (clauses.first(), clauses.last()) {
            (Some(a), Some(b)) => a.span.to(b.span),
            _ => self.peek().span,
        };
        Ok(SeqStep { clauses, span })
    }

    fn seq_step_error(&self) -> Diagnostic {
        self.unexpected(
            "a sequence step is `field:value` clauses (action, tool, command, path, output, text) joined by AND",
            &["`action:VALUE`", "`tool:VALUE`"],
        )
        .hint("example: seq(action:file_edit -> action:shell)")
    }

    /// `name:rest` where the word has been seen but not consumed.
    fn colon_clause(&mut self, name: &str, rest: &str, span: Span) -> PResult<Expr> {
        let field = field_ref(name, Span::new(span.start, span.start + name.len()));
        self.bump();
        if !rest.is_empty() {
            let value = Value {
                text: rest.to_string(),
                quoted: false,
                span: Span::new(span.start + name.len() + 1, span.end),
            };
            return Ok(field_expr(field, FieldTest::Match { value }, span));
        }
        // `name:` followed directly by a comparison, alternatives or a quoted string
        let next = self.peek().clone();
        let attached = self.adjacent(0);
        match &next.kind {
            TokenKind::Cmp(op) if attached => {
                let op = *op;
                self.bump();
                let value = self.value()?;
                let whole = span.to(value.span);
                Ok(field_expr(
                    field,
                    FieldTest::Compare {
                        op,
                        value,
                        compact: true,
                    },
                    whole,
                ))
            }
            TokenKind::LParen if attached => self.alternatives(field, span),
            TokenKind::Str(s) if attached => {
                self.bump();
                let value = Value {
                    text: s.clone(),
                    quoted: true,
                    span: next.span,
                };
                Ok(field_expr(
                    field,
                    FieldTest::Match { value },
                    span.to(next.span),
                ))
            }
            _ => {
                let example = field_example_value(name);
                let d = Diagnostic::new(
                    C::MissingValue,
                    if attached {
                        next.span
                    } else {
                        Span::new(span.end, span.end)
                    },
                    format!("field `{name}` needs a value after the colon"),
                )
                .expected(["a value", "`\"quoted value\"`", "`(a|b)`"])
                .found(if attached {
                    next.describe()
                } else {
                    "whitespace".to_string()
                });
                Err(d.replace(self.q, span, &format!("{name}:{example}")))
            }
        }
    }

    fn alternatives(&mut self, field: FieldRef, start: Span) -> PResult<Expr> {
        let open = self.bump();
        let mut values = Vec::new();
        loop {
            let t = self.peek().clone();
            match &t.kind {
                TokenKind::Word(w) => {
                    self.bump();
                    values.push(Value {
                        text: w.clone(),
                        quoted: false,
                        span: t.span,
                    });
                }
                TokenKind::Str(s) => {
                    self.bump();
                    values.push(Value {
                        text: s.clone(),
                        quoted: true,
                        span: t.span,
                    });
                }
                _ => {
                    let d = self
                        .unexpected("expected a value in the alternatives `(a|b)`", &["a value"]);
                    let fixed = if values.is_empty() {
                        d.replace(self.q, open.span.to(t.span), "(a|b)")
                    } else {
                        d
                    };
                    return Err(fixed);
                }
            }
            match &self.peek().kind {
                TokenKind::Pipe => {
                    self.bump();
                }
                TokenKind::RParen => {
                    let close = self.bump();
                    return Ok(field_expr(
                        field,
                        FieldTest::AnyOf { values },
                        start.to(close.span),
                    ));
                }
                _ => {
                    let d = self.unexpected(
                        "alternatives are separated by `|` and closed by `)`",
                        &["`|`", "`)`"],
                    );
                    return Err(self.insert_here(d, ")"));
                }
            }
        }
    }

    fn value(&mut self) -> PResult<Value> {
        let t = self.peek().clone();
        match &t.kind {
            TokenKind::Word(w) => {
                self.bump();
                Ok(Value {
                    text: w.clone(),
                    quoted: false,
                    span: t.span,
                })
            }
            TokenKind::Str(s) => {
                self.bump();
                Ok(Value {
                    text: s.clone(),
                    quoted: true,
                    span: t.span,
                })
            }
            TokenKind::Minus
                if matches!(self.peek_at(1).kind, TokenKind::Word(_)) && self.adjacent(1) =>
            {
                self.bump();
                let w = self.bump();
                let text = match &w.kind {
                    TokenKind::Word(w) => format!("-{w}"),
                    _ => String::new(),
                };
                Ok(Value {
                    text,
                    quoted: false,
                    span: t.span.to(w.span),
                })
            }
            _ => Err(
                Diagnostic::new(C::MissingValue, t.span, "expected a value here")
                    .expected(["a number", "a date", "a value"])
                    .found(t.describe()),
            ),
        }
    }

    fn readable_compare(&mut self, name: &str, span: Span, op: CmpOp) -> PResult<Expr> {
        let field = field_ref(name, span);
        self.bump();
        self.bump(); // operator
        let value = self.value().map_err(|d| {
            let example = field_example_value(name);
            d.replace(self.q, span, &format!("{name}:{example}"))
        })?;
        let whole = span.to(value.span);
        Ok(field_expr(
            field,
            FieldTest::Compare {
                op,
                value,
                compact: false,
            },
            whole,
        ))
    }

    fn between(&mut self, name: &str, span: Span) -> PResult<Expr> {
        let field = field_ref(name, span);
        self.bump();
        self.bump(); // between
        let low = self.value()?;
        if !(self.at_word("and") || self.at_word("AND")) {
            let d = self.unexpected("`between A and B` needs `and`", &["`and`"]);
            return Err(self.insert_here(d, "and "));
        }
        self.bump();
        let high = self.value()?;
        let whole = span.to(high.span);
        Ok(field_expr(field, FieldTest::Between { low, high }, whole))
    }

    // ---- stages -------------------------------------------------------------------------

    fn stage(&mut self) -> PResult<Stage> {
        let t = self.peek().clone();
        let Some(w) = self.peek_word().map(str::to_string) else {
            let d = self.unexpected(
                "expected a pipeline stage after `|`",
                &[
                    "`sort by`",
                    "`group by`",
                    "`count`",
                    "`agg`",
                    "`select`",
                    "`limit`",
                    "`offset`",
                    "`<unit> where`",
                ],
            );
            let trimmed = self
                .q
                .get(..self.prev_end().saturating_sub(1))
                .unwrap_or_default();
            let d = if t.kind == TokenKind::Eof && !trimmed.trim().is_empty() {
                d.correction(trimmed.trim_end().to_string())
            } else {
                d
            };
            return Err(d);
        };
        let kind = match w.as_str() {
            u if unit_by_name(u).is_some() => self.unit_stage()?,
            "sort" => self.sort_stage()?,
            "group" => self.group_stage()?,
            "count" => {
                self.bump();
                StageKind::Count
            }
            "agg" => self.agg_stage()?,
            "select" => self.select_stage()?,
            "limit" | "offset" => self.int_stage(&w)?,
            _ => return Err(self.unknown_stage(&t, &w)),
        };
        let span = t.span.to(Span::new(self.prev_end(), self.prev_end()));
        if !matches!(self.peek().kind, TokenKind::Eof | TokenKind::Pipe) && !self.at_word("with") {
            let d = self.unexpected(
                &format!("this cannot continue the `{w}` stage"),
                &["`|`", "end of query"],
            );
            let d = match crate::diagnostic::splice(
                self.q,
                Span::new(self.peek().span.start, self.q.len()),
                "",
            ) {
                Some(fixed) => d.correction(fixed.trim_end().to_string()),
                None => d,
            };
            return Err(d);
        }
        Ok(Stage { kind, span })
    }

    fn unknown_stage(&self, t: &Token, w: &str) -> Diagnostic {
        let mut candidates: Vec<&str> = STAGE_WORDS.to_vec();
        candidates.extend(registry::UNITS.iter().map(|u| u.name));
        let mut d = Diagnostic::new(
            C::InvalidStage,
            t.span,
            format!("`{w}` is not a pipeline stage"),
        )
        .expected([
            "`sort by time|count|key|FIELD [asc|desc]`",
            "`group by FIELD[,FIELD]`",
            "`count`",
            "`agg count|FN:FIELD[,...]`",
            "`select FIELD[,FIELD]`",
            "`limit N`",
            "`offset N`",
            "`<unit> where ...`",
        ])
        .found(format!("`{w}`"));
        if let Some(best) = crate::resolve::closest(w, &candidates) {
            d = d.replace(self.q, t.span, best);
        }
        d
    }

    fn unit_stage(&mut self) -> PResult<StageKind> {
        let t = self.bump();
        let unit = word_name(&t);
        let (_, predicate) = self.unit_rest(&unit)?;
        Ok(StageKind::Unit { unit, predicate })
    }

    fn expect_by(&mut self, stage: &str) -> PResult<()> {
        if self.at_word("by") {
            self.bump();
            return Ok(());
        }
        let d = Diagnostic::new(
            C::InvalidStage,
            self.peek().span,
            format!("`{stage}` must be followed by `by`"),
        )
        .expected(["`by`"])
        .found(self.peek().describe());
        Err(self.insert_here(d, "by "))
    }

    fn sort_stage(&mut self) -> PResult<StageKind> {
        self.bump();
        self.expect_by("sort")?;
        let t = self.peek().clone();
        let key = match &t.kind {
            TokenKind::Word(w) if is_ident(w) => {
                self.bump();
                Name {
                    text: w.clone(),
                    span: t.span,
                }
            }
            _ => {
                let d = self.unexpected(
                    "`sort by` needs a key",
                    &["`time`", "`count`", "`key`", "a field"],
                );
                return Err(self.insert_here(d, "time "));
            }
        };
        let (descending, explicit) = match self.peek_word() {
            Some("asc") => {
                self.bump();
                (false, true)
            }
            Some("desc") => {
                self.bump();
                (true, true)
            }
            _ => (false, false),
        };
        Ok(StageKind::Sort {
            key,
            descending,
            explicit_direction: explicit,
        })
    }

    fn group_stage(&mut self) -> PResult<StageKind> {
        self.bump();
        self.expect_by("group")?;
        let keys = self.comma_separated(Self::group_key)?;
        Ok(StageKind::GroupBy { keys })
    }

    fn group_key(&mut self) -> PResult<GroupKey> {
        let t = self.peek().clone();
        let key = match &t.kind {
            TokenKind::Word(w) => match w.split_once(':') {
                Some(("time", bucket)) => {
                    self.bump();
                    GroupKey::Time {
                        bucket: Name {
                            text: bucket.to_string(),
                            span: Span::new(t.span.start + 5, t.span.end),
                        },
                        span: t.span,
                    }
                }
                None if is_ident(w) => {
                    self.bump();
                    GroupKey::Field {
                        field: field_ref(w, t.span),
                    }
                }
                _ => return Err(self.group_key_error()),
            },
            _ => return Err(self.group_key_error()),
        };
        Ok(key)
    }

    fn group_key_error(&self) -> Diagnostic {
        let d = self.unexpected(
            "`group by` needs a field or a time bucket",
            &["a field", "`time:hour|day|week|month|year`"],
        );
        if self.peek().kind == TokenKind::Eof {
            self.insert_here(d, " time:day")
        } else {
            d
        }
    }

    fn agg_stage(&mut self) -> PResult<StageKind> {
        self.bump();
        let metrics = self.comma_separated(Self::metric_spec)?;
        Ok(StageKind::Agg { metrics })
    }

    fn metric_spec(&mut self) -> PResult<MetricSpec> {
        let t = self.peek().clone();
        let metric = match &t.kind {
            TokenKind::Word(w) if w == "count" => {
                self.bump();
                MetricSpec {
                    function: Name {
                        text: w.clone(),
                        span: t.span,
                    },
                    field: None,
                    span: t.span,
                }
            }
            TokenKind::Word(w) => match w.split_once(':') {
                Some((func, field)) if is_ident(func) && is_ident(field) => {
                    self.bump();
                    let fstart = t.span.start + func.len() + 1;
                    MetricSpec {
                        function: Name {
                            text: func.to_string(),
                            span: Span::new(t.span.start, t.span.start + func.len()),
                        },
                        field: Some(field_ref(field, Span::new(fstart, t.span.end))),
                        span: t.span,
                    }
                }
                _ => return Err(self.metric_error()),
            },
            _ => return Err(self.metric_error()),
        };
        Ok(metric)
    }

    fn metric_error(&self) -> Diagnostic {
        let t = self.peek();
        let d = self.unexpected(
            "an `agg` metric is `count` or `FN:FIELD`",
            &[
                "`count`",
                "`count_distinct:F`",
                "`sum|avg|min|max|median|stddev|pNN:F`",
            ],
        );
        match &t.kind {
            TokenKind::Word(_) => d.replace(self.q, t.span, "count"),
            _ => self.insert_here(d, "count "),
        }
    }

    fn select_stage(&mut self) -> PResult<StageKind> {
        self.bump();
        let fields = self.comma_separated(|p| {
            let t = p.peek().clone();
            match &t.kind {
                TokenKind::Word(w) if is_ident(w) => {
                    p.bump();
                    Ok(field_ref(w, t.span))
                }
                _ => Err(p.unexpected("`select` needs field names", &["a field"])),
            }
        })?;
        Ok(StageKind::Select { fields })
    }

    /// One or more `item`s separated by commas.
    fn comma_separated<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.at(&TokenKind::Comma) {
            self.bump();
            items.push(item(self)?);
        }
        Ok(items)
    }

    fn int_stage(&mut self, w: &str) -> PResult<StageKind> {
        let kw = self.bump();
        let t = self.peek().clone();
        let n = match &t.kind {
            TokenKind::Word(n) => n.parse::<u64>().ok(),
            _ => None,
        };
        let Some(n) = n else {
            let d = Diagnostic::new(
                C::InvalidInteger,
                t.span,
                format!("`{w}` needs a non-negative integer"),
            )
            .expected(["an integer"])
            .found(t.describe());
            let fixed_span = if matches!(t.kind, TokenKind::Word(_)) {
                kw.span.to(t.span)
            } else {
                kw.span
            };
            return Err(d.replace(self.q, fixed_span, &format!("{w} 10")));
        };
        self.bump();
        Ok(if w == "limit" {
            StageKind::Limit { n }
        } else {
            StageKind::Offset { n }
        })
    }

    // ---- projections ----------------------------------------------------------------------

    fn projections(&mut self, with: Span) -> PResult<Vec<Projection>> {
        self.comma_separated(|p| p.projection(with))
    }

    fn projection(&mut self, with: Span) -> PResult<Projection> {
        let t = self.peek().clone();
        let unit = match &t.kind {
            TokenKind::Word(w) if unit_by_name(w).is_some() => {
                self.bump();
                word_name(&t)
            }
            _ => {
                let mut d = self.unexpected(
                    "`with` must be followed by a unit: `with messages(col,...)`",
                    &["a unit name"],
                );
                d.code = C::UnknownUnit;
                if let TokenKind::Word(w) = &t.kind {
                    let names: Vec<&str> = registry::UNITS.iter().map(|u| u.name).collect();
                    if let Some(best) = crate::resolve::closest(w, &names) {
                        return Err(d.replace(self.q, t.span, best));
                    }
                }
                return Err(d
                    .replace(self.q, with.to(Span::new(self.q.len(), self.q.len())), "")
                    .correction_trimmed());
            }
        };
        let mut columns = Vec::new();
        let mut bracket = Vec::new();
        let mut seen_cols = false;
        let mut seen_bracket = false;
        loop {
            if self.at(&TokenKind::LParen) && !seen_cols {
                seen_cols = true;
                self.bump();
                columns = self.projection_columns()?;
                continue;
            }
            if self.at(&TokenKind::LBracket) && !seen_bracket {
                seen_bracket = true;
                self.bump();
                bracket = self.bracket_clauses()?;
                continue;
            }
            break;
        }
        Ok(Projection {
            unit,
            columns,
            bracket,
            span: t.span.to(Span::new(self.prev_end(), self.prev_end())),
        })
    }

    fn projection_columns(&mut self) -> PResult<Vec<Name>> {
        let mut cols = Vec::new();
        loop {
            let t = self.peek().clone();
            match &t.kind {
                TokenKind::Word(w) if is_ident(w) => {
                    self.bump();
                    cols.push(Name {
                        text: w.clone(),
                        span: t.span,
                    });
                }
                _ => return Err(self.unexpected("expected a column name", &["a column"])),
            }
            match &self.peek().kind {
                TokenKind::Comma => {
                    self.bump();
                }
                TokenKind::RParen => {
                    self.bump();
                    return Ok(cols);
                }
                _ => {
                    let d = self.unexpected(
                        "columns are separated by `,` and closed by `)`",
                        &["`,`", "`)`"],
                    );
                    return Err(self.insert_here(d, ")"));
                }
            }
        }
    }

    fn bracket_clauses(&mut self) -> PResult<Vec<BracketClause>> {
        let mut out = Vec::new();
        loop {
            let t = self.peek().clone();
            let clause = match &t.kind {
                TokenKind::Word(w) => match w.split_once(':') {
                    Some((name, value)) if is_ident(name) && !value.is_empty() => {
                        self.bump();
                        if name == "first" || name == "last" {
                            let Ok(n) = value.parse::<u64>() else {
                                let d = Diagnostic::new(
                                    C::InvalidBracket,
                                    t.span,
                                    format!("`{name}:` needs a non-negative integer"),
                                )
                                .expected([format!("`{name}:N`")])
                                .found(format!("`{w}`"));
                                return Err(d.replace(self.q, t.span, &format!("{name}:10")));
                            };
                            BracketClause::Window {
                                last: name == "last",
                                n,
                                span: t.span,
                            }
                        } else {
                            BracketClause::Filter {
                                field: Name {
                                    text: name.to_string(),
                                    span: Span::new(t.span.start, t.span.start + name.len()),
                                },
                                value: Value {
                                    text: value.to_string(),
                                    quoted: false,
                                    span: Span::new(t.span.start + name.len() + 1, t.span.end),
                                },
                            }
                        }
                    }
                    _ => return Err(self.bracket_error()),
                },
                _ => return Err(self.bracket_error()),
            };
            out.push(clause);
            match &self.peek().kind {
                TokenKind::Comma => {
                    self.bump();
                }
                TokenKind::RBracket => {
                    self.bump();
                    return Ok(out);
                }
                _ => {
                    let d = self.unexpected(
                        "bracket clauses are separated by `,` and closed by `]`",
                        &["`,`", "`]`"],
                    );
                    return Err(self.insert_here(d, "]"));
                }
            }
        }
    }

    fn bracket_error(&self) -> Diagnostic {
        let mut d = self.unexpected(
            "a bracket clause is `field:value`, `first:N` or `last:N`",
            &["`field:value`", "`first:N`", "`last:N`"],
        );
        d.code = C::InvalidBracket;
        d
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

/// An example value for a field name (from the first unit that has it), for corrections.
pub(crate) fn field_example_value(name: &str) -> String {
    let bare = name.strip_prefix("session.").unwrap_or(name);
    for unit in registry::UNITS {
        if let Some(f) = unit.field(bare) {
            if let Some((_, v)) = f.example.split_once(':')
                && !v.starts_with(['>', '<', '='])
            {
                return v.to_string();
            }
            return match f.kind {
                registry::FieldKind::Date => "2026-01-01".into(),
                registry::FieldKind::Count | registry::FieldKind::Number => ">=1".into(),
                registry::FieldKind::Bool => "true".into(),
                _ => "VALUE".into(),
            };
        }
    }
    "VALUE".to_string()
}

/// An example predicate for a unit (its first field with a plain example).
pub(crate) fn example_clause(unit: &str) -> String {
    let Some(u) = unit_by_name(unit) else {
        return "id:VALUE".to_string();
    };
    u.fields
        .iter()
        .find(|f| f.groupable && f.example.contains(':'))
        .or_else(|| u.fields.first())
        .map(|f| f.example.to_string())
        .unwrap_or_else(|| "id:VALUE".to_string())
}

/// Whether some unit (or `session.`) has a field of that name.
fn is_known_field(name: &str) -> bool {
    let bare = name.strip_prefix("session.").unwrap_or(name);
    registry::UNITS.iter().any(|u| u.field(bare).is_some())
}
