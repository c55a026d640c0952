//! Predicates: Boolean structure, field clauses bound to the registry, session-only leaves
//! (`exists`, `seq`, `~`, text), ranked leaves (`near:`, `semantic:`) and `lineage:`.

use super::*;

impl Resolver<'_> {
    // ---- predicates --------------------------------------------------------------------

    pub(super) fn expr(&mut self, e: &Expr, ctx: Ctx) -> Option<Pred> {
        match &e.kind {
            ExprKind::Or { operands } => {
                let ops: Vec<Option<Pred>> = operands.iter().map(|o| self.expr(o, ctx)).collect();
                let ops: Option<Vec<Pred>> = ops.into_iter().collect();
                Some(Pred::Or { operands: ops? })
            }
            ExprKind::And { operands, .. } => {
                let ops: Vec<Option<Pred>> = operands.iter().map(|o| self.expr(o, ctx)).collect();
                let ops: Option<Vec<Pred>> = ops.into_iter().collect();
                Some(Pred::And { operands: ops? })
            }
            ExprKind::Not { operand, .. } => {
                let inner = self.expr(
                    operand,
                    Ctx {
                        negated: true,
                        ..ctx
                    },
                )?;
                Some(Pred::Not {
                    operand: Box::new(inner),
                })
            }
            ExprKind::Group { inner } => self.expr(inner, ctx),
            ExprKind::Field(fc) => self.field_clause(fc, ctx),
            ExprKind::Text { text, quoted } => {
                if !self.session_only(e, ctx, "text search") {
                    return None;
                }
                Some(Pred::Text {
                    text: text.clone(),
                    phrase: *quoted,
                })
            }
            ExprKind::Fts { text } => {
                let unit = unit_def(ctx.unit);
                if !ctx.session_level && !unit.fts {
                    self.err(self.session_only_diag(e, ctx, "`~` full-text leaves"));
                    return None;
                }
                Some(Pred::Fts {
                    query: text.clone(),
                })
            }
            ExprKind::Exists { unit, predicate } => {
                if !self.session_only(e, ctx, "`exists`") {
                    return None;
                }
                let child = match registry::unit_by_singular(&unit.text) {
                    Some(u) => u,
                    None => {
                        self.err(Diagnostic::new(
                            C::UnknownUnit,
                            unit.span,
                            format!("`{}` is not a unit", unit.text),
                        ));
                        return None;
                    }
                };
                let inner = self.expr(
                    predicate,
                    Ctx {
                        unit: child.id,
                        session_level: false,
                        negated: false,
                    },
                )?;
                Some(Pred::Exists {
                    unit: child.id,
                    predicate: Box::new(inner),
                })
            }
            ExprKind::Seq { steps } => {
                if !self.session_only(e, ctx, "`seq`") {
                    return None;
                }
                let mut out = Vec::new();
                for step in steps {
                    let mut clauses = Vec::new();
                    for c in &step.clauses {
                        if c.field.session || !registry::SEQ_FIELDS.contains(&c.field.name.as_str())
                        {
                            let d = Diagnostic::new(
                                C::InvalidSequence,
                                c.field.span,
                                format!(
                                    "`{}` cannot be used in a sequence step",
                                    c.field.display()
                                ),
                            )
                            .supported(registry::SEQ_FIELDS.iter().copied())
                            .found(format!("`{}`", c.field.display()));
                            let d = d.replace(self.q, c.field.span, "action");
                            self.err(d);
                            continue;
                        }
                        let actx = Ctx {
                            unit: UnitId::Actions,
                            session_level: false,
                            negated: false,
                        };
                        if let Some(p) = self.field_clause(c, actx) {
                            clauses.push(p);
                        }
                    }
                    out.push(if clauses.len() == 1 {
                        clauses.pop()?
                    } else {
                        Pred::And { operands: clauses }
                    });
                }
                Some(Pred::Seq { steps: out })
            }
        }
    }

    pub(super) fn session_only(&mut self, e: &Expr, ctx: Ctx, what: &str) -> bool {
        if ctx.session_level {
            return true;
        }
        let d = self.session_only_diag(e, ctx, what);
        self.err(d);
        false
    }

    pub(super) fn session_only_diag(&self, e: &Expr, ctx: Ctx, what: &str) -> Diagnostic {
        let unit = unit_def(ctx.unit);
        let clause = e.span.text(self.q);
        let d = Diagnostic::new(
            C::SessionOnlyPredicate,
            e.span,
            format!(
                "{what} cannot be used in a predicate over {}: it selects sessions",
                unit.name
            ),
        )
        .hint(format!(
            "scope the rows by session instead: `sessions where {clause} | {} where ...`",
            unit.name
        ));
        // Correction: drop the clause if it is one operand of the query's only AND at top level.
        match self
            .remove_operand(e.span)
            .or_else(|| self.to_scope_form(e.span, unit))
        {
            Some(fixed) => d.correction(fixed),
            None => d,
        }
    }

    /// `<unit> where <clause> REST` → `sessions where <clause> | <unit> REST`.
    pub(super) fn to_scope_form(&self, span: Span, unit: &Unit) -> Option<String> {
        let head = format!("{} where ", unit.name);
        let before = self.q.get(..span.start)?;
        if before.trim_start() != head {
            return None;
        }
        let clause = span.text(self.q);
        let rest = self.q.get(span.end..)?.trim_start();
        if !(rest.is_empty() || rest.starts_with('|')) {
            return None;
        }
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(" {rest}")
        };
        Some(format!("sessions where {clause} | {}{rest}", unit.name))
    }

    /// The query without the clause at `span` and its `AND` (when that leaves a valid shape).
    pub(super) fn remove_operand(&self, span: Span) -> Option<String> {
        let after = self.q.get(span.end..)?;
        let before = self.q.get(..span.start)?;
        if let Some(rest) = after.strip_prefix(" AND ") {
            return Some(format!("{before}{rest}"));
        }
        if let Some(head) = before.strip_suffix(" AND ") {
            return Some(format!("{head}{after}"));
        }
        None
    }

    pub(super) fn field_clause(&mut self, fc: &FieldClause, ctx: Ctx) -> Option<Pred> {
        let (field, scope) = self.lookup(&fc.field, fc, ctx)?;
        // ranked leaves
        match field.kind {
            FieldKind::Semantic => return self.semantic(fc, field, ctx),
            FieldKind::Lineage => return self.lineage(fc, ctx),
            _ => {}
        }
        let unit = if scope == FieldScope::Session {
            UnitId::Sessions
        } else {
            ctx.unit
        };
        let test = self.test(fc, field)?;
        Some(Pred::Field(FieldPred {
            unit,
            scope,
            field: field.name,
            kind: field.kind,
            source: field.source,
            test,
            span: fc.span,
        }))
    }

    pub(super) fn lookup(
        &mut self,
        fref: &FieldRef,
        fc: &FieldClause,
        ctx: Ctx,
    ) -> Option<(&'static Field, FieldScope)> {
        let unit = unit_def(ctx.unit);
        if fref.session {
            if let Some(f) = session_scoped_field(&fref.name) {
                return Some((f, FieldScope::Session));
            }
            let names = session_scoped_names();
            let mut d = Diagnostic::new(
                C::UnknownSessionField,
                fref.span,
                format!("`session.{}` is not a session field", fref.name),
            )
            .found(format!("`session.{}`", fref.name))
            .supported(names.iter().map(|n| format!("session.{n}")));
            if let Some(best) = closest(&fref.name, &names) {
                d = d.hint(format!("did you mean `session.{best}`?")).replace(
                    self.q,
                    fref.span,
                    &format!("session.{best}"),
                );
            }
            self.err(d);
            return None;
        }
        if !ctx.session_level
            && unit.field(&fref.name).is_none()
            && let Some(f) = unit_def(UnitId::Sessions).field(&fref.name)
            && f.source == Source::Lane
        {
            let e = Expr {
                kind: ExprKind::Field(fc.clone()),
                span: fc.span,
            };
            let d = self.session_only_diag(&e, ctx, &format!("`{}:`", f.name));
            self.err(d);
            return None;
        }
        if let Some(f) = unit.field(&fref.name) {
            if (matches!(f.kind, FieldKind::Semantic | FieldKind::Lineage)
                || f.source == Source::Lane)
                && !ctx.session_level
            {
                let d = self.session_only_diag(
                    &Expr {
                        kind: ExprKind::Field(fc.clone()),
                        span: fc.span,
                    },
                    ctx,
                    &format!("`{}:`", f.name),
                );
                self.err(d);
                return None;
            }
            return Some((f, FieldScope::Own));
        }
        self.err(self.unsupported_field(fref, fc, unit, ctx));
        None
    }

    pub(super) fn unsupported_field(
        &self,
        fref: &FieldRef,
        fc: &FieldClause,
        unit: &Unit,
        ctx: Ctx,
    ) -> Diagnostic {
        let name = fref.name.as_str();
        let known_somewhere = registry::UNITS.iter().any(|u| u.field(name).is_some());
        let code = if known_somewhere {
            C::UnsupportedField
        } else {
            C::UnknownField
        };
        let message = if known_somewhere {
            format!(
                "field `{name}` is not supported for {} predicates",
                unit.singular
            )
        } else {
            format!("unknown field `{name}` for {} predicates", unit.singular)
        };
        let names = unit.field_names();
        let mut d = Diagnostic::new(code, fref.span, message)
            .found(format!("`{name}`"))
            .supported(names.iter().copied());
        // 1. a session field on a child unit → session.<f>
        if unit.id != UnitId::Sessions && session_scoped_field(name).is_some() {
            return d
                .hint(format!(
                    "`{name}` is a session field: scope the rows with `session.{name}`"
                ))
                .replace(self.q, fref.span, &format!("session.{name}"));
        }
        // 2. sessions: text → contains
        if unit.id == UnitId::Sessions && matches!(name, "text" | "body" | "content") {
            let value = clause_value_text(fc);
            return d
                .hint("session content is searched with `contains:` (substring) or `~\"...\"` (full text)")
                .replace(self.q, fc.span, &format!("contains:{value}"));
        }
        // 3. sessions: a child unit's field → exists <unit>(...)
        if unit.id == UnitId::Sessions
            && ctx.session_level
            && let Some(child) = registry::UNITS
                .iter()
                .find(|u| u.id != UnitId::Sessions && u.field(name).is_some())
        {
            let clause = fc.span.text(self.q);
            return d
                .hint(format!(
                    "`{name}` is a field of {}: test it with `exists {}(...)`",
                    child.name, child.singular
                ))
                .replace(
                    self.q,
                    fc.span,
                    &format!("exists {}({clause})", child.singular),
                );
        }
        // 4. did you mean
        if let Some(best) = closest(name, &names) {
            d = d
                .hint(format!("did you mean `{best}`?"))
                .replace(self.q, fref.span, best);
        } else if !known_somewhere && !fc.field.session {
            let text = fc.span.text(self.q).replace('"', "");
            d = d
                .hint("to search for text containing `:`, quote it: \"a:b\"")
                .replace(self.q, fc.span, &format!("\"{text}\""));
        }
        d
    }

    pub(super) fn semantic(&mut self, fc: &FieldClause, field: &Field, ctx: Ctx) -> Option<Pred> {
        if ctx.negated {
            let d = Diagnostic::new(
                C::NegatedRankedLeaf,
                fc.span,
                format!("a ranked `{}:` leaf cannot be negated", field.name),
            )
            .hint("ranked leaves order sessions by similarity; there is no \"not similar\" set")
            .found(format!("`NOT {}`", fc.span.text(self.q)));
            let d = match self.unnegate(fc.span) {
                Some(fixed) => d.correction(fixed),
                None => d,
            };
            self.err(d);
            return None;
        }
        let value = match &fc.test {
            FieldTest::Match { value } => value,
            _ => {
                self.err(
                    Diagnostic::new(
                        C::InvalidRef,
                        fc.span,
                        format!(
                            "`{}:` takes a text or a session: `{}:\"text\"`",
                            field.name, field.name
                        ),
                    )
                    .replace(
                        self.q,
                        fc.span,
                        &format!("{}:\"text\"", field.name),
                    ),
                );
                return None;
            }
        };
        let probe = if value.quoted {
            SemanticProbe::Text(value.text.clone())
        } else if let Some(id) = value.text.strip_prefix("id:") {
            SemanticProbe::Session(id.to_string())
        } else if let Some(t) = value.text.strip_prefix("text:") {
            SemanticProbe::Text(t.to_string())
        } else {
            SemanticProbe::Text(value.text.clone())
        };
        let empty = match &probe {
            SemanticProbe::Text(t) | SemanticProbe::Session(t) => t.trim().is_empty(),
        };
        if empty {
            self.err(
                Diagnostic::new(C::InvalidRef, value.span, "the semantic probe is empty").replace(
                    self.q,
                    fc.span,
                    &format!("{}:\"text\"", field.name),
                ),
            );
            return None;
        }
        Some(Pred::Semantic { probe })
    }

    /// The query with the `NOT `/`-` directly before `span` removed.
    pub(super) fn unnegate(&self, span: Span) -> Option<String> {
        let before = self.q.get(..span.start)?;
        let after = self.q.get(span.start..)?;
        if let Some(h) = before.strip_suffix("NOT ") {
            return Some(format!("{h}{after}"));
        }
        if let Some(h) = before.strip_suffix('-') {
            return Some(format!("{h}{after}"));
        }
        None
    }

    pub(super) fn lineage(&mut self, fc: &FieldClause, _ctx: Ctx) -> Option<Pred> {
        if let FieldTest::Match { value } = &fc.test {
            if let Some(id) = value.text.strip_prefix("id:")
                && !id.is_empty()
            {
                return Some(Pred::Lineage {
                    session_id: id.to_string(),
                });
            }
            let d = Diagnostic::new(
                C::InvalidRef,
                value.span,
                "`lineage:` takes a session: `lineage:id:<session-id>`",
            )
            .expected(["`id:<session-id>`"])
            .found(format!("`{}`", value.text));
            let fixed = if value.text.is_empty() {
                "SESSION"
            } else {
                value.text.as_str()
            };
            self.err(d.replace(self.q, value.span, &format!("id:{fixed}")));
            return None;
        }
        self.err(Diagnostic::new(
            C::InvalidRef,
            fc.span,
            "`lineage:` takes a session: `lineage:id:<session-id>`",
        ));
        None
    }
}
