//! `quarry serve`: the HTTP API (axum on tokio), a thin adapter over the [`Service`]: each
//! handler takes its request apart, calls the service, and answers with the output module's
//! encoder of the format the request accepts, or with the error body and its class's status.
//!
//! | endpoint | what |
//! |---|---|
//! | `POST /api/query` | read-only SQL: `{"sql": ...}`, answered as `{columns, rows, truncated, skipped_partitions}` |
//! | `GET\|POST /api/query-units` | the language: `expression=` (or `{"expression": ...}`), answered as the envelope |
//! | `GET /api/explain` | how `expression=` parses (`plan=true`: DataFusion's plans, admin scope) |
//! | `GET /api/tables` | the caller's catalog: the tables and columns its scope may query |
//! | `GET /api/dashboard[/{panel}\|/all]` | the dashboards' panels; one panel over `since`, `until` and `tz` (its query, rows, SVG charts, figures); every panel streamed as NDJSON, each as soon as it is ready |
//! | `GET /healthz` | liveness, no token needed |
//!
//! Every `/api/` request carries `Authorization: Bearer TOKEN`; the tokens file maps the
//! token's SHA-256 to a name and a scope, and is read again whenever it changes. The `Accept`
//! header picks the format ([`Format::from_accept`]): JSON (the default), YAML and a table are
//! answered whole, capped at `--max-rows`; NDJSON, CSV, Arrow IPC (stream or file) and Parquet
//! stream a batch at a time, uncapped, so no answer is held whole. Errors are the one error
//! body (`{code, class, status, message, diagnostics, rendered?}`) with their class's status
//! (docs/server.md has the table).

mod auth;
mod dashboard;
mod live;
mod stream;
mod web;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{ConnectInfo, DefaultBodyLimit, Extension, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use self::auth::{TokenStore, require_token};
use super::service::Explained;
use super::{Asker, Service};
use crate::tokens::{TokenError, Tokens};
use quarry::audit::{Language, RequestKind};
use quarry::format::Format;
use quarry::{Caps, Error, Request as Ask};

/// Where and with which tokens to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The address to listen on (`127.0.0.1:0` picks a free port; the bound one is printed).
    pub listen: SocketAddr,
    /// The tokens file.
    pub tokens: PathBuf,
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The tokens file is missing, not private, malformed or empty.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// The file holds no token.
    #[error(
        "the tokens file {} holds no tokens: add one with `quarry token add NAME --scope SCOPE --tokens {}`",
        .0.display(),
        .0.display()
    )]
    NoTokens(PathBuf),
    /// The address could not be listened on, or serving failed.
    #[error("cannot serve on {address}: {message}")]
    Listen {
        /// The address.
        address: String,
        /// What went wrong.
        message: String,
    },
}

/// The server's shared state.
struct App {
    service: Service,
    tokens: TokenStore,
}

/// Serves the HTTP API until SIGINT or SIGTERM; then stops accepting, lets running queries
/// finish (each within its time limit, so their outcomes are audited) and returns.
pub async fn serve(service: Service, options: ServeOptions) -> Result<(), ServeError> {
    let tokens = Tokens::load(&options.tokens)?;
    if tokens.tokens.is_empty() {
        return Err(ServeError::NoTokens(options.tokens.clone()));
    }
    for entry in &tokens.tokens {
        if let Err(e) = service.scope(&entry.scope) {
            eprintln!(
                "quarry serve: warning: token {}: its scope cannot be used ({e}); its requests will be refused",
                entry.name
            );
        }
    }
    let max_body = service.limits().max_body;
    let app = Arc::new(App {
        service,
        tokens: TokenStore::new(options.tokens.clone()),
    });
    let router = router(app.clone(), max_body);
    let listen_error = |e: &dyn std::fmt::Display| ServeError::Listen {
        address: options.listen.to_string(),
        message: e.to_string(),
    };
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|e| listen_error(&e))?;
    let address = listener.local_addr().map_err(|e| listen_error(&e))?;
    // The first line of standard output says where (tests and scripts read the port there).
    println!("listening on http://{address}");
    eprintln!(
        "quarry serve: archive {}, tokens {}, timeout {} s, at most {} rows per JSON answer, {} queries at once",
        app.service.quarry().archive().display(),
        options.tokens.display(),
        app.service.limits().timeout.as_secs_f64(),
        app.service.limits().max_rows,
        app.service.limits().max_concurrent
    );
    // After SIGINT/SIGTERM running queries get their time limit and a little more; a second
    // interrupt, or the end of that wait, stops the server at once (a query still running is
    // then dropped, and recorded as abandoned).
    let grace = app.service.limits().timeout + Duration::from_secs(5);
    let (stopping, mut stopped) = tokio::sync::watch::channel(false);
    let serving = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown_signal().await;
        let _ = stopping.send(true);
    })
    .into_future();
    tokio::pin!(serving);
    tokio::select! {
        result = &mut serving => result.map_err(|e| listen_error(&e))?,
        _ = stopped.wait_for(|s| *s) => {
            tokio::select! {
                result = tokio::time::timeout(grace, &mut serving) => match result {
                    Ok(result) => result.map_err(|e| listen_error(&e))?,
                    Err(_) => eprintln!(
                        "quarry serve: connections still open after {} s were closed",
                        grace.as_secs()
                    ),
                },
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("quarry serve: interrupted again: stopping now");
                }
            }
        }
    }
    app.service.flush_audit();
    eprintln!("quarry serve: stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    eprintln!("quarry serve: shutting down: no new connections; running queries finish first");
}

