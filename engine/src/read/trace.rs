//! Event traces (`../shared/spec/session-query.md` § Event relationships): for one record of a
//! session, where it sits on the conversation surface and the direct links its source logs.
//!
//! Two kinds of link, both written at ingest (`events_raw.replaced_by`, `source_seqs`):
//! positional replacement (a rewritten Gemini message replaced by its next version, messages
//! removed by a `$rewindTo`, a ChatGPT branch replaced by the one kept) and logged provenance (a
//! Claude Code record's `parentUuid`, a Codex output's `call_id`, a Codex envelope repeating a
//! direct item, an export node's parent). A format that records neither gives an empty trace.

use std::collections::{BTreeMap, HashSet};

use rusqlite::{Connection, params};
use serde::Serialize;

use super::{Reader, SessionHeader};
use crate::error::Error;

/// A trace request: one record of a session.
#[derive(Debug, Clone)]
pub struct TraceRequest {
    /// The session (a ref or an id, a native id or a unique prefix of one).
    pub session: String,
    /// The record's seq.
    pub seq: i64,
}

/// A record without its payload (the spec's `SessionEventRecord`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRecord {
    /// The session that owns it.
    pub session_id: String,
    /// Its seq.
    pub seq: i64,
    /// Its type as the source names it.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its time (epoch milliseconds).
    pub time: Option<i64>,
    /// `current`, `shadowed` or `log-only`.
    pub surface: String,
}

/// The direct relationships of one record (the spec's `SessionEventTraceObservation`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventTrace {
    /// The session's header, from the same observation.
    pub session: SessionHeader,
    /// The record.
    pub target: EventRecord,
    /// The record that positionally replaced it, when it is shadowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<i64>,
    /// The replacers from the immediate one to the final one.
    pub replacement_chain: Vec<i64>,
    /// The records it replaced itself.
    pub replaced_event_seqs: Vec<i64>,
    /// The records it names as its provenance, in recorded order.
    pub source_event_seqs: Vec<i64>,
    /// Later records naming it as their provenance, in log order.
    pub derived_event_seqs: Vec<i64>,
    /// The archive generation the observation is of.
    pub generation: i64,
}

/// One record as a trace reads it.
struct Row {
    record: EventRecord,
    replaced_by: Option<i64>,
    sources: Vec<i64>,
}

impl Reader {
    /// The trace `request` asks for.
    pub(super) fn trace(
        &self,
        conn: &Connection,
        request: &TraceRequest,
    ) -> Result<EventTrace, Error> {
        let id = self.session_id(conn, &request.session)?;
        let session = self
            .header(conn, &id)?
            .ok_or_else(|| Error::SessionNotFound(id.clone()))?;
        // A reader reads the `events` view (records of committed turns); links to records it
        // does not see are left out.
        let table = if self.visible.is_none() {
            "events_raw"
        } else {
            "events"
        };
        let rows: BTreeMap<i64, Row> = conn
            .prepare_cached(&format!(
                "SELECT seq, type, time, surface, replaced_by, source_seqs FROM {table} \
                 WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) ORDER BY seq"
            ))
            .and_then(|mut s| {
                s.query_map(params![id], |r| {
                    let sources: Option<String> = r.get(5)?;
                    Ok(Row {
                        record: EventRecord {
                            session_id: id.clone(),
                            seq: r.get(0)?,
                            kind: r.get(1)?,
                            time: r.get(2)?,
                            surface: r.get(3)?,
                        },
                        replaced_by: r.get(4)?,
                        sources: sources
                            .and_then(|s| serde_json::from_str(&s).ok())
                            .unwrap_or_default(),
                    })
                })?
                .map(|row| row.map(|row| (row.record.seq, row)))
                .collect()
            })
            .map_err(|e| self.failed(e))?;
        let target = rows.get(&request.seq).ok_or_else(|| Error::EventNotFound {
            session: id.clone(),
            seq: request.seq,
        })?;
        let seen = |seq: &i64| rows.contains_key(seq);
        let replaced_by = target.replaced_by.filter(seen);
        let mut replacement_chain = Vec::new();
        let mut walked = HashSet::from([request.seq]);
        let mut next = replaced_by;
        while let Some(seq) = next {
            if !walked.insert(seq) {
                return Err(Error::InvalidSurface(format!(
                    "the replacement links of `{id}` form a cycle through record {seq}"
                )));
            }
            replacement_chain.push(seq);
            next = rows.get(&seq).and_then(|r| r.replaced_by).filter(seen);
        }
        let replaced_event_seqs = rows
            .values()
            .filter(|r| r.replaced_by == Some(request.seq))
            .map(|r| r.record.seq)
            .collect();
        let derived_event_seqs = rows
            .values()
            .filter(|r| r.sources.contains(&request.seq))
            .map(|r| r.record.seq)
            .collect();
        Ok(EventTrace {
            session,
            target: target.record.clone(),
            replaced_by,
            replacement_chain,
            replaced_event_seqs,
            source_event_seqs: target.sources.iter().copied().filter(seen).collect(),
            derived_event_seqs,
            generation: self.generation(conn)?,
        })
    }
}

/// A trace as lines.
pub fn render(trace: &EventTrace) -> String {
    let list = |seqs: &[i64]| {
        if seqs.is_empty() {
            "none".to_string()
        } else {
            seqs.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let t = &trace.target;
    let mut out = format!(
        "{} record {} ({}, {}, generation {})\n",
        t.session_id, t.seq, t.kind, t.surface, trace.generation
    );
    if let Some(by) = trace.replaced_by {
        out.push_str(&format!("replaced by:       {by}\n"));
    }
    out.push_str(&format!(
        "replacement chain: {}\nreplaced records:  {}\nsources:           {}\nderived:           {}\n",
        list(&trace.replacement_chain),
        list(&trace.replaced_event_seqs),
        list(&trace.source_event_seqs),
        list(&trace.derived_event_seqs)
    ));
    out
}
