//! The one service layer of the servers: a [`Request`] (either language, caps, a time limit)
//! from an [`Asker`] (who, through what surface, under which scope) becomes an [`Answer`]
//! stream over the long-lived engine, within the server's [`Limits`]:
//!
//! 1. a query slot, waited for until the request's deadline ([`Error::Busy`] after it);
//! 2. the asker's scope, as the scopes file says now (so an edited file narrows a reader at
//!    its next request);
//! 3. a session of that scope (cheap: the engine keeps each scope's view per generation);
//! 4. the query, planned and run within the same deadline (the stream fails with
//!    [`Error::Timeout`] once it passes).
//!
//! Everything is audited: a query by the engine (intent, then outcome), a request refused
//! before its query started, and requests that run no query (explain, tables, completions), by
//! [`Service::record`]; a request refused before the caller was known by
//! [`Service::refused_anonymously`], counted per minute and source.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Limits;
use quarry::audit::{RequestKind, RequestRecord};
use quarry::{
    Caller, CatalogTable, Deadline, Error, Quarry, QueryResult, QueryStream, Request, Scope,
    Session,
};

/// Which scope a request runs under.
#[derive(Debug, Clone)]
pub enum ScopeRef {
    /// The scope of this name, as the scopes file defines it when the request comes.
    Named(String),
    /// This scope, decided when the server started (MCP's).
    Fixed(Scope),
}

/// Who asks: the caller (recorded in the audit trail) and the scope they ask under.
#[derive(Debug, Clone)]
pub struct Asker {
    /// The person or token, and the surface.
    pub caller: Caller,
    /// The scope.
    pub scope: ScopeRef,
}

impl Asker {
    /// The scope's name, as the audit trail records it.
    pub fn scope_name(&self) -> &str {
        match &self.scope {
            ScopeRef::Named(name) => name,
            ScopeRef::Fixed(scope) => scope.name(),
        }
    }
}

/// A running answer: its stream, with the session and the query slot it holds until dropped.
pub struct Answer {
    /// The rows.
    pub stream: QueryStream,
    /// When the request's time is up.
    pub deadline: Deadline,
    /// The session and the slot, released with the answer.
    pub hold: Hold,
}

/// What an answer holds while it runs.
pub struct Hold {
    _session: Session,
    _slot: OwnedSemaphorePermit,
}

/// The tables a caller's scope may query.
#[derive(Debug, Clone)]
pub struct Tables {
    /// The scope's name.
    pub scope: String,
    /// Its tables.
    pub tables: Vec<CatalogTable>,
}

/// The service every server calls (see the module docs).
pub struct Service {
    quarry: Quarry,
    scopes_file: PathBuf,
    limits: Limits,
    slots: Arc<Semaphore>,
}

impl Service {
    /// The service over `quarry`, with reader scopes from `scopes_file`, within `limits`.
    pub fn new(quarry: Quarry, scopes_file: PathBuf, limits: Limits) -> Service {
        let slots = Arc::new(Semaphore::new(limits.max_concurrent.max(1)));
        Service {
            quarry,
            scopes_file,
            limits,
            slots,
        }
    }

    /// The bounds requests run within.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The engine.
    pub fn quarry(&self) -> &Quarry {
        &self.quarry
    }

    /// The scope called `name` as the scopes file defines it now.
    pub fn scope(&self, name: &str) -> Result<Scope, Error> {
        quarry::scope::resolve(name, &self.scopes_file).map_err(|e| Error::Scope(e.to_string()))
    }

    /// The deadline of a request that asks for `requested` (never beyond the server's limit).
    pub fn deadline(&self, requested: Option<Duration>) -> Deadline {
        let limit = requested.map_or(self.limits.timeout, |r| r.min(self.limits.timeout));
        Deadline::after(limit)
    }

    /// A row cap for a buffered answer: what the request asks, never beyond `max_rows`.
    pub fn buffered_cap(&self, requested: Option<usize>) -> usize {
        requested.map_or(self.limits.max_rows, |r| r.min(self.limits.max_rows))
    }

    /// Runs `request` for `asker` (see the module docs). A failure before the query started
    /// is recorded as a refused request; one after, by the engine, as the query's outcome.
    pub async fn answer(&self, asker: &Asker, request: Request) -> Result<Answer, Error> {
        let deadline = self.deadline(request.timeout);
        let (slot, session) = self.open(asker, deadline, "query", &request.text).await?;
        let stream = session.run_by(&request, Some(deadline)).await?;
        Ok(Answer {
            stream,
            deadline,
            hold: Hold {
                _session: session,
                _slot: slot,
            },
        })
    }

    /// Runs `request` and collects its answer (a buffered answer: capped at `max_rows`).
    pub async fn collect(&self, asker: &Asker, mut request: Request) -> Result<QueryResult, Error> {
        request.caps.limit = Some(self.buffered_cap(request.caps.limit));
        let answer = self.answer(asker, request).await?;
        answer.stream.collect().await
    }

