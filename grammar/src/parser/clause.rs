//! Field clauses and their values: `field:value`, `field:(a|b)`, `field:>=N`, `field >= N`,
//! `field between A and B`.

use super::*;

impl Parser<'_> {
    /// `name:rest` where the word has been seen but not consumed.
    pub(super) fn colon_clause(&mut self, name: &str, rest: &str, span: Span) -> PResult<Expr> {
        let field = field_ref(name, Span::new(span.start, span.start + name.len()));
        self.bump();
        // `name:prefix:"quoted"` (`lineage:id:"a b"`, `session:codex-session:"a b"`): a value
        // whose part after its last colon is quoted.
        let next = self.peek().clone();
        if rest.ends_with(':')
            && self.adjacent(0)
            && let TokenKind::Str(s) = &next.kind
        {
            self.bump();
            let value = Value {
                text: format!("{rest}{s}"),
                quoted: true,
                span: Span::new(span.start + name.len() + 1, next.span.end),
            };
            return Ok(field_expr(
                field,
                FieldTest::Match { value },
                span.to(next.span),
            ));
        }
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
                Ok(compare_expr(field, span, op, value, true))
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

    pub(super) fn alternatives(&mut self, field: FieldRef, start: Span) -> PResult<Expr> {
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

    pub(super) fn value(&mut self) -> PResult<Value> {
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

    pub(super) fn readable_compare(&mut self, name: &str, span: Span, op: CmpOp) -> PResult<Expr> {
        let field = field_ref(name, span);
        self.bump();
        self.bump(); // operator
        let value = self.value().map_err(|d| {
            let example = field_example_value(name);
            d.replace(self.q, span, &format!("{name}:{example}"))
        })?;
        Ok(compare_expr(field, span, op, value, false))
    }

    pub(super) fn between(&mut self, name: &str, span: Span) -> PResult<Expr> {
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
}

/// `field OP value`: compact (`f:>=3`) or readable (`f >= 3`), spanning from the field to the
/// value.
fn compare_expr(field: FieldRef, span: Span, op: CmpOp, value: Value, compact: bool) -> Expr {
    let whole = span.to(value.span);
    field_expr(field, FieldTest::Compare { op, value, compact }, whole)
}