fn router(app: Arc<App>, max_body: usize) -> Router {
    // The token is checked before anything else of the request is read (its body included).
    let api = Router::new()
        .route("/api/query", axum::routing::post(sql_query))
        .route("/api/query-units", get(units_get).post(units_post))
        .route("/api/search", get(search_get).post(search_post))
        .route("/api/facets", get(facets_get))
        .route("/api/read", get(read_get))
        .route("/api/refs/resolve", get(resolve_get))
        .route("/api/explain", get(explain))
        .route("/api/tables", get(tables))
        .route("/api/dashboard", get(dashboard::list))
        .route("/api/dashboard/all", get(dashboard::all))
        .route("/api/dashboard/{panel}", get(dashboard::panel))
        .route("/api/live", get(live::live))
        .route("/api/session", get(web::whoami).delete(web::sign_out))
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            require_token,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/api/session", axum::routing::post(web::sign_in))
        .route("/", get(web::page))
        .route("/assets/{file}", get(web::page))
        .merge(api)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(log_request))
        .with_state(app)
}

/// One line on standard error per request: method, path, status, time.
async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    eprintln!(
        "{} {method} {path} {} {} ms",
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        response.status().as_u16(),
        started.elapsed().as_millis()
    );
    response
}

/// The response of a failed request: its class's status and the error body (`query` is the
/// text it is about: a query error is drawn under it).
fn error_response(e: &Error, query: Option<&str>) -> Response {
    let body = e.body(query);
    let status = StatusCode::from_u16(body.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        format!("{}\n", body.to_json()),
    )
        .into_response();
    let headers = response.headers_mut();
    match e {
        Error::Unauthorized(_) => {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"quarry\""),
            );
        }
        Error::Busy(_) => {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        _ => {}
    }
    response
}

impl App {
    /// Answers `request` for `asker` in the format `headers` accept (`fallback` for JSON):
    /// whole and capped for the formats that do not stream, else streamed.
    async fn answer(
        &self,
        asker: &Asker,
        mut request: Ask,
        headers: &HeaderMap,
        fallback: Format,
    ) -> Response {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let format = Format::from_accept(accept, fallback).unwrap_or(fallback);
        if !format.streams() {
            request.caps.limit = Some(self.service.buffered_cap(request.caps.limit));
            // A whole answer of the language pages: a cap that cuts it hands out `next_cursor`.
            request.paged = request.language == Language::Query;
        }
        let text = request.text.clone();
        let answered = async {
            let answer = self.service.answer(asker, request).await?;
            if format.streams() {
                return stream::streamed(answer, format).await;
            }
            let meta = answer.stream.meta().clone();
            let mut body = Vec::new();
            quarry::output::encode(answer.stream, format, |bytes| {
                body.extend(bytes);
                Ok(())
            })
            .await?;
            let mut response = (
                StatusCode::OK,
                [(header::CONTENT_TYPE, format.media_type())],
                body,
            )
                .into_response();
            stream::describe(response.headers_mut(), &meta);
            Ok(response)
        }
        .await;
        answered.unwrap_or_else(|e| error_response(&e, Some(&text)))
    }

