//! `quarry serve`: the HTTP API (axum on tokio).
//!
//! | endpoint | what |
//! |---|---|
//! | `POST /api/query` | read-only SQL: `{"sql": ...}`, answered as `{columns, rows, truncated, skipped_partitions}` |
//! | `GET\|POST /api/query-units` | the language: `expression=` (or `{"expression": ...}`), answered as the envelope |
//! | `GET /api/explain` | how `expression=` parses (`plan=true`: DataFusion's plans, admin scope) |
//! | `GET /api/tables` | the caller's catalog: the tables and columns its scope may query |
//! | `GET /healthz` | liveness, no token needed |
//!
//! Every `/api/` request carries `Authorization: Bearer TOKEN`; the tokens file maps the
//! token's SHA-256 to a name and a scope, and is read again whenever it changes. Answers stream
//! as NDJSON (`Accept: application/x-ndjson`) or Arrow IPC (`Accept:
//! application/vnd.apache.arrow.stream`), a batch at a time, so no answer is held whole; JSON
//! answers are capped at `--max-rows`. Errors are JSON `{code, message, diagnostics}` with
//! their status: 400 a bad query or request, 401 no valid token, 403 a scope that may not,
//! 404 no such endpoint, 408 the time limit, 413 a body too large, 5xx the server's trouble.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::json::writer::{LineDelimited, WriterBuilder};
use datafusion::arrow::record_batch::RecordBatch;
use futures::StreamExt;
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;

use super::{Backend, Deadline, buffered_cap, error_body};
use crate::api::{Caller, Caps, Error, Quarry, QueryStream, Scope};
use crate::audit::Language;
use crate::output::envelope;
use crate::tokens::{FileStamp, TokenEntry, TokenError, Tokens};

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
    /// The archive could not be opened.
    #[error(transparent)]
    Archive(Error),
    /// The address could not be listened on, or serving failed.
    #[error("cannot serve on {address}: {message}")]
    Listen {
        /// The address.
        address: String,
        /// What went wrong.
        message: String,
    },
}

/// The tokens file as last read, read again when it changes (so a revoked token stops working
/// at the next request, without a restart).
struct TokenStore {
    path: PathBuf,
    cached: Mutex<Option<(FileStamp, Arc<Tokens>)>>,
}

impl TokenStore {
    fn new(path: PathBuf) -> TokenStore {
        TokenStore {
            path,
            cached: Mutex::new(None),
        }
    }

    /// The tokens as the file holds them now. A file that became unreadable, malformed or
    /// readable by others fails every request until it is fixed (never the last good copy:
    /// that could keep a revoked token alive).
    fn current(&self) -> Result<Arc<Tokens>, TokenError> {
        let stamp = FileStamp::of(&self.path).map_err(|e| TokenError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, tokens)) = cached.as_ref()
            && *seen == stamp
        {
            return Ok(tokens.clone());
        }
        *cached = None;
        let tokens = Arc::new(Tokens::load(&self.path)?);
        *cached = Some((stamp, tokens.clone()));
        Ok(tokens)
    }
}

/// The server's shared state.
struct App {
    backend: Backend,
    tokens: TokenStore,
}

/// Serves the HTTP API until SIGINT or SIGTERM; then stops accepting, lets running queries
/// finish (each within its time limit, so their outcomes are audited) and returns.
pub async fn serve(backend: Backend, options: ServeOptions) -> Result<(), ServeError> {
    let tokens = Tokens::load(&options.tokens)?;
    if tokens.tokens.is_empty() {
        return Err(ServeError::NoTokens(options.tokens.clone()));
    }
    for entry in &tokens.tokens {
        if let Err(e) = backend.scope(&entry.scope) {
            eprintln!(
                "quarry serve: warning: token {}: its scope cannot be used ({e}); its requests will be refused",
                entry.name
            );
        }
    }
    // Fails early on a missing or unreadable archive.
    backend
        .open(Scope::Admin, Caller::default())
        .await
        .map_err(ServeError::Archive)?;
    let max_body = backend.limits().max_body;
    let app = Arc::new(App {
        backend,
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
        app.backend.archive().display(),
        options.tokens.display(),
        app.backend.limits().timeout.as_secs_f64(),
        app.backend.limits().max_rows,
        app.backend.limits().max_concurrent
    );
    // After SIGINT/SIGTERM running queries get their time limit and a little more; a second
    // interrupt, or the end of that wait, stops the server at once (a query still running is
    // then dropped, and recorded as abandoned).
    let grace = app.backend.limits().timeout + Duration::from_secs(5);
    let (stopping, mut stopped) = tokio::sync::watch::channel(false);
    let serving = axum::serve(listener, router)
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
        .route("/api/explain", get(explain))
        .route("/api/tables", get(tables))
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            require_token,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .merge(api)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(log_request))
        .with_state(app)
}

