//! Assertions: tags, notes and imported claims.

use super::values::*;
use super::{Field, FieldKind as K, Table, Unit, UnitId as U, col, declared};

const ASSERTION_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("assertion_id"),
        "assertion id or a prefix of it",
        "id:a1",
    ),
    Field::new(
        "kind",
        K::Equality,
        col("kind"),
        "assertion kind (tag, note, decision, caveat, ...)",
        "kind:decision",
    )
    .group(),
    Field::new("key", K::Equality, col("key"), "assertion key", "key:owner").group(),
    Field::new(
        "value",
        K::Substring,
        col("value"),
        "assertion value",
        "value:alice",
    ),
    Field::new(
        "text",
        K::Substring,
        col("body_text"),
        "assertion body substring",
        "text:review",
    ),
    Field::new(
        "body",
        K::Substring,
        col("body_text"),
        "alias of text",
        "body:review",
    ),
    Field::new(
        "target",
        K::Ref,
        col("target_ref"),
        "the ref the assertion is about (a bare id is a session's)",
        "target:session:codex-session:abc",
    )
    .group(),
    Field::new(
        "target_ref",
        K::Ref,
        col("target_ref"),
        "alias of target",
        "target_ref:session:codex-session:abc",
    )
    .group(),
    Field::new(
        "scope",
        K::Prefix,
        col("scope_ref"),
        "scope ref of the assertion",
        "scope:repo:acme",
    )
    .group(),
    Field::new(
        "scope_ref",
        K::Prefix,
        col("scope_ref"),
        "alias of scope",
        "scope_ref:repo:acme",
    )
    .group(),
    Field::new(
        "author",
        K::Equality,
        col("author_ref"),
        "who wrote the assertion",
        "author:user",
    )
    .group(),
    Field::new(
        "author_ref",
        K::Equality,
        col("author_ref"),
        "alias of author",
        "author_ref:user",
    )
    .group(),
    Field::new(
        "author_kind",
        K::Equality,
        col("author_kind"),
        "kind of author (user, agent, ...)",
        "author_kind:user",
    )
    .group(),
    Field::new(
        "status",
        K::Enum,
        col("status"),
        "lifecycle status",
        "status:active",
    )
    .vals(ASSERTION_STATUS)
    .group(),
    Field::new(
        "visibility",
        K::Equality,
        col("visibility"),
        "visibility (private, shared, ...)",
        "visibility:private",
    )
    .group(),
    Field::new(
        "evidence",
        K::Json,
        col("evidence_refs"),
        "an evidence ref of the assertion",
        "evidence:message:abc",
    ),
    Field::new(
        "context",
        K::Json,
        col("context_policy"),
        "a key or value of the context policy (`inject`, `promotion_required`)",
        "context:promotion_required",
    ),
    Field::new(
        "staleness",
        K::Equality,
        col("staleness"),
        "`current`, or `target_missing` once its target is gone",
        "staleness:target_missing",
    )
    .group(),
    Field::new(
        "supersedes",
        K::Equality,
        col("supersedes"),
        "the assertion this one replaces (an accepted or superseding claim's candidate)",
        "supersedes:c1",
    ),
    Field::new(
        "time",
        K::Date,
        col("created_at_ms"),
        "when the assertion was created",
        "time >= 2026-01-01",
    ),
    Field::new(
        "updated",
        K::Date,
        col("updated_at_ms"),
        "when the assertion last changed",
        "updated >= 2026-01-01",
    ),
];

const ASSERTIONS_TABLE: &Table = declared("assertions");

pub(super) const ASSERTIONS: Unit = Unit {
    id: U::Assertions,
    name: "assertions",
    singular: "assertion",
    table: ASSERTIONS_TABLE.name,
    schema: ASSERTIONS_TABLE,
    doc: "one tag, note, judgment or imported claim about a session or one of its objects",
    time_column: ASSERTIONS_TABLE.time_column,
    session_column: ASSERTIONS_TABLE.session_key,
    fields: ASSERTION_FIELDS,
    bracket_fields: &["kind", "status", "visibility", "author_kind"],
    fts: false,
};