    /// Answers a search with its envelope (JSON).
    async fn search(&self, asker: &Asker, params: SearchParams) -> Response {
        let (request, timeout) = params.request();
        match self.service.search(asker, &request, timeout).await {
            Ok(envelope) => match serde_json::to_string(&envelope) {
                Ok(body) => json_response(body),
                Err(e) => error_response(&Error::Internal(e.to_string()), None),
            },
            Err(e) => error_response(&e, Some(request.text_of(&e))),
        }
    }

    /// Answers a facets request (JSON).
    async fn facets(&self, asker: &Asker, params: FacetsParams) -> Response {
        let (request, timeout) = params.request();
        match self.service.facets(asker, &request, timeout).await {
            Ok(facets) => match serde_json::to_string(&facets) {
                Ok(body) => json_response(body),
                Err(e) => error_response(&Error::Internal(e.to_string()), None),
            },
            Err(e) => error_response(&e, Some(request.text_of(&e))),
        }
    }

    /// Answers a read (JSON, the spec's shape of its kind).
    async fn read(&self, asker: &Asker, params: ReadParams) -> Response {
        let (request, timeout) = match params.request() {
            Ok(r) => r,
            Err(e) => return self.refuse(asker, "GET /api/read", e),
        };
        self.answer_read(asker, &request, timeout).await
    }

    /// Answers any read (JSON, the spec's shape of its kind).
    async fn answer_read(
        &self,
        asker: &Asker,
        request: &quarry::read::ReadRequest,
        timeout: Option<Duration>,
    ) -> Response {
        match self.service.read(asker, request, timeout).await {
            Ok(answer) => match serde_json::to_string(&answer) {
                Ok(body) => json_response(body),
                Err(e) => error_response(&Error::Internal(e.to_string()), None),
            },
            Err(e) => error_response(&e, Some(request.reference())),
        }
    }

    /// Records a request of `asker` refused before its query (a body that is not what the
    /// endpoint takes) and answers with the error.
    fn refuse(&self, asker: &Asker, target: &str, e: Error) -> Response {
        self.service.record(
            asker,
            RequestKind::Refused,
            target,
            None,
            Instant::now(),
            Some(&e),
        );
        error_response(&e, None)
    }
}

/// A query request's caps and time limit, as either endpoint takes them.
fn ask(language: Ask, limit: Option<usize>, offset: Option<usize>, timeout_ms: Option<u64>) -> Ask {
    language
        .with_caps(Caps { limit, offset })
        .with_timeout(timeout_ms.map(Duration::from_millis))
}

/// `POST /api/query`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SqlBody {
    sql: String,
    limit: Option<usize>,
    offset: Option<usize>,
    timeout_ms: Option<u64>,
}

/// `/api/query-units`' parameters (the query string of a GET, the JSON body of a POST).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitsParams {
    expression: String,
    limit: Option<usize>,
    offset: Option<usize>,
    /// The previous page's `next_cursor`.
    cursor: Option<String>,
    timeout_ms: Option<u64>,
    /// The zone of its days and time buckets; the server's otherwise.
    tz: Option<String>,
}

impl From<UnitsParams> for Ask {
    fn from(p: UnitsParams) -> Self {
        let mut request = ask(Ask::query(p.expression), p.limit, p.offset, p.timeout_ms);
        request.cursor = p.cursor;
        request.in_zone(p.tz)
    }
}

/// `/api/search`'s parameters (the query string of a GET, the JSON body of a POST).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchParams {
    /// The search text.
    q: String,
    retrieval_lane: Option<String>,
    /// A predicate over sessions in the query language.
    r#where: Option<String>,
    session: Option<String>,
    limit: Option<usize>,
    offset: Option<u64>,
    cursor: Option<String>,
    timeout_ms: Option<u64>,
}

impl SearchParams {
    fn request(self) -> (quarry::search::SearchRequest, Option<Duration>) {
        (
            quarry::search::SearchRequest {
                text: self.q,
                lane: self.retrieval_lane,
                filter: self.r#where,
                session: self.session,
                page_size: self.limit,
                offset: self.offset,
                cursor: self.cursor,
            },
            self.timeout_ms.map(Duration::from_millis),
        )
    }
}

