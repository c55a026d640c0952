//! An answer as a stream of record batches, and the collected form for small answers.
//!
//! The stream applies the caller's row cap itself (the plan fetches one row more, so the cap
//! knows when it cut something), counts what it passes on, and reads the aggregate's input
//! counter when the plan has finished: [`QueryStream::completion`] is known exactly when the
//! stream has ended. It also keeps the request's deadline: once it passes, the next poll fails
//! with [`Error::Timeout`], the plan is dropped (its scans stop, its memory is released) and the
//! timeout is recorded as the answer's outcome, whoever reads the stream.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use futures::{Stream, StreamExt};

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;

use super::page::Pager;
use super::{Completion, ResultMeta};
use crate::audit::{Outcome, Ticket};
use crate::error::{Error, engine_error};
use crate::request::Deadline;

/// A query's answer as it streams: [`ResultMeta`] up front, record batches, then a
/// [`Completion`]. Implements [`futures::Stream`].
pub struct QueryStream {
    meta: ResultMeta,
    schema: SchemaRef,
    inner: Option<SendableRecordBatchStream>,
    limit: Option<usize>,
    rows: usize,
    truncated: bool,
    counter: Option<RowCounter>,
    attached: Attached,
    ended: bool,
    ticket: Option<Ticket>,
    deadline: Option<Timer>,
    pager: Option<Pager>,
}

/// A deadline being waited for.
struct Timer {
    sleep: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

/// Rows of another unit attached by a `with` projection.
#[derive(Debug, Clone)]
pub struct Attachment {
    /// The unit (`messages`, `actions`, ...).
    pub unit: String,
    /// Column names and types.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

/// A whole answer in memory.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// What the answer is.
    pub meta: ResultMeta,
    /// Column names and types.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
    /// Rows the aggregate reduced (aggregate queries).
    pub input_rows: Option<u64>,
    /// Whether a cap the caller set cut the rows.
    pub truncated: bool,
    /// The cursor of the next page, when a cap cut a paged answer.
    pub next_cursor: Option<String>,
    /// Attached rows of `with` projections, in the order the query names them.
    pub attachments: Vec<Attachment>,
}

impl QueryResult {
    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// What the stream would have reported at its end.
    pub fn completion(&self) -> Completion {
        Completion {
            rows: self.num_rows(),
            input_rows: self.input_rows,
            truncated: self.truncated,
            next_cursor: self.next_cursor.clone(),
        }
    }
}

impl QueryStream {
    pub(crate) fn new(
        meta: ResultMeta,
        inner: SendableRecordBatchStream,
        limit: Option<usize>,
        counter: Option<RowCounter>,
        attached: Attached,
        pager: Option<Pager>,
    ) -> Result<Self, Error> {
        let schema = match &pager {
            Some(pager) => pager
                .returned_schema(&inner.schema())
                .map_err(|e| engine_error(e.into()))?,
            None => inner.schema(),
        };
        Ok(QueryStream {
            meta,
            schema,
            inner: Some(inner),
            limit,
            rows: 0,
            truncated: false,
            counter,
            attached,
            ended: false,
            ticket: None,
            deadline: None,
            pager,
        })
    }

    /// The same stream, its outcome recorded on `ticket` (given once the stream exists, so a
    /// stream that cannot be made leaves the ticket to its caller).
    pub(crate) fn with_ticket(mut self, ticket: Ticket) -> Self {
        self.ticket = Some(ticket);
        self
    }

    /// The same stream, failing with [`Error::Timeout`] once `deadline` passes.
    pub(crate) fn until(mut self, deadline: Option<Deadline>) -> Self {
        self.deadline = deadline.map(|d| Timer {
            sleep: Box::pin(tokio::time::sleep_until(d.at)),
            limit: d.limit,
        });
        self
    }

    /// What is known of the answer before its first row.
    pub fn meta(&self) -> &ResultMeta {
        &self.meta
    }

    /// Column names and types of the rows.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Units whose rows `with` projections attach; a stream of one table cannot carry them, so
    /// a streamed format refuses such an answer ([`QueryStream::collect`] includes them).
    pub fn attached_units(&self) -> Vec<&'static str> {
        self.attached.units()
    }

    /// Rows produced, `input_rows` and `truncated`: known once the stream has ended (`None`
    /// before).
    pub fn completion(&self) -> Option<Completion> {
        self.ended.then(|| Completion {
            rows: self.rows,
            input_rows: self.counter.as_ref().map(RowCounter::get),
            truncated: self.truncated,
            next_cursor: self.next_cursor(),
        })
    }

    /// The cursor of the next page: when the answer is paged and a cap cut it.
    fn next_cursor(&self) -> Option<String> {
        match (&self.pager, self.truncated) {
            (Some(pager), true) => pager.next_cursor(self.rows),
            _ => None,
        }
    }

    /// The completion of a stream that has been read to its end (an error if it has not: an
    /// encoder asks only after its last batch).
    pub(crate) fn finished(&self) -> Result<Completion, Error> {
        self.completion()
            .ok_or_else(|| Error::Internal("the answer's stream did not end".into()))
    }

