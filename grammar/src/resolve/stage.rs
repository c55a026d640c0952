//! Pipeline stages in order: group by, count/agg, sort, select, offset, limit.

use super::*;

impl Resolver<'_> {
    // ---- stages ------------------------------------------------------------------------

    /// Resolves the stages after the source; returns whether the result is aggregated.
    pub(super) fn stages(
        &mut self,
        stages: &[ast::Stage],
        unit: &'static Unit,
        out: &mut Vec<PipelineStage>,
    ) -> bool {
        let mut aggregated = false;
        let mut group_keys: Vec<GroupKey> = Vec::new();
        let mut metric_labels: Vec<String> = Vec::new();
        let mut seen: Vec<&'static str> = Vec::new();
        for (i, stage) in stages.iter().enumerate() {
            let next_is_agg = matches!(
                stages.get(i + 1).map(|s| &s.kind),
                Some(StageKind::Count | StageKind::Agg { .. })
            );
            match &stage.kind {
                StageKind::Unit { unit: u, .. } => {
                    let d = Diagnostic::new(
                        C::MisplacedUnitStage,
                        u.span,
                        format!("`{} where ...` can only follow `sessions where ...` as the first stage", u.text),
                    )
                    .hint("a pipeline has one row unit; scope it by session with `sessions where P | <unit> where Q`");
                    let d = self.remove_stage(d, stage.span);
                    self.err(d);
                }
                StageKind::GroupBy { keys } => {
                    if aggregated || seen.contains(&"group_by") {
                        let d = Diagnostic::new(
                            C::StageOrder,
                            stage.span,
                            "`group by` must come before `count`/`agg`, once",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if self.follows_row_stage(&seen, "`group by`", stage.span) {
                        continue;
                    }
                    seen.push("group_by");
                    let resolved: Vec<GroupKey> = keys
                        .iter()
                        .filter_map(|k| self.group_key(k, unit))
                        .collect();
                    group_keys = resolved.clone();
                    out.push(PipelineStage::GroupBy { keys: resolved });
                    if !next_is_agg {
                        aggregated = true;
                        metric_labels.push("count".into());
                        out.push(PipelineStage::Aggregate {
                            metrics: vec![Metric {
                                function: AggFunction::Count,
                                column: None,
                                label: "count".into(),
                            }],
                            implicit: true,
                        });
                    }
                }
                StageKind::Count | StageKind::Agg { .. } => {
                    if aggregated {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            "the query already aggregates; one `count`/`agg` stage per pipeline",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if self.follows_row_stage(&seen, "aggregation", stage.span) {
                        continue;
                    }
                    aggregated = true;
                    let metrics = match &stage.kind {
                        StageKind::Agg { metrics } => metrics
                            .iter()
                            .filter_map(|m| self.metric(m, unit))
                            .collect(),
                        _ => vec![Metric {
                            function: AggFunction::Count,
                            column: None,
                            label: "count".into(),
                        }],
                    };
                    metric_labels.extend(metrics.iter().map(|m: &Metric| m.label.clone()));
                    out.push(PipelineStage::Aggregate {
                        metrics,
                        implicit: false,
                    });
                }
                StageKind::Sort {
                    key, descending, ..
                } => {
                    if seen.contains(&"sort") {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            "one `sort by` stage per pipeline",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if let Some(bad) = seen.iter().find(|s| matches!(**s, "limit" | "offset")) {
                        let d = Diagnostic::new(
                            C::StageOrder,
                            stage.span,
                            format!("`sort by` must come before `{bad}`"),
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    seen.push("sort");
                    if let Some(k) =
                        self.sort_key(key, unit, aggregated, &group_keys, &metric_labels)
                    {
                        out.push(PipelineStage::Sort {
                            key: k,
                            descending: *descending,
                        });
                    }
                }
                StageKind::Select { fields } => {
                    if aggregated {
                        let d = Diagnostic::new(
                            C::StageOrder,
                            stage.span,
                            "`select` picks row columns and cannot follow an aggregate",
                        )
                        .hint("an aggregate's columns are its group keys and metrics");
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if seen.contains(&"select") {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            "one `select` stage per pipeline",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    seen.push("select");
                    let columns = fields
                        .iter()
                        .filter_map(|f| self.column_ref(f, unit, Purpose::Select))
                        .collect();
                    out.push(PipelineStage::Select { columns });
                }
                StageKind::Limit { n } | StageKind::Offset { n } => {
                    let name = if matches!(stage.kind, StageKind::Limit { .. }) {
                        "limit"
                    } else {
                        "offset"
                    };
                    if seen.contains(&name) {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            format!("one `{name}` stage per pipeline"),
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    seen.push(name);
                    out.push(if name == "limit" {
                        PipelineStage::Limit { n: *n }
                    } else {
                        PipelineStage::Offset { n: *n }
                    });
                }
            }
        }
        // offset applies before limit regardless of the written order
        let limit_pos = out
            .iter()
            .position(|s| matches!(s, PipelineStage::Limit { .. }));
        let offset_pos = out
            .iter()
            .position(|s| matches!(s, PipelineStage::Offset { .. }));
        if let (Some(l), Some(o)) = (limit_pos, offset_pos)
            && l < o
        {
            out.swap(l, o);
        }
        aggregated
    }

    /// The correction that removes a stage (from its `|`).
    /// Reports `what` (a grouping or aggregate stage) written after a row stage (sort,
    /// limit, offset, select) it must precede; true when it did.
    pub(super) fn follows_row_stage(
        &mut self,
        seen: &[&'static str],
        what: &str,
        span: Span,
    ) -> bool {
        let Some(bad) = seen
            .iter()
            .find(|s| matches!(**s, "sort" | "limit" | "offset" | "select"))
        else {
            return false;
        };
        let d = Diagnostic::new(
            C::StageOrder,
            span,
            format!("{what} must come before `{bad}`"),
        );
        self.err(self.remove_stage(d, span));
        true
    }

    pub(super) fn remove_stage(&self, d: Diagnostic, span: Span) -> Diagnostic {
        let before = self.q.get(..span.start).unwrap_or("");
        let pipe = before.rfind('|').unwrap_or(span.start);
        let fixed = splice(self.q, Span::new(pipe, span.end), "")
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "));
        match fixed {
            Some(f) if !f.is_empty() => d.correction(f),
            _ => d,
        }
    }

    pub(super) fn group_key(
        &mut self,
        key: &ast::GroupKey,
        unit: &'static Unit,
    ) -> Option<GroupKey> {
        match key {
            ast::GroupKey::Time { bucket, span } => {
                let Some(column) = unit.time_column else {
                    self.err(Diagnostic::new(
                        C::NoTimeColumn,
                        *span,
                        format!("{} rows have no time to bucket", unit.singular),
                    ));
                    return None;
                };
                match TIME_BUCKETS.iter().find(|b| **b == bucket.text) {
                    Some(b) => Some(GroupKey::Time {
                        bucket: b,
                        column,
                        label: format!("time_{b}"),
                    }),
                    None => {
                        let best = closest(&bucket.text, TIME_BUCKETS).unwrap_or("day");
                        let d = Diagnostic::new(
                            C::InvalidTimeBucket,
                            bucket.span,
                            format!("`{}` is not a time bucket", bucket.text),
                        )
                        .expected(TIME_BUCKETS.iter().map(|b| format!("`{b}`")))
                        .found(format!("`{}`", bucket.text))
                        .replace(self.q, *span, &format!("time:{best}"));
                        self.err(d);
                        None
                    }
                }
            }
            ast::GroupKey::Field { field } => {
                if !field.session && field.name == "time" {
                    let d = Diagnostic::new(
                        C::InvalidTimeBucket,
                        field.span,
                        "grouping by time needs a bucket: `time:hour|day|week|month|year`",
                    )
                    .expected(TIME_BUCKETS.iter().map(|b| format!("`time:{b}`")))
                    .replace(self.q, field.span, "time:day");
                    self.err(d);
                    return None;
                }
                let column = self.column_ref(field, unit, Purpose::Group)?;
                Some(GroupKey::Field {
                    label: field.display().replace('.', "_"),
                    column,
                })
            }
        }
    }

    pub(super) fn sort_key(
        &mut self,
        key: &ast::Name,
        unit: &'static Unit,
        aggregated: bool,
        group_keys: &[GroupKey],
        metric_labels: &[String],
    ) -> Option<SortKey> {
        let k = key.text.as_str();
        if aggregated {
            if k == "count" && metric_labels.iter().any(|l| l == "count") {
                return Some(SortKey::Count);
            }
            if k == "key" {
                return Some(SortKey::Key);
            }
            if metric_labels.iter().any(|l| l == k) {
                return Some(SortKey::Metric {
                    label: k.to_string(),
                });
            }
            let group_labels: Vec<String> = group_keys
                .iter()
                .map(|g| match g {
                    GroupKey::Field { label, .. } | GroupKey::Time { label, .. } => label.clone(),
                })
                .collect();
            if group_labels.iter().any(|l| l == k)
                || (k == "time"
                    && group_keys
                        .iter()
                        .any(|g| matches!(g, GroupKey::Time { .. })))
            {
                return Some(SortKey::Key);
            }
            let mut options: Vec<String> = vec!["key".into()];
            options.extend(metric_labels.iter().cloned());
            let opts: Vec<&str> = options.iter().map(String::as_str).collect();
            let best = closest(k, &opts).unwrap_or(if metric_labels.iter().any(|l| l == "count") {
                "count"
            } else {
                "key"
            });
            let d = Diagnostic::new(
                C::StageOrder,
                key.span,
                format!("after an aggregate, `sort by` takes `key` or a metric label, not `{k}`"),
            )
            .expected(options.iter().map(|o| format!("`{o}`")))
            .found(format!("`{k}`"))
            .replace(self.q, key.span, best);
            self.err(d);
            return None;
        }
        if k == "time" {
            return match unit.time_column {
                Some(column) => Some(SortKey::Time { column }),
                None => {
                    self.err(Diagnostic::new(
                        C::NoTimeColumn,
                        key.span,
                        format!("{} rows have no time", unit.singular),
                    ));
                    None
                }
            };
        }
        if k == "count" || k == "key" {
            let d = Diagnostic::new(
                C::StageOrder,
                key.span,
                format!("`sort by {k}` orders aggregate buckets; add `| group by FIELD | count` before it, or sort rows by time"),
            )
            .expected(["`time`", "a field"])
            .found(format!("`{k}`"))
            .replace(self.q, key.span, "time");
            self.err(d);
            return None;
        }
        let fref = FieldRef {
            session: k.starts_with("session."),
            name: k.strip_prefix("session.").unwrap_or(k).to_string(),
            span: key.span,
        };
        let column = self.column_ref(&fref, unit, Purpose::Sort)?;
        Some(SortKey::Field { column })
    }
}