    /// Runs a ranked search for `asker` within the server's time limit (`timeout` if shorter),
    /// holding a query slot as a query does. The engine audits it; a failure before it
    /// started is recorded as a refused request.
    pub async fn search(
        &self,
        asker: &Asker,
        request: &quarry::search::SearchRequest,
        timeout: Option<Duration>,
    ) -> Result<quarry::search::SearchEnvelope, Error> {
        let deadline = self.deadline(timeout);
        let (_slot, session) = self.open(asker, deadline, "search", &request.text).await?;
        within(deadline, quarry::search::search(&session, request)).await
    }

    /// Counts facets for `asker` within the server's time limit (`timeout` if shorter), holding
    /// a query slot as a query does; audited as a search is.
    pub async fn facets(
        &self,
        asker: &Asker,
        request: &quarry::facets::FacetsRequest,
        timeout: Option<Duration>,
    ) -> Result<quarry::facets::Facets, Error> {
        let deadline = self.deadline(timeout);
        let about = request.text.as_deref().or(request.filter.as_deref());
        let (_slot, session) = self
            .open(asker, deadline, "facets", about.unwrap_or_default())
            .await?;
        within(deadline, quarry::facets::facets(&session, request)).await
    }

    /// Reads what a ref names for `asker` within the server's time limit (`timeout` if
    /// shorter), holding a query slot as a query does; audited as a read.
    pub async fn read(
        &self,
        asker: &Asker,
        request: &quarry::read::ReadRequest,
        timeout: Option<Duration>,
    ) -> Result<quarry::read::ReadAnswer, Error> {
        let deadline = self.deadline(timeout);
        let (_slot, session) = self
            .open(asker, deadline, "read", request.reference())
            .await?;
        within(deadline, quarry::read::read(&session, request)).await
    }

    /// Runs one dashboard panel for `asker` over `range`, its days and buckets in `tz` (the
    /// engine's zone when `None`), within the server's time limit, holding a query slot as a
    /// query does; the panel's query is audited by the engine.
    pub async fn panel(
        &self,
        asker: &Asker,
        id: quarry::dashboard::PanelId,
        range: &quarry::dashboard::Range,
        tz: Option<&str>,
    ) -> Result<quarry::dashboard::Panel, Error> {
        let deadline = self.deadline(None);
        let (_slot, session) = self
            .open(asker, deadline, "dashboard", &id.query(range))
            .await?;
        let session = session.in_zone(tz)?;
        within(deadline, quarry::dashboard::panel(&session, id, range)).await
    }

    /// Runs the dashboard panels `ids` for `asker` over `range`, days and buckets in `tz`, all
    /// at once in one session, each in a query slot of its own (beyond the server's slots a
    /// panel waits for one, as a request would) and within the server's time limit: the
    /// stream yields each panel as soon as its answer is ready, in no fixed order, so none
    /// waits on another's answer. The panels' queries are audited by the engine.
    pub async fn panels(
        &self,
        asker: &Asker,
        ids: Vec<quarry::dashboard::PanelId>,
        range: quarry::dashboard::Range,
        tz: Option<&str>,
    ) -> Result<
        impl futures::Stream<
            Item = (
                quarry::dashboard::PanelId,
                Result<quarry::dashboard::Panel, Error>,
            ),
        > + Send
        + 'static,
        Error,
    > {
        let deadline = self.deadline(None);
        let started = Instant::now();
        let session = match within(deadline, self.session(asker)).await {
            Ok(session) => Arc::new(session.in_zone(tz)?),
            Err(e) => {
                let about = Some("every panel");
                self.record(
                    asker,
                    RequestKind::Refused,
                    "dashboard",
                    about,
                    started,
                    Some(&e),
                );
                return Err(e);
            }
        };
        let answers: futures::stream::FuturesUnordered<_> = ids
            .into_iter()
            .map(|id| {
                let (session, slots) = (session.clone(), self.slots.clone());
                async move {
                    let answer = async {
                        let _slot = take_slot(slots, deadline).await?;
                        within(deadline, quarry::dashboard::panel(&session, id, &range)).await
                    }
                    .await;
                    (id, answer)
                }
            })
            .collect();
        Ok(answers)
    }

    /// A query slot and a session under `asker`'s scope, both within `deadline`; a failure is
    /// recorded as a refused request of `kind` about `text`.
    async fn open(
        &self,
        asker: &Asker,
        deadline: Deadline,
        kind: &str,
        text: &str,
    ) -> Result<(OwnedSemaphorePermit, Session), Error> {
        let started = Instant::now();
        let opened = async {
            let slot = take_slot(self.slots.clone(), deadline).await?;
            let session = tokio::time::timeout_at(deadline.at, self.session(asker))
                .await
                .map_err(|_| Error::Timeout(deadline.limit))??;
            Ok((slot, session))
        }
        .await;
        if let Err(e) = &opened {
            self.record(
                asker,
                RequestKind::Refused,
                kind,
                Some(text),
                started,
                Some(e),
            );
        }
        opened
    }