    /// The next batch, `None` at the end.
    pub async fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        self.next().await
    }

    /// Every row, then the attached rows of `with` projections.
    pub async fn collect(mut self) -> Result<QueryResult, Error> {
        let mut batches = Vec::new();
        while let Some(batch) = self.next().await {
            batches.push(batch?);
        }
        let attachments = self.attachments().await?;
        Ok(QueryResult {
            input_rows: self.counter.as_ref().map(RowCounter::get),
            truncated: self.truncated,
            next_cursor: self.next_cursor(),
            meta: self.meta,
            schema: self.schema,
            batches,
            attachments,
        })
    }

    /// The rows `with` projections attach, computed once the stream has ended (within its
    /// deadline); the answer's outcome is recorded only now, `ok` when all of it was.
    pub async fn attachments(&mut self) -> Result<Vec<Attachment>, Error> {
        let attached = std::mem::take(&mut self.attached);
        let collected = if attached.units().is_empty() {
            Ok(Vec::new())
        } else {
            match self.deadline.as_mut() {
                Some(timer) => {
                    let limit = timer.limit;
                    tokio::select! {
                        collected = attached.collect() => collected,
                        _ = timer.sleep.as_mut() => Err(Error::Timeout(limit)),
                    }
                }
                None => attached.collect().await,
            }
        };
        match collected {
            Ok(attachments) => {
                self.record_ok();
                Ok(attachments)
            }
            Err(e) => {
                self.fail(&e);
                Err(e)
            }
        }
    }

    fn end(&mut self) {
        self.inner = None;
        self.ended = true;
        // With rows still to attach, the outcome waits for them (`into_result`).
        if self.attached.units().is_empty() {
            self.record_ok();
        }
    }

    fn record_ok(&mut self) {
        if let Some(mut ticket) = self.ticket.take() {
            let _ = ticket.finish(Outcome::Ok {
                rows: self.rows,
                truncated: self.truncated,
            });
        }
    }

    /// Records `error` as the answer's audited outcome (a writer that cannot hold the answer
    /// fails it before reading a row).
    pub fn record_failure(&mut self, error: &Error) {
        self.fail(error);
    }

    /// Records a failure as the audited outcome.
    fn fail(&mut self, error: &Error) {
        self.inner = None;
        if let Some(mut ticket) = self.ticket.take() {
            let _ = ticket.finish(Outcome::Error(&error.message()));
        }
    }

    /// `batch` as the answer returns it (a paged answer's hidden order columns left out).
    fn returned(&mut self, batch: RecordBatch) -> Result<RecordBatch, Error> {
        match self.pager.as_mut() {
            Some(pager) => pager.pass(batch).map_err(|e| engine_error(e.into())),
            None => Ok(batch),
        }
    }

    /// Counts rows passed on (an abandoned stream's outcome reports them).
    fn passed(&mut self, rows: usize) {
        self.rows += rows;
        if let Some(ticket) = self.ticket.as_mut() {
            ticket.returned(self.rows);
        }
    }
}

impl Stream for QueryStream {
    type Item = Result<RecordBatch, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.inner.is_some()
            && let Some(timer) = this.deadline.as_mut()
            && timer.sleep.as_mut().poll(cx).is_ready()
        {
            let error = Error::Timeout(timer.limit);
            this.fail(&error);
            return Poll::Ready(Some(Err(error)));
        }
        loop {
            let Some(inner) = this.inner.as_mut() else {
                return Poll::Ready(None);
            };
            let batch = match inner.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.end();
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    // A failed answer has no completion.
                    let error = engine_error(e);
                    this.fail(&error);
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(Some(Ok(batch))) => batch,
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let room = this
                .limit
                .map_or(usize::MAX, |l| l.saturating_sub(this.rows));
            if batch.num_rows() <= room {
                this.passed(batch.num_rows());
                return Poll::Ready(Some(this.returned(batch)));
            }
            // The cap cuts this batch: the rest is not wanted. (An aggregate's input count is
            // already complete: it read its whole input before its first group.)
            this.truncated = true;
            this.passed(room);
            let last = (room > 0).then(|| this.returned(batch.slice(0, room)));
            this.end();
            return Poll::Ready(last);
        }
    }
}

/// The plans of rows `with` projections attach, run when an answer is collected.
#[derive(Default)]
pub struct Attached {
    pub(crate) ctx: SessionContext,
    pub(crate) plans: Vec<(&'static str, LogicalPlan)>,
}

impl Attached {
    /// The attached units, in the query's order.
    pub fn units(&self) -> Vec<&'static str> {
        self.plans.iter().map(|(unit, _)| *unit).collect()
    }

    /// Runs every attached plan.
    pub async fn collect(self) -> Result<Vec<Attachment>, Error> {
        let mut out = Vec::with_capacity(self.plans.len());
        for (unit, plan) in self.plans {
            let df = self
                .ctx
                .execute_logical_plan(plan)
                .await
                .map_err(engine_error)?;
            let schema = Arc::new(df.schema().as_arrow().clone());
            out.push(Attachment {
                unit: unit.to_string(),
                schema,
                batches: df.collect().await.map_err(engine_error)?,
            });
        }
        Ok(out)
    }
}

/// Rows counted by every partition of one counting node; read when the stream has ended.
#[derive(Debug, Clone, Default)]
pub struct RowCounter(Arc<AtomicU64>);

impl RowCounter {
    /// The rows counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn add(&self, rows: usize) {
        self.0.fetch_add(rows as u64, AtomicOrdering::Relaxed);
    }
}

// One counter is one node: identity is the shared cell, not its current value.
impl PartialEq for RowCounter {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RowCounter {}

impl Hash for RowCounter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}

impl PartialOrd for RowCounter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(Arc::as_ptr(&self.0).cmp(&Arc::as_ptr(&other.0)))
    }
}