/// `/api/read`'s parameters (the query string): a ref and a transcript page (`limit`,
/// `cursor`), a window (`around`, with `before` and `after`, 5 each unless given, and
/// `surface`), `lineage=true` or `trace=SEQ`. A `message:` or `block:` ref reads that message
/// in its context.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadParams {
    r#ref: String,
    /// Messages on a transcript's page.
    limit: Option<usize>,
    /// A transcript page's `next_cursor`.
    cursor: Option<String>,
    /// A record's seq, or a message of the session.
    around: Option<String>,
    before: Option<i64>,
    after: Option<i64>,
    /// Comma-separated surfaces a window keeps.
    surface: Option<String>,
    #[serde(default)]
    lineage: bool,
    /// A record's seq: its trace.
    trace: Option<i64>,
    timeout_ms: Option<u64>,
}

impl ReadParams {
    fn request(self) -> Result<(quarry::read::ReadRequest, Option<Duration>), Error> {
        use quarry::read::{
            ReadRequest, Ref, RefKind, TraceRequest, TranscriptRequest, WindowRequest,
        };
        let transcript = self.limit.is_some() || self.cursor.is_some();
        let window = self.before.is_some() || self.after.is_some() || self.surface.is_some();
        let timeout = self.timeout_ms.map(Duration::from_millis);
        if let Some(seq) = self.trace {
            if transcript || window || self.around.is_some() || self.lineage {
                return Err(Error::BadRequest(
                    "`trace` reads one record's relationships: leave out the transcript's, the window's and the lineage's parameters".into(),
                ));
            }
            let request = ReadRequest::Trace(TraceRequest {
                session: self.r#ref,
                seq,
            });
            return Ok((request, timeout));
        }
        let plain = !transcript && !window && self.around.is_none() && !self.lineage;
        if plain
            && Ref::parse(&self.r#ref)
                .is_some_and(|r| matches!(r.kind, RefKind::Message | RefKind::Block))
        {
            return Ok((ReadRequest::Context(self.r#ref), timeout));
        }
        let around = self.around.as_deref().map(quarry::read::Around::parse);
        let request = match (around, self.lineage) {
            (None, false) if !window => ReadRequest::Transcript(TranscriptRequest {
                session: self.r#ref,
                page_size: self.limit,
                cursor: self.cursor,
            }),
            _ if transcript => {
                return Err(Error::BadRequest(
                    "`limit` and `cursor` page a transcript: leave out `around` and `lineage`"
                        .into(),
                ));
            }
            (Some(around), false) => ReadRequest::Window(WindowRequest {
                session: self.r#ref,
                around,
                before: self.before.unwrap_or(5),
                after: self.after.unwrap_or(5),
                surfaces: self
                    .surface
                    .iter()
                    .flat_map(|s| s.split(','))
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
            }),
            (None, true) if !window => ReadRequest::Lineage(self.r#ref),
            _ => {
                return Err(Error::BadRequest(
                    "give `around=SEQ` (with `before`, `after`), `lineage=true`, or neither for the transcript".into(),
                ));
            }
        };
        Ok((request, timeout))
    }
}

/// `/api/facets`' parameters (the query string).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FacetsParams {
    /// Count the sessions this search text matches.
    q: Option<String>,
    retrieval_lane: Option<String>,
    /// Count the sessions holding a row of this query.
    r#where: Option<String>,
    /// Comma-separated families.
    families: Option<String>,
    budget_ms: Option<u64>,
    #[serde(default)]
    no_idf: bool,
    timeout_ms: Option<u64>,
}

impl FacetsParams {
    fn request(self) -> (quarry::facets::FacetsRequest, Option<Duration>) {
        (
            quarry::facets::FacetsRequest {
                text: self.q,
                lane: self.retrieval_lane,
                filter: self.r#where,
                families: self
                    .families
                    .map(|f| f.split(',').map(str::to_string).collect()),
                budget_ms: self.budget_ms,
                no_idf: self.no_idf,
            },
            self.timeout_ms.map(Duration::from_millis),
        )
    }
}

/// `/api/explain`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExplainParams {
    expression: String,
    #[serde(default)]
    plan: bool,
}

/// The JSON body of a request, or why it is not one: too large, or not what was expected.
fn json_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    max_body: usize,
) -> Result<T, Error> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Error::BodyTooLarge { limit: max_body }
        } else {
            Error::BadRequest(rejection.body_text())
        }
    })?;
    serde_json::from_slice(&body)
        .map_err(|e| Error::BadRequest(format!("the body is not the JSON expected: {e}")))
}

