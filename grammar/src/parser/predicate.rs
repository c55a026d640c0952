//! Predicates: `OR`, `AND` (explicit or juxtaposed), `NOT`/`-`, groups, `~` leaves, bare text,
//! `exists unit(...)` and `seq(step -> step)`.

use super::*;

impl Parser<'_> {
    // ---- predicates ---------------------------------------------------------------------

    pub(super) fn or_expr(&mut self, compact: bool) -> PResult<Expr> {
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

    pub(super) fn and_expr(&mut self, compact: bool) -> PResult<Expr> {
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
    pub(super) fn check_where_continuation(&self) -> PResult<()> {
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
    pub(super) fn starts_clause(&self, compact: bool) -> bool {
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

    pub(super) fn unary(&mut self, compact: bool) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner(compact);
        self.leave();
        r
    }

    pub(super) fn unary_inner(&mut self, compact: bool) -> PResult<Expr> {
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

    pub(super) fn atom(&mut self, compact: bool) -> PResult<Expr> {
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

    pub(super) fn group(&mut self, compact: bool) -> PResult<Expr> {
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

    pub(super) fn fts(&mut self) -> PResult<Expr> {
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

    pub(super) fn word_atom(&mut self, w: String, span: Span, compact: bool) -> PResult<Expr> {
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
    pub(super) fn drop_dangling_operator(&self, d: Diagnostic) -> Diagnostic {
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

    pub(super) fn value_missing_after(&self, n: usize) -> bool {
        match &self.peek_at(n).kind {
            TokenKind::Eof | TokenKind::Pipe | TokenKind::RParen => true,
            TokenKind::Word(w) => matches!(w.as_str(), "AND" | "OR" | "with"),
            _ => false,
        }
    }

    pub(super) fn is_exists(&self) -> bool {
        match self.word_at(1) {
            Some(u) => unit_by_name(u).is_some() || self.peek_at(2).kind == TokenKind::LParen,
            None => false,
        }
    }

    pub(super) fn exists(&mut self) -> PResult<Expr> {
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
            if let Some(best) = crate::suggest::closest(&unit.text, &singulars) {
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

    pub(super) fn seq(&mut self) -> PResult<Expr> {
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

    pub(super) fn seq_step(&mut self) -> PResult<SeqStep> {
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

    pub(super) fn seq_step_error(&self) -> Diagnostic {
        self.unexpected(
            "a sequence step is `field:value` clauses (action, tool, command, path, output, text) joined by AND",
            &["`action:VALUE`", "`tool:VALUE`"],
        )
        .hint("example: seq(action:file_edit -> action:shell)")
    }
}
