//! Lineage traces (`../shared/spec/session-query.md` § Session lineage): a session's parents
//! outward and its descendants, `complete` with the root or `unresolvedParentId`.

use std::collections::HashSet;

use rusqlite::Connection;
use serde::Serialize;

use super::{Reader, SessionHeader, run};
use crate::engine::Session;
use crate::error::Error;

/// A session in a lineage trace (the spec's `SessionRecord`): its header, and where it is
/// available. quarry reads an archive, not a live process: `live` is always false and
/// `persisted` true.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRecord {
    /// The header.
    pub header: SessionHeader,
    /// Whether a live process holds it (never, for an archive).
    pub live: bool,
    /// Whether the archive holds it.
    pub persisted: bool,
    /// Whether only its id, origin, title, times and parent are given (a session outside the
    /// conversation a pinned server reads).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub header_only: bool,
}

/// A descendant in a lineage trace (the spec's `SessionLineageNode`).
#[derive(Debug, Clone, Serialize)]
pub struct LineageNode {
    /// The descendant.
    pub session: SessionRecord,
    /// Its own direct children, each with theirs.
    pub descendants: Vec<LineageNode>,
}

/// Known ancestry and descendants of one session (the spec's `SessionLineageTrace`): either
/// `complete` with the `root`, or not, with the first parent the caller's corpus does not hold.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageTrace {
    /// The traced session.
    pub target: SessionRecord,
    /// Its known parents, from the immediate one outward.
    pub ancestors: Vec<SessionRecord>,
    /// Its direct children, each with its descendants.
    pub descendants: Vec<LineageNode>,
    /// Whether the whole parent chain is in the caller's corpus.
    pub complete: bool,
    /// The top of the chain, when it is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<SessionRecord>,
    /// The first parent id the caller's corpus does not hold, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved_parent_id: Option<String>,
    /// The archive generation the observation is of.
    pub generation: i64,
}

/// The lineage of the session `reference` names, in `session`'s scope, audited.
pub async fn lineage(session: &Session, reference: &str) -> Result<LineageTrace, Error> {
    let text = format!("read {reference} --lineage");
    let rows = |t: &LineageTrace| t.ancestors.len() + 1;
    run(
        session,
        &text,
        rows,
        reference.to_string(),
        |reader, conn, r: &String| reader.lineage(conn, r),
    )
    .await
}

impl Reader {
    /// The record of session `id` when the scope sees it and the archive holds it. A
    /// conversation's own server sees the sessions around its conversation in a lineage as
    /// headers only: id, origin, title, times and parent.
    fn record(&self, conn: &Connection, id: &str) -> Result<Option<SessionRecord>, Error> {
        let header_only = !self.sees(id);
        if header_only && self.pinned.is_none() {
            return Ok(None);
        }
        Ok(self.header(conn, id)?.map(|mut header| {
            if header_only {
                header.summary.title = header
                    .summary
                    .title
                    .take()
                    .map(|t| quarry_udf::mask_credentials(&t).into_owned());
                header.repo = None;
                header.model = None;
                header.message_count = 0;
                header.replacement_epoch = 0;
            }
            SessionRecord {
                header,
                live: false,
                persisted: true,
                header_only,
            }
        }))
    }

    fn lineage(&self, conn: &Connection, reference: &str) -> Result<LineageTrace, Error> {
        let id = self.session_id(conn, reference)?;
        let target = self
            .record(conn, &id)?
            .ok_or_else(|| Error::SessionNotFound(id.clone()))?;
        // Parents outward, until one is missing (or unseen) or there is none; a cycle in the
        // source's links ends the walk where it would repeat.
        let mut ancestors: Vec<SessionRecord> = Vec::new();
        let mut walked = HashSet::from([id.clone()]);
        let mut unresolved = None;
        let mut parent = target.header.parent_session_id.clone();
        while let Some(p) = parent.take() {
            if !walked.insert(p.clone()) {
                return Err(Error::InvalidLineage(format!(
                    "the parent links of `{id}` form a cycle through `{p}`"
                )));
            }
            match self.record(conn, &p)? {
                // A pinned conversation sees the session around it as a header, and no further.
                Some(record) if record.header_only => {
                    unresolved = record.header.parent_session_id.clone();
                    ancestors.push(record);
                }
                Some(record) => {
                    parent = record.header.parent_session_id.clone();
                    ancestors.push(record);
                }
                None => unresolved = Some(p),
            }
        }
        let descendants = self.descendants(conn, &id, &mut walked)?;
        let root = match &unresolved {
            Some(_) => None,
            None => Some(ancestors.last().cloned().unwrap_or_else(|| target.clone())),
        };
        Ok(LineageTrace {
            target,
            ancestors,
            descendants,
            complete: unresolved.is_none(),
            root,
            unresolved_parent_id: unresolved,
            generation: self.generation(conn)?,
        })
    }

    /// The seen children of `id` (by start, then id), each with its descendants.
    fn descendants(
        &self,
        conn: &Connection,
        id: &str,
        walked: &mut HashSet<String>,
    ) -> Result<Vec<LineageNode>, Error> {
        let children = strings(
            conn,
            "SELECT session_id FROM sessions WHERE parent_session_id = ?1 \
             ORDER BY created_at, session_id",
            id,
        )
        .map_err(|e| self.failed(e))?;
        let mut nodes = Vec::new();
        for child in children {
            if !walked.insert(child.clone()) {
                continue;
            }
            if let Some(session) = self.record(conn, &child)? {
                let descendants = self.descendants(conn, &child, walked)?;
                nodes.push(LineageNode {
                    session,
                    descendants,
                });
            }
        }
        Ok(nodes)
    }
}

/// The first column of `sql`'s rows with `?1` = `value`.
fn strings(conn: &Connection, sql: &str, value: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(sql)?
        .query_map([value], |r| r.get(0))?
        .collect()
}

/// A lineage as an indented tree: the ancestors outward above the target, its descendants
/// below, and whether the chain is complete.
pub fn render_lineage(trace: &LineageTrace) -> String {
    let line = |r: &SessionRecord| {
        format!(
            "{}  {}",
            r.header.session_id,
            r.header.title.as_deref().unwrap_or("untitled")
        )
    };
    let mut out = String::new();
    match (&trace.root, &trace.unresolved_parent_id) {
        (Some(root), _) => out.push_str(&format!("complete: root {}\n", root.header.session_id)),
        (None, Some(parent)) => out.push_str(&format!(
            "incomplete: parent {parent} is not in this archive (or scope)\n"
        )),
        (None, None) => {}
    }
    for (depth, ancestor) in trace.ancestors.iter().rev().enumerate() {
        out.push_str(&format!("{}{}\n", "  ".repeat(depth), line(ancestor)));
    }
    let depth = trace.ancestors.len();
    out.push_str(&format!(
        "{}* {}\n",
        "  ".repeat(depth),
        line(&trace.target)
    ));
    fn tree(
        nodes: &[LineageNode],
        depth: usize,
        out: &mut String,
        line: &dyn Fn(&SessionRecord) -> String,
    ) {
        for node in nodes {
            out.push_str(&format!("{}{}\n", "  ".repeat(depth), line(&node.session)));
            tree(&node.descendants, depth + 1, out, line);
        }
    }
    tree(&trace.descendants, depth + 1, &mut out, &line);
    out
}