/// Lets a request on only with a valid bearer token, whose entry it carries on to the handler.
async fn require_token(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Response {
    match app.authorize(request.headers()) {
        Ok(entry) => {
            request.extensions_mut().insert(entry);
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
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

/// A failed request: its status and JSON body.
struct ApiError {
    status: StatusCode,
    body: serde_json::Value,
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl std::fmt::Display) -> ApiError {
        let message = message.to_string();
        ApiError {
            status,
            body: serde_json::json!({
                "code": code,
                "message": message,
                "diagnostics": [{"code": code, "message": message}],
            }),
        }
    }

    /// A library error; `query` is the text it is about (a query error is drawn under it).
    fn of(e: Error, query: Option<&str>) -> ApiError {
        ApiError {
            status: status_of(&e),
            body: error_body(&e, query),
        }
    }

    fn unauthorized(message: &str) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    fn bad_request(message: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// A body that could not be read: too large (413), or broken.
    fn body(rejection: BytesRejection) -> ApiError {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "the request body is larger than the server's --max-body",
            )
        } else {
            ApiError::new(rejection.status(), "bad_request", rejection.body_text())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            format!("{}\n", self.body),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"quarry\""),
            );
        }
        response
    }
}

/// The status of a library error: the caller's fault is 4xx (a time limit 408), the server's
/// 5xx.
fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
        Error::AdminOnly(_) | Error::Scope(_) => StatusCode::FORBIDDEN,
        // The server's own settings or resources, not the request.
        Error::NoSnapshot(_)
        | Error::StaleSnapshot { .. }
        | Error::MemoryLimit(_)
        | Error::Audit(_) => StatusCode::SERVICE_UNAVAILABLE,
        e if e.is_usage() => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl App {
    /// The token entry of the request's bearer token.
    fn authorize(&self, headers: &HeaderMap) -> Result<TokenEntry, ApiError> {
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("give a token: Authorization: Bearer TOKEN"))?;
        let text = value
            .to_str()
            .map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
        let token = text
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| ApiError::unauthorized("use Authorization: Bearer TOKEN"))?;
        let tokens = self.tokens.current().map_err(|e| {
            eprintln!("quarry serve: {e}");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "tokens_unavailable",
                "the server cannot read its tokens file; its operator has been told",
            )
        })?;
        tokens
            .find(token)
            .cloned()
            .ok_or_else(|| ApiError::unauthorized("the token is not valid (unknown or revoked)"))
    }

    /// The session of a request by `entry`: its scope as the scopes file says now.
    async fn open(&self, entry: &TokenEntry) -> Result<Quarry, ApiError> {
        let scope = self
            .backend
            .scope(&entry.scope)
            .map_err(|e| ApiError::of(e, None))?;
        let caller = Caller {
            who: Some(entry.name.clone()),
            surface: "http".into(),
        };
        self.backend
            .open(scope, caller)
            .await
            .map_err(|e| ApiError::of(e, None))
    }

    /// Runs one query for `entry` and answers in the format the request accepts.
    async fn answer(
        &self,
        entry: &TokenEntry,
        language: Language,
        request: QueryRequest,
        headers: &HeaderMap,
    ) -> Result<Response, ApiError> {
        let format = AnswerFormat::accepted(headers);
        let deadline = self
            .backend
            .deadline(request.timeout_ms.map(Duration::from_millis));
        let slot = self
            .backend
            .slot(deadline)
            .await
            .map_err(|e| ApiError::of(e, None))?;
        let quarry = self.open(entry).await?;
        let caps = Caps {
            limit: match format {
                AnswerFormat::Json => {
                    Some(buffered_cap(request.limit, self.backend.limits().max_rows))
                }
                _ => request.limit,
            },
            offset: request.offset,
        };
        let text = request.text.as_str();
        let started = tokio::time::timeout_at(deadline.at, async {
            match language {
                Language::Sql => quarry.sql(text, caps).await,
                _ => quarry.query(text, caps).await,
            }
        })
        .await
        .map_err(|_| Error::Timeout(deadline.limit))
        .and_then(|started| started)
        .map_err(|e| ApiError::of(e, Some(text)))?;
        if format == AnswerFormat::Json {
            let answer = started
                .collect_before(deadline.at, deadline.limit)
                .await
                .map_err(|e| ApiError::of(e, Some(text)))?;
            let body = match language {
                Language::Sql => envelope::sql_json(&answer),
                _ => envelope::json(&answer),
            }
            .map_err(|e| ApiError::of(e, None))?;
            return Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body + "\n",
            )
                .into_response());
        }
        stream_answer(started, format, deadline, quarry, slot)
            .await
            .map_err(|e| ApiError::of(e, Some(text)))
    }
}

