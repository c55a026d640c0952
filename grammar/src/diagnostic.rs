//! Diagnostics: a closed enum of stable codes and the `Diagnostic` value every stage returns.
//!
//! A diagnostic is data (`{code, span, column, message, expected, found, hints,
//! supported_fields, correction}`), serialisable as JSON; [`render`] draws it once, at the edge,
//! with ariadne and a caret under the query. This module owns no parsing.

use serde::Serialize;

use crate::ast::Span;

/// Stable diagnostic codes. Never reused, never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticCode {
    /// The query is empty.
    EmptyQuery,
    /// The query is longer than [`crate::MAX_QUERY_BYTES`].
    QueryTooLong,
    /// Parentheses, `NOT` or `exists` nest deeper than [`crate::MAX_NESTING`].
    NestingTooDeep,
    /// A quoted string has no closing quote.
    UnterminatedString,
    /// A token cannot continue the query here.
    UnexpectedToken,
    /// The query ends where more was expected.
    UnexpectedEnd,
    /// A unit name is followed by something other than `where`, `|` or the end.
    MissingWhere,
    /// `<unit> where` with no predicate after it.
    EmptyPredicate,
    /// A field has no value (`path`, `path:`).
    MissingValue,
    /// Two clauses of a `where` predicate without `AND`/`OR` between them.
    MissingConjunction,
    /// A `(` is never closed.
    UnclosedParen,
    /// A `)` closes nothing.
    UnmatchedParen,
    /// `and`/`or`/`not` written in lower case inside a `where` predicate.
    LowercaseOperator,
    /// `=`/`>=`/... on a field that is not a count, number or date.
    ComparisonOnTextField,
    /// A field no unit knows.
    UnknownField,
    /// A field that exists, but not for this unit.
    UnsupportedField,
    /// `session.<f>` where `f` is not a session field.
    UnknownSessionField,
    /// A name that is not a unit.
    UnknownUnit,
    /// `exists messages(...)`: exists takes the singular unit name.
    PluralStructuralUnit,
    /// A value outside a field's closed set.
    InvalidValue,
    /// A value that is not a number.
    InvalidNumber,
    /// A value that is not a date or relative time.
    InvalidDate,
    /// A value that is not `true` or `false`.
    InvalidBool,
    /// A pipeline stage that is not one of the supported stages.
    InvalidStage,
    /// `limit`/`offset` without a non-negative integer.
    InvalidInteger,
    /// Pipeline stages in an order that cannot run.
    StageOrder,
    /// The same stage twice.
    DuplicateStage,
    /// A `<unit> where` stage anywhere but directly after `sessions where ...`.
    MisplacedUnitStage,
    /// An aggregate function that does not exist.
    UnknownAggregate,
    /// A field that is not numeric used with sum/avg/...
    NotAMetric,
    /// `pNN` outside p1..p99.
    InvalidPercentile,
    /// A field that `group by` cannot group.
    NotGroupable,
    /// `time:` with a bucket other than hour/day/week/month/year.
    InvalidTimeBucket,
    /// A time stage on a unit whose rows have no time.
    NoTimeColumn,
    /// `NOT`/`-` in front of a ranked leaf (`near:`, `semantic:`, `~`).
    NegatedRankedLeaf,
    /// `lane:` in a query that is not in the ranked form (nothing is ranked to pick a lane for).
    LaneWithoutRanking,
    /// `exists`, `seq`, `~`, `near:`, `lineage:` or bare text outside a session predicate.
    SessionOnlyPredicate,
    /// A malformed `seq(...)`.
    InvalidSequence,
    /// A malformed `lineage:` / `near:` value.
    InvalidRef,
    /// `with` projections on a query that does not select sessions.
    ProjectionNotAllowed,
    /// A column that the projected unit's table does not have.
    UnknownColumn,
    /// A malformed or unsupported bracket clause.
    InvalidBracket,
    /// Bare text inside a `where` predicate.
    BareTextInPredicate,
    /// A broken invariant of the parser itself.
    Internal,
}