    /// What the archive's writers committed after generation `since`, in `asker`'s scope as
    /// the scopes file says now (`GET /api/live`; not audited: the stream is, once).
    pub async fn live_changes(
        &self,
        asker: &Asker,
        since: i64,
    ) -> Result<quarry::live::Changes, Error> {
        let session = self.session(asker).await?;
        quarry::live::changes(&session, since).await
    }

    /// A session under `asker`'s scope.
    async fn session(&self, asker: &Asker) -> Result<Session, Error> {
        let scope = match &asker.scope {
            ScopeRef::Named(name) => self.scope(name)?,
            ScopeRef::Fixed(scope) => scope.clone(),
        };
        self.quarry.session(scope, asker.caller.clone()).await
    }

    /// How `expression` parses (as JSON, with its text rendering), or with `plan` DataFusion's
    /// plans (admin scope only). Audited as a request.
    pub async fn explain(
        &self,
        asker: &Asker,
        expression: &str,
        plan: bool,
    ) -> Result<Explained, Error> {
        let started = Instant::now();
        let result = if plan {
            let deadline = self.deadline(None);
            within(deadline, async {
                let session = self.session(asker).await?;
                session.explain(expression).await
            })
            .await
            .map(Explained::Plan)
        } else {
            quarry_grammar::explain::explain(expression)
                .map(|e| Explained::Parse {
                    json: e.to_json(),
                    text: e.to_text(),
                })
                .map_err(Error::Query)
        };
        let target = if plan { "explain plan" } else { "explain" };
        self.record(
            asker,
            RequestKind::Explain,
            target,
            Some(expression),
            started,
            result.as_ref().err(),
        );
        result
    }

    /// The tables and columns `asker`'s scope may query. Audited as a request.
    pub async fn tables(&self, asker: &Asker) -> Result<Tables, Error> {
        let started = Instant::now();
        let result = self.session(asker).await.map(|session| Tables {
            scope: session.scope().name().to_string(),
            tables: session.catalog(),
        });
        self.record(
            asker,
            RequestKind::Tables,
            "tables",
            None,
            started,
            result.as_ref().err(),
        );
        result
    }

    /// Records a request that ran no query: `error` is how it failed, if it did. A request
    /// that cannot be recorded is not failed for it (the caller has its answer already); the
    /// failure is reported on standard error.
    pub fn record(
        &self,
        asker: &Asker,
        kind: RequestKind,
        target: &str,
        text: Option<&str>,
        started: Instant,
        error: Option<&Error>,
    ) {
        let message = error.map(Error::message);
        let record = RequestRecord {
            caller: &asker.caller,
            scope: Some(asker.scope_name()),
            kind,
            target,
            text,
            error: error.map(Error::code).zip(message.as_deref()),
            duration: started.elapsed(),
        };
        if let Err(e) = self.quarry.audit().request(&record) {
            eprintln!("quarry: the audit trail could not record a request: {e}");
        }
    }

    /// Counts a request refused before its caller was known (see
    /// [`quarry::audit::AuditLog::refused`]).
    pub fn refused_anonymously(&self, surface: &str, source: &str, error: &Error) {
        if let Err(e) = self.quarry.audit().refused(surface, source, error.code()) {
            eprintln!("quarry: the audit trail could not count a refusal: {e}");
        }
    }

    /// Writes what the audit trail holds in memory (at shutdown).
    pub fn flush_audit(&self) {
        if let Err(e) = self.quarry.audit().flush() {
            eprintln!("quarry: the audit trail could not be written: {e}");
        }
    }
}

/// What [`Service::explain`] answers.
#[derive(Debug, Clone)]
pub enum Explained {
    /// How the query parses: the explanation as JSON, and as text.
    Parse {
        /// As JSON.
        json: String,
        /// As text.
        text: String,
    },
    /// DataFusion's plans.
    Plan(String),
}

/// `work`'s answer, or [`Error::Timeout`] when `deadline` passes first.
/// A query slot of `slots`, waited for until `deadline` ([`Error::Busy`] after it).
async fn take_slot(
    slots: Arc<Semaphore>,
    deadline: Deadline,
) -> Result<OwnedSemaphorePermit, Error> {
    tokio::time::timeout_at(deadline.at, slots.acquire_owned())
        .await
        .map_err(|_| Error::Busy(deadline.limit))?
        .map_err(|_| Error::Internal("the query slots were closed".into()))
}

async fn within<T>(
    deadline: Deadline,
    work: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::time::timeout_at(deadline.at, work)
        .await
        .unwrap_or(Err(Error::Timeout(deadline.limit)))
}
