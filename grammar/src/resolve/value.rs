//! Typing a clause's values by its field's kind: numbers, dates, booleans, enum members, text.

use super::*;

impl Resolver<'_> {
    pub(super) fn test(&mut self, fc: &FieldClause, field: &Field) -> Option<Test> {
        let name = fc.field.display();
        match &fc.test {
            FieldTest::Match { value } => self.match_value(fc, field, std::slice::from_ref(value)),
            FieldTest::AnyOf { values } => {
                if field.kind.is_ordered() || field.kind == FieldKind::Bool {
                    let first = values.first().map(|v| v.text.clone()).unwrap_or_default();
                    let d = Diagnostic::new(
                        C::InvalidValue,
                        fc.span,
                        format!(
                            "alternatives `(a|b)` need a text field; `{name}` is of kind {}",
                            field.kind.as_str()
                        ),
                    )
                    .replace(self.q, fc.span, &format!("{name}:{first}"));
                    self.err(d);
                    return None;
                }
                self.match_value(fc, field, values)
            }
            FieldTest::Compare { op, value, .. } => {
                if !field.kind.is_ordered() {
                    self.err(self.not_ordered(fc, field, &value.text));
                    return None;
                }
                let lit = self.literal(field, value)?;
                Some(Test::Compare {
                    op: *op,
                    value: lit,
                })
            }
            FieldTest::Between { low, high } => {
                if !field.kind.is_ordered() {
                    self.err(self.not_ordered(fc, field, &low.text));
                    return None;
                }
                let lo = self.literal(field, low);
                let hi = self.literal(field, high);
                Some(Test::Between {
                    low: lo?,
                    high: hi?,
                })
            }
        }
    }

    pub(super) fn not_ordered(&self, fc: &FieldClause, field: &Field, value: &str) -> Diagnostic {
        let name = fc.field.display();
        let value = quote_if_needed(value);
        Diagnostic::new(
            C::ComparisonOnTextField,
            fc.span,
            format!(
                "`{name}` is a text field ({}); comparisons (`=`, `>=`, `between`) apply to counts, numbers and dates",
                field.kind.as_str()
            ),
        )
        .expected([format!("`{name}:VALUE`")])
        .hint(format!("write `{name}:{value}`"))
        .replace(self.q, fc.span, &format!("{name}:{value}"))
    }

    pub(super) fn match_value(
        &mut self,
        fc: &FieldClause,
        field: &Field,
        values: &[ast::Value],
    ) -> Option<Test> {
        let name = fc.field.display();
        match field.kind {
            FieldKind::Count | FieldKind::Number | FieldKind::Date => {
                let v = values.first()?;
                let lit = self.literal(field, v)?;
                let op = match field.name {
                    "since" => CmpOp::Ge,
                    "until" => CmpOp::Le,
                    _ => CmpOp::Eq,
                };
                Some(Test::Compare { op, value: lit })
            }
            FieldKind::Bool => {
                let v = values.first()?;
                let value = self.bool_value(&name, v)?;
                Some(Test::Bool { value })
            }
            FieldKind::Enum => {
                let values = values
                    .iter()
                    .map(|v| self.enum_value(&name, field, v))
                    .collect::<Option<Vec<Value>>>()?;
                Some(Test::Match { values })
            }
            _ => {
                if values.iter().any(|v| v.text.is_empty()) {
                    let d = Diagnostic::new(
                        C::MissingValue,
                        fc.span,
                        format!("`{name}` needs a non-empty value"),
                    )
                    .replace(
                        self.q,
                        fc.span,
                        &format!("{name}:{}", crate::suggest::field_example_value(&name)),
                    );
                    self.err(d);
                    return None;
                }
                let values = values.iter().map(|v| Value::Text(v.text.clone())).collect();
                Some(Test::Match { values })
            }
        }
    }

    /// `true`/`yes`/`1` or `false`/`no`/`0` (any case).
    pub(super) fn bool_value(&mut self, name: &str, v: &ast::Value) -> Option<bool> {
        match v.text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(true),
            "false" | "no" | "0" => Some(false),
            _ => {
                let d =
                    Diagnostic::new(C::InvalidBool, v.span, format!("`{name}` is true or false"))
                        .expected(["`true`", "`false`"])
                        .found(format!("`{}`", v.text))
                        .replace(self.q, v.span, "true");
                self.err(d);
                None
            }
        }
    }

    /// A member of the field's closed set (any case), as the registry spells it; for a derived
    /// field, the evidence the member stands for.
    pub(super) fn enum_value(
        &mut self,
        name: &str,
        field: &Field,
        v: &ast::Value,
    ) -> Option<Value> {
        let lower = v.text.to_ascii_lowercase();
        if let Some(member) = field.values.iter().copied().find(|m| *m == lower) {
            return match field.source {
                Source::Derived { evidence, .. } => {
                    let found = evidence.iter().find(|e| e.name() == member).copied();
                    if found.is_none() {
                        self.err(Diagnostic::new(
                            C::Internal,
                            v.span,
                            format!("`{name}:{member}` has no evidence in the registry"),
                        ));
                    }
                    found.map(Value::Evidence)
                }
                _ => Some(Value::Enum(member)),
            };
        }
        let mut d = Diagnostic::new(
            C::InvalidValue,
            v.span,
            format!("`{}` is not a value of `{name}`", v.text),
        )
        .expected(field.values.iter().map(|x| format!("`{x}`")))
        .found(format!("`{}`", v.text));
        let best = closest(&lower, field.values).or(field.values.first().copied());
        if let Some(best) = best {
            d = d.replace(self.q, v.span, best);
        }
        self.err(d);
        None
    }

    pub(super) fn literal(&mut self, field: &Field, v: &ast::Value) -> Option<Literal> {
        match field.kind {
            FieldKind::Count => match v.text.parse::<i64>() {
                Ok(n) if n >= 0 => Some(Literal::Int(n)),
                _ => {
                    let d = Diagnostic::new(
                        C::InvalidNumber,
                        v.span,
                        format!(
                            "`{}` is a count; expected a non-negative integer",
                            field.name
                        ),
                    )
                    .expected(["an integer"])
                    .found(format!("`{}`", v.text))
                    .replace(self.q, v.span, "1");
                    self.err(d);
                    None
                }
            },
            FieldKind::Number => {
                if let Ok(n) = v.text.parse::<i64>() {
                    return Some(Literal::Int(n));
                }
                match v.text.parse::<f64>() {
                    Ok(x) if x.is_finite() => Some(Literal::Float(x)),
                    _ => {
                        let d = Diagnostic::new(
                            C::InvalidNumber,
                            v.span,
                            format!("`{}` is a number", field.name),
                        )
                        .expected(["a number"])
                        .found(format!("`{}`", v.text))
                        .replace(self.q, v.span, "0");
                        self.err(d);
                        None
                    }
                }
            }
            FieldKind::Date => match parse_date(&v.text) {
                Some(d) => Some(Literal::Date(d)),
                None => {
                    let d = Diagnostic::new(
                        C::InvalidDate,
                        v.span,
                        format!("`{}` is not a date", v.text),
                    )
                    .expected([
                        "`YYYY-MM-DD`",
                        "an RFC 3339 time",
                        "a relative time (`7d`, `12h`, `2w`)",
                        "`today`",
                    ])
                    .found(format!("`{}`", v.text))
                    .replace(self.q, v.span, "7d");
                    self.err(d);
                    None
                }
            },
            _ => None,
        }
    }
}

pub(super) fn clause_value_text(fc: &FieldClause) -> String {
    match &fc.test {
        FieldTest::Match { value } => quote_if_needed(&value.text),
        FieldTest::AnyOf { values } => values
            .first()
            .map(|v| quote_if_needed(&v.text))
            .unwrap_or_default(),
        FieldTest::Compare { value, .. } => quote_if_needed(&value.text),
        FieldTest::Between { low, .. } => quote_if_needed(&low.text),
    }
}

pub(super) fn quote_if_needed(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars().all(|c| {
            !c.is_whitespace()
                && !matches!(
                    c,
                    '(' | ')' | '[' | ']' | '|' | ',' | '"' | '<' | '>' | '=' | '!'
                )
        })
        && !v.starts_with(['-', '~']);
    if plain {
        v.to_string()
    } else {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    }
}