/// The parameters of a query string, or why they are not what was expected.
fn params<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, Error> {
    query
        .map(|Query(p)| p)
        .map_err(|e| Error::BadRequest(e.body_text()))
}

/// A JSON answer.
fn json_response(body: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body + "\n",
    )
        .into_response()
}

async fn healthz() -> Response {
    json_response(
        serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}).to_string(),
    )
}

async fn not_found(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Response {
    let e = Error::NotFound(
        "no such endpoint: see /api/query, /api/query-units, /api/search, /api/facets, /api/read, /api/refs/resolve, /api/explain, /api/tables, /api/dashboard, /healthz"
            .into(),
    );
    app.service
        .refused_anonymously("http", &peer.ip().to_string(), &e);
    error_response(&e, None)
}

async fn sql_query(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match json_body::<SqlBody>(body, app.service.limits().max_body) {
        Ok(b) => {
            let request = ask(Ask::sql(b.sql), b.limit, b.offset, b.timeout_ms);
            app.answer(&asker, request, &headers, Format::SqlJson).await
        }
        Err(e) => app.refuse(&asker, "POST /api/query", e),
    }
}

async fn search_get(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    query: Result<Query<SearchParams>, QueryRejection>,
) -> Response {
    match params(query) {
        Ok(p) => app.search(&asker, p).await,
        Err(e) => app.refuse(&asker, "GET /api/search", e),
    }
}

async fn facets_get(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    query: Result<Query<FacetsParams>, QueryRejection>,
) -> Response {
    match params(query) {
        Ok(p) => app.facets(&asker, p).await,
        Err(e) => app.refuse(&asker, "GET /api/facets", e),
    }
}

async fn read_get(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    query: Result<Query<ReadParams>, QueryRejection>,
) -> Response {
    match params(query) {
        Ok(p) => app.read(&asker, p).await,
        Err(e) => app.refuse(&asker, "GET /api/read", e),
    }
}

/// `/api/refs/resolve`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveParams {
    r#ref: String,
    timeout_ms: Option<u64>,
}

async fn resolve_get(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    query: Result<Query<ResolveParams>, QueryRejection>,
) -> Response {
    match params(query) {
        Ok(p) => {
            let request = quarry::read::ReadRequest::Resolve(p.r#ref);
            app.answer_read(&asker, &request, p.timeout_ms.map(Duration::from_millis))
                .await
        }
        Err(e) => app.refuse(&asker, "GET /api/refs/resolve", e),
    }
}

async fn search_post(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match json_body::<SearchParams>(body, app.service.limits().max_body) {
        Ok(p) => app.search(&asker, p).await,
        Err(e) => app.refuse(&asker, "POST /api/search", e),
    }
}

async fn units_get(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    headers: HeaderMap,
    query: Result<Query<UnitsParams>, QueryRejection>,
) -> Response {
    match params(query) {
        Ok(p) => app.answer(&asker, p.into(), &headers, Format::Json).await,
        Err(e) => app.refuse(&asker, "GET /api/query-units", e),
    }
}

async fn units_post(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match json_body::<UnitsParams>(body, app.service.limits().max_body) {
        Ok(p) => app.answer(&asker, p.into(), &headers, Format::Json).await,
        Err(e) => app.refuse(&asker, "POST /api/query-units", e),
    }
}

async fn explain(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    query: Result<Query<ExplainParams>, QueryRejection>,
) -> Response {
    let p = match params(query) {
        Ok(p) => p,
        Err(e) => return app.refuse(&asker, "GET /api/explain", e),
    };
    match app.service.explain(&asker, &p.expression, p.plan).await {
        Ok(Explained::Parse { json, .. }) => json_response(json),
        Ok(Explained::Plan(plan)) => {
            json_response(serde_json::json!({"expression": p.expression, "plan": plan}).to_string())
        }
        Err(e) => error_response(&e, Some(&p.expression)),
    }
}

async fn tables(State(app): State<Arc<App>>, Extension(asker): Extension<Asker>) -> Response {
    match app.service.tables(&asker).await {
        Ok(t) => {
            json_response(serde_json::json!({"scope": t.scope, "tables": t.tables}).to_string())
        }
        Err(e) => error_response(&e, None),
    }
}
