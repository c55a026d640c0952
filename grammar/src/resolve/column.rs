//! Column references (`group by`, `select`, `sort by`, metrics) and `agg` metrics.

use super::*;

impl Resolver<'_> {
    pub(super) fn column_ref(
        &mut self,
        fref: &FieldRef,
        unit: &'static Unit,
        purpose: Purpose,
    ) -> Option<ColumnRef> {
        let (field, scope, owner) = if fref.session {
            match session_scoped_field(&fref.name) {
                Some(f) => (f, FieldScope::Session, unit_def(UnitId::Sessions)),
                None => {
                    let names = session_scoped_names();
                    let mut d = Diagnostic::new(
                        C::UnknownSessionField,
                        fref.span,
                        format!("`session.{}` is not a session field", fref.name),
                    )
                    .supported(names.iter().map(|n| format!("session.{n}")));
                    if let Some(best) = closest(&fref.name, &names) {
                        d = d.replace(self.q, fref.span, &format!("session.{best}"));
                    }
                    self.err(d);
                    return None;
                }
            }
        } else {
            // A column name of the unit's table stands for the field reading it
            // (`word_count` for `words`): any numeric column is a metric, as DESIGN.md says.
            let by_column = || {
                unit.fields
                    .iter()
                    .find(|f| f.source.column() == Some(fref.name.as_str()))
            };
            match unit.field(&fref.name).or_else(by_column) {
                Some(f) => (f, FieldScope::Own, unit),
                None => {
                    // A raw column of the unit's table (one no field reads, like
                    // `session_id`) can be selected, grouped by, sorted by and counted
                    // distinct; metrics need a field's kind.
                    if purpose != Purpose::Metric
                        && let Some(column) = unit.schema.query_column(&fref.name)
                    {
                        let column = column.name;
                        return Some(ColumnRef {
                            scope: FieldScope::Own,
                            field: fref.name.clone(),
                            source: Source::Column { column },
                        });
                    }
                    let candidates = purpose.candidates(unit);
                    let mut d = Diagnostic::new(
                        C::UnsupportedField,
                        fref.span,
                        format!(
                            "`{}` is not a field of {} {}",
                            fref.name,
                            unit.name,
                            purpose.noun()
                        ),
                    )
                    .found(format!("`{}`", fref.name))
                    .supported(candidates.iter().copied());
                    if session_scoped_field(&fref.name).is_some() && unit.id != UnitId::Sessions {
                        d = d.replace(self.q, fref.span, &format!("session.{}", fref.name));
                    } else if let Some(best) = closest(&fref.name, &candidates) {
                        d = d.replace(self.q, fref.span, best);
                    }
                    self.err(d);
                    return None;
                }
            }
        };
        let ok = match purpose {
            Purpose::Group => field.groupable,
            Purpose::Metric => field.metric,
            Purpose::Select | Purpose::Sort | Purpose::Distinct => field.source.column().is_some(),
        };
        if !ok {
            let candidates = purpose.candidates(owner);
            let code = match purpose {
                Purpose::Group => C::NotGroupable,
                Purpose::Metric => C::NotAMetric,
                _ => C::UnsupportedField,
            };
            let prefix = if scope == FieldScope::Session {
                "session."
            } else {
                ""
            };
            let mut d = Diagnostic::new(
                code,
                fref.span,
                format!(
                    "`{}` cannot be used in {} {}",
                    fref.display(),
                    owner.name,
                    purpose.noun()
                ),
            )
            .found(format!("`{}`", fref.display()))
            .supported(candidates.iter().map(|c| format!("{prefix}{c}")));
            let first = purpose.first_candidate(owner);
            if let Some(best) = closest(&fref.name, &candidates).or(first) {
                d = d.replace(self.q, fref.span, &format!("{prefix}{best}"));
            }
            self.err(d);
            return None;
        }
        Some(ColumnRef {
            scope,
            field: field.name.to_string(),
            source: field.source,
        })
    }

    pub(super) fn metric(&mut self, m: &ast::MetricSpec, unit: &'static Unit) -> Option<Metric> {
        let fname = m.function.text.as_str();
        let function = match fname {
            "count" => AggFunction::Count,
            "count_distinct" => AggFunction::CountDistinct,
            "sum" => AggFunction::Sum,
            "avg" => AggFunction::Avg,
            "min" => AggFunction::Min,
            "max" => AggFunction::Max,
            "median" => AggFunction::Median,
            "stddev" => AggFunction::Stddev,
            p if p.len() > 1
                && p.strip_prefix('p')
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())) =>
            {
                match p.get(1..).and_then(|n| n.parse::<u8>().ok()) {
                    Some(n) if (1..=99).contains(&n) => AggFunction::Percentile(n),
                    _ => {
                        let d = Diagnostic::new(
                            C::InvalidPercentile,
                            m.function.span,
                            format!("`{p}` is not a percentile; use p1..p99"),
                        )
                        .expected(["`p1`..`p99`"])
                        .replace(self.q, m.function.span, "p99");
                        self.err(d);
                        return None;
                    }
                }
            }
            other => {
                // `count`, every function of the registry, and the usual percentiles.
                let known: Vec<&str> = std::iter::once("count")
                    .chain(
                        registry::AGG_FUNCTIONS
                            .iter()
                            .copied()
                            .filter(|f| *f != "pNN"),
                    )
                    .chain(["p50", "p90", "p99"])
                    .collect();
                let mut d = Diagnostic::new(
                    C::UnknownAggregate,
                    m.function.span,
                    format!("`{other}` is not an aggregate function"),
                )
                .expected(registry::AGG_FUNCTIONS.iter().map(|f| format!("`{f}`")))
                .found(format!("`{other}`"));
                if let Some(best) = closest(other, &known) {
                    d = d.replace(self.q, m.function.span, best);
                }
                self.err(d);
                return None;
            }
        };
        let Some(fref) = &m.field else {
            if function == AggFunction::Count {
                return Some(Metric {
                    function,
                    column: None,
                    label: "count".into(),
                });
            }
            self.err(Diagnostic::new(
                C::NotAMetric,
                m.span,
                format!("`{fname}` needs a field: `{fname}:FIELD`"),
            ));
            return None;
        };
        if function == AggFunction::Count {
            let d = Diagnostic::new(
                C::UnknownAggregate,
                m.span,
                "`count` takes no field; count distinct values with `count_distinct:FIELD`",
            )
            .replace(self.q, m.function.span, "count_distinct");
            self.err(d);
            return None;
        }
        let purpose = match function {
            AggFunction::CountDistinct => Purpose::Distinct,
            _ => Purpose::Metric,
        };
        if purpose == Purpose::Metric && self.is_plain_column(fref, unit) {
            let d = Diagnostic::new(
                C::NotAMetric,
                fref.span,
                format!(
                    "`{}` is not numeric; `{fname}` needs a count or number field",
                    fref.display()
                ),
            )
            .found(format!("`{}`", fref.display()))
            .supported(Purpose::Metric.candidates(unit))
            .hint(format!(
                "count its distinct values with `count_distinct:{}`, or group by it",
                fref.display()
            ))
            .replace(self.q, m.function.span, "count_distinct");
            self.err(d);
            return None;
        }
        let column = self.column_ref(fref, unit, purpose)?;
        // booleans only in sum/avg
        let owner = if column.scope == FieldScope::Session {
            unit_def(UnitId::Sessions)
        } else {
            unit
        };
        if let Some(f) = owner.field(&column.field)
            && f.is_bool()
            && !matches!(
                function,
                AggFunction::Sum | AggFunction::Avg | AggFunction::CountDistinct
            )
        {
            let d = Diagnostic::new(
                C::NotAMetric,
                fref.span,
                format!(
                    "`{}` is a boolean; booleans count as 0/1 in `sum` and `avg` only",
                    fref.display()
                ),
            )
            .replace(self.q, m.function.span, "avg");
            self.err(d);
            return None;
        }
        let fn_label = match function {
            AggFunction::Percentile(n) => format!("p{n}"),
            _ => fname.to_string(),
        };
        Some(Metric {
            function,
            label: format!("{fn_label}_{}", fref.display().replace('.', "_")),
            column: Some(column),
        })
    }

    /// A field with a column of its own that is not numeric.
    pub(super) fn is_plain_column(&self, fref: &FieldRef, unit: &'static Unit) -> bool {
        let f = if fref.session {
            session_scoped_field(&fref.name)
        } else {
            unit.field(&fref.name)
        };
        f.is_some_and(|f| f.source.column().is_some() && !f.metric)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    Group,
    Metric,
    Select,
    Sort,
    Distinct,
}

impl Purpose {
    pub(super) fn noun(self) -> &'static str {
        match self {
            Purpose::Group => "groups",
            Purpose::Metric => "metrics",
            Purpose::Select => "selections",
            Purpose::Sort => "sort keys",
            Purpose::Distinct => "distinct counts",
        }
    }

    pub(super) fn first_candidate(self, unit: &Unit) -> Option<&'static str> {
        unit.fields
            .iter()
            .find(|f| match self {
                Purpose::Group => f.groupable,
                Purpose::Metric => f.metric && !f.is_bool(),
                _ => f.source.column().is_some(),
            })
            .map(|f| f.name)
    }

    pub(super) fn candidates(self, unit: &Unit) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = unit
            .fields
            .iter()
            .filter(|f| match self {
                Purpose::Group => f.groupable,
                Purpose::Metric => f.metric,
                _ => f.source.column().is_some(),
            })
            .map(|f| f.name)
            .collect();
        v.sort_unstable();
        v
    }
}