impl DiagnosticCode {
    /// The stable string of the code (as serialised).
    pub fn as_str(self) -> &'static str {
        use DiagnosticCode as C;
        match self {
            C::EmptyQuery => "empty_query",
            C::QueryTooLong => "query_too_long",
            C::NestingTooDeep => "nesting_too_deep",
            C::UnterminatedString => "unterminated_string",
            C::UnexpectedToken => "unexpected_token",
            C::UnexpectedEnd => "unexpected_end",
            C::MissingWhere => "missing_where",
            C::EmptyPredicate => "empty_predicate",
            C::MissingValue => "missing_value",
            C::MissingConjunction => "missing_conjunction",
            C::UnclosedParen => "unclosed_paren",
            C::UnmatchedParen => "unmatched_paren",
            C::LowercaseOperator => "lowercase_operator",
            C::ComparisonOnTextField => "comparison_on_text_field",
            C::UnknownField => "unknown_field",
            C::UnsupportedField => "unsupported_field",
            C::UnknownSessionField => "unknown_session_field",
            C::UnknownUnit => "unknown_unit",
            C::PluralStructuralUnit => "plural_structural_unit",
            C::InvalidValue => "invalid_value",
            C::InvalidNumber => "invalid_number",
            C::InvalidDate => "invalid_date",
            C::InvalidBool => "invalid_bool",
            C::InvalidStage => "invalid_stage",
            C::InvalidInteger => "invalid_integer",
            C::StageOrder => "stage_order",
            C::DuplicateStage => "duplicate_stage",
            C::MisplacedUnitStage => "misplaced_unit_stage",
            C::UnknownAggregate => "unknown_aggregate",
            C::NotAMetric => "not_a_metric",
            C::InvalidPercentile => "invalid_percentile",
            C::NotGroupable => "not_groupable",
            C::InvalidTimeBucket => "invalid_time_bucket",
            C::NoTimeColumn => "no_time_column",
            C::NegatedRankedLeaf => "negated_ranked_leaf",
            C::LaneWithoutRanking => "lane_without_ranking",
            C::SessionOnlyPredicate => "session_only_predicate",
            C::InvalidSequence => "invalid_sequence",
            C::InvalidRef => "invalid_ref",
            C::ProjectionNotAllowed => "projection_not_allowed",
            C::UnknownColumn => "unknown_column",
            C::InvalidBracket => "invalid_bracket",
            C::BareTextInPredicate => "bare_text_in_predicate",
            C::Internal => "internal",
        }
    }
}

impl std::fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One query error: where, what, what was expected, and a correction that parses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// The stable code.
    pub code: DiagnosticCode,
    /// Byte range in the query.
    pub span: Span,
    /// 1-based character column of `span.start`.
    pub column: usize,
    /// One sentence saying what is wrong.
    pub message: String,
    /// What could have come here instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
    /// What came instead (`end of query` at the end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// Hints on how to fix it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// For field errors: the fields the unit supports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supported_fields: Vec<String>,
    /// The whole query, corrected; always parses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correction: Option<String>,
}

impl Diagnostic {
    /// A new diagnostic; the column is filled in by [`Diagnostic::locate`].
    pub fn new(code: DiagnosticCode, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            span,
            column: 0,
            message: message.into(),
            expected: Vec::new(),
            found: None,
            hints: Vec::new(),
            supported_fields: Vec::new(),
            correction: None,
        }
    }

    /// Sets what was expected.
    pub fn expected<I, S>(mut self, items: I) -> Diagnostic
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.expected = items.into_iter().map(Into::into).collect();
        self
    }

    /// Sets what was found.
    pub fn found(mut self, found: impl Into<String>) -> Diagnostic {
        self.found = Some(found.into());
        self
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hints.push(hint.into());
        self
    }

    /// Sets the supported fields.
    pub fn supported<I, S>(mut self, items: I) -> Diagnostic
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.supported_fields = items.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the correction (the whole corrected query).
    pub fn correction(mut self, corrected: impl Into<String>) -> Diagnostic {
        self.correction = Some(corrected.into());
        self
    }

    /// Sets the correction to the query with `span` replaced by `with`.
    pub fn replace(self, query: &str, span: Span, with: &str) -> Diagnostic {
        match splice(query, span, with) {
            Some(fixed) => self.correction(fixed),
            None => self,
        }
    }

    /// Fills in the 1-based column from the query text.
    pub fn locate(mut self, query: &str) -> Diagnostic {
        self.column = column_of(query, self.span.start);
        self
    }
}