/// How an answer is sent, by the request's `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnswerFormat {
    /// One JSON document (the default).
    Json,
    /// One JSON object per row, streamed.
    Ndjson,
    /// Arrow IPC stream format, streamed.
    Arrow,
}

impl AnswerFormat {
    const NDJSON: &'static str = "application/x-ndjson";
    const ARROW: &'static str = "application/vnd.apache.arrow.stream";

    fn accepted(headers: &HeaderMap) -> AnswerFormat {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if accept.contains(Self::ARROW) {
            AnswerFormat::Arrow
        } else if accept.contains(Self::NDJSON) {
            AnswerFormat::Ndjson
        } else {
            AnswerFormat::Json
        }
    }
}

/// A streamed answer's producer: a task of its own owns the query, encodes its batches and
/// hands them to the response body through a small bounded channel. It holds the session and
/// the query slot until it ends; the deadline bounds both computing and sending, so a client
/// that stops reading cannot hold a slot past the time limit.
struct Pump {
    stream: QueryStream,
    encoder: Encoder,
    deadline: Deadline,
    chunks: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    first: Option<tokio::sync::oneshot::Sender<Result<(), Error>>>,
    ending: Arc<Mutex<Ending>>,
    _quarry: Quarry,
    _slot: OwnedSemaphorePermit,
}

/// How a streamed answer ended, as its body learns it.
enum Ending {
    /// Still running.
    Running,
    /// Every row was sent (what the trailers say).
    Complete(crate::api::Completion),
    /// It failed or timed out: the body breaks off at once, dropping what is still queued.
    Broken(String),
}

impl Pump {
    fn set_ending(&self, ending: Ending) {
        *self.ending.lock().unwrap_or_else(|p| p.into_inner()) = ending;
    }
}

enum Encoder {
    Ndjson,
    Arrow(Box<StreamWriter<Vec<u8>>>),
}

impl Encoder {
    /// The bytes that open the answer (Arrow's schema message).
    fn head(&mut self) -> Vec<u8> {
        match self {
            Encoder::Ndjson => Vec::new(),
            Encoder::Arrow(writer) => std::mem::take(writer.get_mut()),
        }
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<Vec<u8>, Error> {
        let failed = |e: datafusion::arrow::error::ArrowError| Error::Execution(e.to_string());
        match self {
            Encoder::Ndjson => {
                let mut writer = WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, LineDelimited>(Vec::new());
                writer.write(batch).map_err(failed)?;
                writer.finish().map_err(failed)?;
                Ok(writer.into_inner())
            }
            Encoder::Arrow(writer) => {
                writer.write(batch).map_err(failed)?;
                Ok(std::mem::take(writer.get_mut()))
            }
        }
    }

    fn finish(&mut self) -> Result<Vec<u8>, Error> {
        match self {
            Encoder::Ndjson => Ok(Vec::new()),
            Encoder::Arrow(writer) => {
                writer
                    .finish()
                    .map_err(|e| Error::Execution(e.to_string()))?;
                Ok(std::mem::take(writer.get_mut()))
            }
        }
    }
}

impl Pump {
    /// Runs the answer to its end, its failure, its deadline, or the client's going away.
    async fn run(mut self) {
        let mut pending = self.encoder.head();
        loop {
            let next = tokio::select! {
                _ = tokio::time::sleep_until(self.deadline.at) => {
                    let e = Error::Timeout(self.deadline.limit);
                    self.stream.record_failure(&e);
                    return self.fail(e);
                }
                next = self.stream.next() => next,
            };
            let last = match next {
                Some(Ok(batch)) => match self.encoder.batch(&batch) {
                    Ok(bytes) => {
                        pending.extend(bytes);
                        false
                    }
                    Err(e) => {
                        self.stream.record_failure(&e);
                        return self.fail(e);
                    }
                },
                // The stream recorded its own failure.
                Some(Err(e)) => return self.fail(e),
                None => match self.encoder.finish() {
                    Ok(bytes) => {
                        pending.extend(bytes);
                        true
                    }
                    Err(e) => return self.fail(e),
                },
            };
            // The status line goes out with the first rows (or the end), so a failure before
            // them is answered with its own status.
            if let Some(first) = self.first.take() {
                let _ = first.send(Ok(()));
            }
            if last && let Some(completion) = self.stream.completion() {
                self.set_ending(Ending::Complete(completion));
            }
            if !pending.is_empty() {
                let chunk = Bytes::from(std::mem::take(&mut pending));
                tokio::select! {
                    _ = tokio::time::sleep_until(self.deadline.at) => {
                        // The client did not read in time: the answer is cut off (and, if the
                        // query had not ended, cancelled and recorded as timed out).
                        let e = Error::Timeout(self.deadline.limit);
                        self.stream.record_failure(&e);
                        return self.fail(e);
                    }
                    sent = self.chunks.send(Ok(chunk)) => {
                        if sent.is_err() {
                            // The client went away: dropping the stream records `abandoned`.
                            return;
                        }
                    }
                }
            }
            if last {
                return;
            }
        }
    }

