//! `with unit(cols)[field:value, first:N]` projections.

use super::*;

impl Resolver<'_> {
    /// The query without the bracket `[...]` around `span`.
    pub(super) fn drop_bracket(&self, span: Span) -> Option<String> {
        let open = self.q.get(..span.start)?.rfind('[')?;
        let close = span.end + self.q.get(span.end..)?.find(']')?;
        splice(self.q, Span::new(open, close + 1), "")
    }

    pub(super) fn projection(&mut self, p: &ast::Projection) -> Option<ResolvedProjection> {
        let Some(unit) = unit_by_name(&p.unit.text) else {
            self.err(Diagnostic::new(
                C::UnknownUnit,
                p.unit.span,
                format!("`{}` is not a unit", p.unit.text),
            ));
            return None;
        };
        let mut ok = true;
        let mut columns = Vec::new();
        for c in &p.columns {
            if unit.has_column(&c.text) {
                columns.push(c.text.clone());
                continue;
            }
            ok = false;
            let mut d = Diagnostic::new(
                C::UnknownColumn,
                c.span,
                format!("`{}` is not a column of {}", c.text, unit.table),
            )
            .found(format!("`{}`", c.text))
            .supported(unit.columns());
            // a field name whose column differs: suggest the column
            let suggestion = unit
                .field(&c.text)
                .and_then(|f| f.source.column())
                .or_else(|| closest(&c.text, &unit.columns()));
            if let Some(best) = suggestion {
                d = d.replace(self.q, c.span, best);
            }
            self.err(d);
        }
        let mut filters = Vec::new();
        let mut window = None;
        for b in &p.bracket {
            match b {
                ast::BracketClause::Filter { field, value } => {
                    if unit.bracket_fields.contains(&field.text.as_str()) {
                        match self.bracket_filter(unit, field, value) {
                            Some(f) => filters.push(f),
                            None => ok = false,
                        }
                    } else {
                        ok = false;
                        let mut d = Diagnostic::new(
                            C::InvalidBracket,
                            field.span,
                            format!("`{}` is not a bracket field of {}", field.text, unit.name),
                        )
                        .found(format!("`{}`", field.text))
                        .supported(unit.bracket_fields.iter().copied());
                        if let Some(best) = closest(&field.text, unit.bracket_fields) {
                            d = d.replace(self.q, field.span, best);
                        } else if let Some(fixed) = self.drop_bracket(field.span) {
                            d = d.correction(fixed);
                        }
                        self.err(d);
                    }
                }
                ast::BracketClause::Window { last, n, span } => {
                    if window.is_some() {
                        ok = false;
                        self.err(Diagnostic::new(
                            C::InvalidBracket,
                            *span,
                            "one `first:N` or `last:N` per bracket",
                        ));
                    }
                    window = Some(Window { last: *last, n: *n });
                }
            }
        }
        ok.then_some(ResolvedProjection {
            unit: unit.id,
            columns,
            filters,
            window,
        })
    }

    /// A bracket filter `field:value`, bound to the field's column and typed by its kind.
    fn bracket_filter(
        &mut self,
        unit: &'static Unit,
        field: &ast::Name,
        value: &ast::Value,
    ) -> Option<BracketFilter> {
        let internal = |what: &str| {
            Diagnostic::new(
                C::Internal,
                field.span,
                format!("bracket field `{}` {what} in the registry", field.text),
            )
        };
        let Some(f) = unit.field(&field.text) else {
            self.err(internal("is not a field"));
            return None;
        };
        let Some(column) = f.source.column() else {
            self.err(internal("has no column"));
            return None;
        };
        let typed = match f.kind {
            FieldKind::Bool => Value::Bool(self.bool_value(f.name, value)?),
            FieldKind::Enum => self.enum_value(f.name, f, value)?,
            FieldKind::Count | FieldKind::Number => match self.literal(f, value)? {
                Literal::Int(n) => Value::Number(Number::Int(n)),
                Literal::Float(x) => Value::Number(Number::Float(x)),
                Literal::Date(_) => {
                    self.err(internal("reads a date"));
                    return None;
                }
            },
            _ => Value::Text(value.text.clone()),
        };
        Some(BracketFilter {
            field: f.name,
            column,
            text: value.text.clone(),
            value: typed,
        })
    }
}
