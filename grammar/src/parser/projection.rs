//! `with unit(cols)[clauses]` projections.

use super::*;

impl Parser<'_> {
    // ---- projections ----------------------------------------------------------------------

    pub(super) fn projections(&mut self, with: Span) -> PResult<Vec<Projection>> {
        self.comma_separated(|p| p.projection(with))
    }

    pub(super) fn projection(&mut self, with: Span) -> PResult<Projection> {
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
                    if let Some(best) = crate::suggest::closest(w, &names) {
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

    pub(super) fn projection_columns(&mut self) -> PResult<Vec<Name>> {
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

    pub(super) fn bracket_clauses(&mut self) -> PResult<Vec<BracketClause>> {
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

    pub(super) fn bracket_error(&self) -> Diagnostic {
        let mut d = self.unexpected(
            "a bracket clause is `field:value`, `first:N` or `last:N`",
            &["`field:value`", "`first:N`", "`last:N`"],
        );
        d.code = C::InvalidBracket;
        d
    }
}
