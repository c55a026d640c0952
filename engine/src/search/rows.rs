//! The ranked form of the language (`flaky login repo:acme | limit 10`): a page of a search as
//! rows, one per session best first, which the engine answers as any other query's rows.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;

use super::envelope::SearchHit;
use crate::error::{Error, engine_error};

/// The columns of a ranked answer.
pub fn schema() -> Arc<Schema> {
    let time = DataType::Timestamp(
        TimeUnit::Millisecond,
        Some(quarry_providers::sqlite::TIME_ZONE.into()),
    );
    let text = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        Field::new("rank", DataType::Int64, false),
        text("session_id", false),
        text("origin", false),
        text("title", true),
        text("repo", true),
        text("model", true),
        Field::new("created_at", time.clone(), true),
        Field::new("updated_at", time, true),
        Field::new("message_count", DataType::Int64, false),
        Field::new("score", DataType::Float64, false),
        text("score_kind", false),
        text("retrieval_lane", false),
        text("match_surface", false),
        text("message_id", false),
        text("target_ref", false),
        text("anchor", false),
        text("snippet", false),
        text("matched_terms", false),
        Field::new("matching_blocks", DataType::Int64, false),
    ]))
}

/// `hits` as one batch of [`schema`].
pub fn batch(hits: &[SearchHit]) -> Result<RecordBatch, Error> {
    let text = |f: &dyn Fn(&SearchHit) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(hits.iter().map(f)))
    };
    let maybe = |f: &dyn Fn(&SearchHit) -> Option<String>| -> ArrayRef {
        Arc::new(hits.iter().map(f).collect::<StringArray>())
    };
    let int = |f: &dyn Fn(&SearchHit) -> i64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(hits.iter().map(f)))
    };
    let time = |f: &dyn Fn(&SearchHit) -> Option<i64>| -> ArrayRef {
        Arc::new(
            hits.iter()
                .map(f)
                .collect::<TimestampMillisecondArray>()
                .with_timezone(quarry_providers::sqlite::TIME_ZONE),
        )
    };
    let columns = vec![
        int(&|h| h.matched.rank as i64),
        text(&|h| h.session.session_id.clone()),
        text(&|h| h.session.origin.clone()),
        maybe(&|h| h.session.title.clone()),
        maybe(&|h| h.session.repo.clone()),
        maybe(&|h| h.session.model.clone()),
        time(&|h| h.session.created_at),
        time(&|h| h.session.updated_at),
        int(&|h| h.session.message_count),
        Arc::new(Float64Array::from_iter_values(
            hits.iter().map(|h| h.matched.score),
        )),
        text(&|h| h.matched.score_kind.to_string()),
        text(&|h| h.matched.retrieval_lane.to_string()),
        text(&|h| h.matched.match_surface.to_string()),
        text(&|h| h.matched.message_id.clone()),
        text(&|h| h.matched.target_ref.clone()),
        text(&|h| h.matched.anchor.clone()),
        text(&|h| h.matched.snippet.clone()),
        text(&|h| h.matched.matched_terms.join(" ")),
        int(&|h| h.matched.matching_blocks as i64),
    ];
    RecordBatch::try_new(schema(), columns).map_err(|e| engine_error(e.into()))
}
