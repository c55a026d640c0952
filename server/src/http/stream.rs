//! A streamed answer's body: a task of its own owns the answer (its query, session and slot),
//! hands each batch to the output module's encoder and the bytes to the response body through
//! a small bounded channel, then ends the body with trailers (`x-quarry-rows`,
//! `x-quarry-truncated`; HTTP sends them to clients that ask with `TE: trailers`). The
//! request's deadline bounds computing (the answer's stream keeps it) and sending, so a client
//! that stops reading cannot hold a slot past the time limit. A failure before the first bytes
//! is the response's own status; one after them breaks the body off (no final chunk), never a
//! short answer that looks complete.

use std::sync::{Arc, Mutex};
use std::task::Poll;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use futures::StreamExt;

use crate::Answer;
use quarry::format::Format;
use quarry::output::Encoder;
use quarry::{Completion, Error, ResultMeta};

/// How a streamed answer ended, as its body learns it.
enum Ending {
    /// Still running.
    Running,
    /// Every row was sent (what the trailers say).
    Complete(Completion),
    /// It failed or timed out: the body breaks off at once, dropping what is still queued.
    Broken(String),
}

/// The producer of a streamed answer (see the module docs).
struct Pump {
    answer: Answer,
    encoder: Encoder,
    chunks: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    first: Option<tokio::sync::oneshot::Sender<Result<(), Error>>>,
    ending: Arc<Mutex<Ending>>,
}

impl Pump {
    fn set_ending(&self, ending: Ending) {
        *self.ending.lock().unwrap_or_else(|p| p.into_inner()) = ending;
    }

    /// Runs the answer to its end, its failure, its deadline, or the client's going away.
    async fn run(mut self) {
        let meta = self.answer.stream.meta().clone();
        let schema = self.answer.stream.schema();
        let mut pending = match self.encoder.begin(&meta, &schema) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.answer.stream.record_failure(&e);
                return self.fail(e);
            }
        };
        loop {
            // The answer's stream fails by itself at the deadline (and records it).
            let last = match self.answer.stream.next().await {
                Some(Ok(batch)) => match self.encoder.batch(&batch) {
                    Ok(bytes) => {
                        pending.extend(bytes);
                        false
                    }
                    Err(e) => {
                        self.answer.stream.record_failure(&e);
                        return self.fail(e);
                    }
                },
                // The stream recorded its own failure.
                Some(Err(e)) => return self.fail(e),
                None => match self.finish() {
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
            if last && let Some(completion) = self.answer.stream.completion() {
                self.set_ending(Ending::Complete(completion));
            }
            if !pending.is_empty() {
                let chunk = Bytes::from(std::mem::take(&mut pending));
                let deadline = self.answer.deadline;
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline.at) => {
                        // The client did not read in time: the answer is cut off (and, if the
                        // query had not ended, cancelled and recorded as timed out).
                        let e = Error::Timeout(deadline.limit);
                        self.answer.stream.record_failure(&e);
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

    /// The closing bytes, once the rows have ended.
    fn finish(&mut self) -> Result<Vec<u8>, Error> {
        let completion = self.answer.stream.completion().ok_or_else(|| {
            Error::Internal("a streamed answer ended without its completion".into())
        })?;
        self.encoder.finish(&completion, &[]).inspect_err(|e| {
            self.answer.stream.record_failure(e);
        })
    }

    /// Ends the answer with `e`: as the response's status when nothing was sent yet, else as
    /// a body that breaks off.
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

/// A streamed answer's body: the pump's chunks, then the trailers.
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
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
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
                    Ending::Complete(c) => Ok(http_body::Frame::trailers(trailers(&c))),
                    Ending::Running => Err(std::io::Error::other("the answer did not complete")),
                    Ending::Broken(message) => Err(std::io::Error::other(message)),
                }))
            }
        }
    }
}

/// The trailers of a complete answer.
fn trailers(c: &Completion) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert("x-quarry-rows", HeaderValue::from(c.rows));
    trailers.insert(
        "x-quarry-truncated",
        HeaderValue::from_static(if c.truncated { "true" } else { "false" }),
    );
    trailers
}

/// `answer` streamed in `format` (see the module docs).
pub async fn streamed(mut answer: Answer, format: Format) -> Result<Response, Error> {
    let encoder = Encoder::for_stream(format, &mut answer.stream)?;
    let meta = answer.stream.meta().clone();
    let (chunks, receiver) = tokio::sync::mpsc::channel(4);
    let (first, first_ready) = tokio::sync::oneshot::channel();
    let ending = Arc::new(Mutex::new(Ending::Running));
    tokio::spawn(
        Pump {
            answer,
            encoder,
            chunks,
            first: Some(first),
            ending: ending.clone(),
        }
        .run(),
    );
    first_ready
        .await
        .map_err(|_| Error::Internal("the answer's task ended without a word".into()))??;
    let body = AnswerBody {
        chunks: receiver,
        ending,
        ended: false,
    };
    let mut response = Response::new(Body::new(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.media_type()),
    );
    headers.insert(
        header::TRAILER,
        HeaderValue::from_static("x-quarry-rows, x-quarry-truncated"),
    );
    describe(headers, &meta);
    Ok(response)
}

/// What is known of an answer up front, as `x-quarry-*` headers.
pub fn describe(headers: &mut HeaderMap, meta: &ResultMeta) {
    let semantics = serde_json::to_value(meta.semantics)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    for (name, value) in [
        ("x-quarry-unit", meta.unit.clone()),
        ("x-quarry-semantics", semantics),
        ("x-quarry-source", meta.source.name().to_string()),
        ("x-quarry-generation", meta.generation.to_string()),
        ("x-quarry-exact", meta.exact.to_string()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}
