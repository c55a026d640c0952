//! Pipeline stages after `|`: `sort by`, `group by`, `count`, `agg`, `select`, `limit`,
//! `offset` and a unit stage.

use super::*;

impl Parser<'_> {
    // ---- stages -------------------------------------------------------------------------

    pub(super) fn stage(&mut self) -> PResult<Stage> {
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

    pub(super) fn unknown_stage(&self, t: &Token, w: &str) -> Diagnostic {
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
        if let Some(best) = crate::suggest::closest(w, &candidates) {
            d = d.replace(self.q, t.span, best);
        }
        d
    }

    pub(super) fn unit_stage(&mut self) -> PResult<StageKind> {
        let t = self.bump();
        let unit = word_name(&t);
        let (_, predicate) = self.unit_rest(&unit)?;
        Ok(StageKind::Unit { unit, predicate })
    }

    pub(super) fn expect_by(&mut self, stage: &str) -> PResult<()> {
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

    pub(super) fn sort_stage(&mut self) -> PResult<StageKind> {
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

    pub(super) fn group_stage(&mut self) -> PResult<StageKind> {
        self.bump();
        self.expect_by("group")?;
        let keys = self.comma_separated(Self::group_key)?;
        Ok(StageKind::GroupBy { keys })
    }

    pub(super) fn group_key(&mut self) -> PResult<GroupKey> {
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

    pub(super) fn group_key_error(&self) -> Diagnostic {
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

    pub(super) fn agg_stage(&mut self) -> PResult<StageKind> {
        self.bump();
        let metrics = self.comma_separated(Self::metric_spec)?;
        Ok(StageKind::Agg { metrics })
    }

    pub(super) fn metric_spec(&mut self) -> PResult<MetricSpec> {
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

    pub(super) fn metric_error(&self) -> Diagnostic {
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

    pub(super) fn select_stage(&mut self) -> PResult<StageKind> {
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
    pub(super) fn comma_separated<T>(
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

    pub(super) fn int_stage(&mut self, w: &str) -> PResult<StageKind> {
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
}