/// `query` with the byte range `span` replaced by `with`, if the range is valid.
pub fn splice(query: &str, span: Span, with: &str) -> Option<String> {
    let head = query.get(..span.start)?;
    let tail = query.get(span.end..)?;
    Some(format!("{head}{with}{tail}"))
}

/// The 1-based character column of byte offset `offset` in `query`.
pub fn column_of(query: &str, offset: usize) -> usize {
    match query.get(..offset) {
        Some(head) => head.chars().count() + 1,
        None => query.chars().count() + 1,
    }
}

/// The diagnostics of one query, as `{"diagnostics": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostics {
    /// Every diagnostic, in query order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Diagnostics {
    /// One diagnostic.
    pub fn one(d: Diagnostic) -> Diagnostics {
        Diagnostics {
            diagnostics: vec![d],
        }
    }

    /// The first diagnostic, if any.
    pub fn first(&self) -> Option<&Diagnostic> {
        self.diagnostics.first()
    }

    /// As JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{\"diagnostics\":[]}".to_string())
    }
}

impl std::fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for d in &self.diagnostics {
            writeln!(f, "error[{}] at column {}: {}", d.code, d.column, d.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Renders diagnostics with ariadne: the query, a caret under the span, expected/found, hints and
/// the correction. `color` turns ANSI colours on (a TTY).
pub fn render(query: &str, diagnostics: &Diagnostics, color: bool) -> String {
    use ariadne::{Config, IndexType, Label, Report, ReportKind, Source};
    let mut out = Vec::new();
    let len = query.len();
    for d in &diagnostics.diagnostics {
        // Byte offsets on character boundaries (ariadne slices the query with them).
        let floor = |i: usize| {
            (0..=i)
                .rev()
                .find(|&j| query.is_char_boundary(j))
                .unwrap_or(0)
        };
        let start = floor(d.span.start.min(len));
        let end = floor(d.span.end.clamp(start, len));
        // ariadne needs a non-empty range to draw a caret: an empty span covers the character
        // after it (at the end of the query, one byte past it).
        let range = if start == end {
            start..start + query[start..].chars().next().map_or(1, char::len_utf8)
        } else {
            start..end
        };
        let mut label = Label::new(("query", range.clone()));
        label = label.with_message(label_text(d));
        let mut report = Report::build(ReportKind::Error, ("query", range))
            .with_config(
                Config::default()
                    .with_color(color)
                    .with_index_type(IndexType::Byte),
            )
            .with_code(d.code.as_str())
            .with_message(&d.message)
            .with_label(label);
        for h in &d.hints {
            report = report.with_help(h);
        }
        if !d.supported_fields.is_empty() {
            report = report.with_note(format!(
                "supported fields: {}",
                d.supported_fields.join(", ")
            ));
        }
        if let Some(c) = &d.correction {
            report = report.with_note(format!("try: {c}"));
        }
        // A trailing space gives the end-of-query caret a column to sit on.
        let source = format!("{query} ");
        let _ = report
            .finish()
            .write(("query", Source::from(source)), &mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn label_text(d: &Diagnostic) -> String {
    match (&d.expected.is_empty(), &d.found) {
        (false, Some(found)) => format!("expected {}, found {}", d.expected.join(" or "), found),
        (false, None) => format!("expected {}", d.expected.join(" or ")),
        (true, Some(found)) => format!("found {found}"),
        (true, None) => d.message.clone(),
    }
}