    /// Ends the answer with `e`: as the response's status when nothing was sent yet, else as
    /// a body that breaks off (no final chunk), never one that looks complete.
    fn fail(mut self, e: Error) {
        eprintln!("quarry serve: a streamed answer failed: {e}");
        match self.first.take() {
            Some(first) => {
                let _ = first.send(Err(e));
            }
            None => {
                self.set_ending(Ending::Broken(e.to_string()));
                let _ = self
                    .chunks
                    .try_send(Err(std::io::Error::other(e.to_string())));
            }
        }
    }
}

/// A streamed answer's body: the pump's chunks, then trailers with the row count and whether
/// a `limit` cut the rows. A body whose pump ended without completing breaks off with an
/// error, so the transfer is incomplete to the client.
struct AnswerBody {
    chunks: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    ending: Arc<Mutex<Ending>>,
    ended: bool,
}

impl axum::body::HttpBody for AnswerBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        use std::task::Poll;
        if self.ended {
            return Poll::Ready(None);
        }
        let broken = match &*self.ending.lock().unwrap_or_else(|p| p.into_inner()) {
            Ending::Broken(message) => Some(message.clone()),
            _ => None,
        };
        if let Some(message) = broken {
            self.ended = true;
            return Poll::Ready(Some(Err(std::io::Error::other(message))));
        }
        match self.chunks.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(bytes))) => Poll::Ready(Some(Ok(http_body::Frame::data(bytes)))),
            Poll::Ready(Some(Err(e))) => {
                self.ended = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                self.ended = true;
                let ending = std::mem::replace(
                    &mut *self.ending.lock().unwrap_or_else(|p| p.into_inner()),
                    Ending::Running,
                );
                Poll::Ready(Some(match ending {
                    Ending::Complete(c) => {
                        let mut trailers = HeaderMap::new();
                        trailers.insert("x-quarry-rows", HeaderValue::from(c.rows));
                        trailers.insert(
                            "x-quarry-truncated",
                            HeaderValue::from_static(if c.truncated { "true" } else { "false" }),
                        );
                        Ok(http_body::Frame::trailers(trailers))
                    }
                    Ending::Running => Err(std::io::Error::other("the answer did not complete")),
                    Ending::Broken(message) => Err(std::io::Error::other(message)),
                }))
            }
        }
    }
}

/// A streamed answer: headers with what is known up front, then the rows a batch at a time,
/// then trailers (`x-quarry-rows`, `x-quarry-truncated`; HTTP sends them to clients that ask
/// with `TE: trailers`). A failure before the first rows is
/// its own status (408 at the time limit); one after them breaks the body off.
async fn stream_answer(
    mut stream: QueryStream,
    format: AnswerFormat,
    deadline: Deadline,
    quarry: Quarry,
    slot: OwnedSemaphorePermit,
) -> Result<Response, Error> {
    if !stream.attached_units().is_empty() {
        let e = Error::NotStreamable(match format {
            AnswerFormat::Arrow => "arrow",
            _ => "ndjson",
        });
        stream.record_failure(&e);
        return Err(e);
    }
    let (content_type, encoder) = match format {
        AnswerFormat::Arrow => {
            let writer = StreamWriter::try_new(Vec::new(), &stream.schema())
                .map_err(|e| Error::Execution(e.to_string()))?;
            (AnswerFormat::ARROW, Encoder::Arrow(Box::new(writer)))
        }
        _ => (AnswerFormat::NDJSON, Encoder::Ndjson),
    };
    let meta = stream.meta().clone();
    let (chunks, receiver) = tokio::sync::mpsc::channel(4);
    let (first, first_ready) = tokio::sync::oneshot::channel();
    let ending = Arc::new(Mutex::new(Ending::Running));
    tokio::spawn(
        Pump {
            stream,
            encoder,
            deadline,
            chunks,
            first: Some(first),
            ending: ending.clone(),
            _quarry: quarry,
            _slot: slot,
        }
        .run(),
    );
    first_ready
        .await
        .map_err(|_| Error::Execution("the answer's task ended without a word".into()))??;
    let body = AnswerBody {
        chunks: receiver,
        ending,
        ended: false,
    };
    let mut response = Response::new(Body::new(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::TRAILER,
        HeaderValue::from_static("x-quarry-rows, x-quarry-truncated"),
    );
    for (name, value) in [
        ("x-quarry-unit", meta.unit.clone()),
        ("x-quarry-semantics", semantics_name(&meta)),
        ("x-quarry-source", meta.source.name().to_string()),
        ("x-quarry-generation", meta.generation.to_string()),
        ("x-quarry-exact", meta.exact.to_string()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    Ok(response)
}

fn semantics_name(meta: &crate::api::ResultMeta) -> String {
    serde_json::to_value(meta.semantics)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A query request, in either language.
struct QueryRequest {
    text: String,
    limit: Option<usize>,
    offset: Option<usize>,
    timeout_ms: Option<u64>,
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
    timeout_ms: Option<u64>,
}

impl From<UnitsParams> for QueryRequest {
    fn from(p: UnitsParams) -> Self {
        QueryRequest {
            text: p.expression,
            limit: p.limit,
            offset: p.offset,
            timeout_ms: p.timeout_ms,
        }
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

fn json_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let body = body.map_err(ApiError::body)?;
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not the JSON expected: {e}")))
}

fn params<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query
        .map(|Query(p)| p)
        .map_err(|e| ApiError::bad_request(e.body_text()))
}

fn respond(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(IntoResponse::into_response)
}

async fn healthz() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        format!(
            "{}\n",
            serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})
        ),
    )
        .into_response()
}

async fn not_found() -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such endpoint: see /api/query, /api/query-units, /api/explain, /api/tables, /healthz",
    )
    .into_response()
}

async fn sql_query(
    State(app): State<Arc<App>>,
    Extension(entry): Extension<TokenEntry>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    respond(
        async {
            let body: SqlBody = json_body(body)?;
            let request = QueryRequest {
                text: body.sql,
                limit: body.limit,
                offset: body.offset,
                timeout_ms: body.timeout_ms,
            };
            app.answer(&entry, Language::Sql, request, &headers).await
        }
        .await,
    )
}

async fn units_get(
    State(app): State<Arc<App>>,
    Extension(entry): Extension<TokenEntry>,
    headers: HeaderMap,
    query: Result<Query<UnitsParams>, QueryRejection>,
) -> Response {
    respond(
        async {
            let request = params(query)?.into();
            app.answer(&entry, Language::Query, request, &headers).await
        }
        .await,
    )
}

async fn units_post(
    State(app): State<Arc<App>>,
    Extension(entry): Extension<TokenEntry>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    respond(
        async {
            let request = json_body::<UnitsParams>(body)?.into();
            app.answer(&entry, Language::Query, request, &headers).await
        }
        .await,
    )
}

async fn explain(
    State(app): State<Arc<App>>,
    Extension(entry): Extension<TokenEntry>,
    query: Result<Query<ExplainParams>, QueryRejection>,
) -> Response {
    respond(
        async {
            let p = params(query)?;
            let body = if p.plan {
                let quarry = app.open(&entry).await?;
                let plan = quarry
                    .explain_plan(&p.expression)
                    .await
                    .map_err(|e| ApiError::of(e, Some(&p.expression)))?;
                serde_json::json!({"expression": p.expression, "plan": plan}).to_string()
            } else {
                quarry_grammar::explain::explain(&p.expression)
                    .map_err(|d| ApiError::of(Error::Query(d), Some(&p.expression)))?
                    .to_json()
            };
            Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body + "\n",
            )
                .into_response())
        }
        .await,
    )
}

async fn tables(State(app): State<Arc<App>>, Extension(entry): Extension<TokenEntry>) -> Response {
    respond(
        async {
            let quarry = app.open(&entry).await?;
            let catalog = quarry.catalog().await.map_err(|e| ApiError::of(e, None))?;
            let body = serde_json::json!({"scope": quarry.scope().name(), "tables": catalog});
            Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                format!("{body}\n"),
            )
                .into_response())
        }
        .await,
    )
}
