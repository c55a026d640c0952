//! `GET /api/live`: server-sent events telling a caller what the archive's writers committed,
//! in the caller's scope. The stream opens with `hello` (the archive's generation); each time
//! the generation moves it sends `changes`: the changed sessions the caller's scope sees, each
//! with its messages, turns and committed turns (or `reload` when more than 500 it sees changed
//! at once). A session the scope does not see is never named, and a generation that moved only
//! for others sends nothing. The caller is checked again at every change and every 15 s: a
//! sign-out, an expired sign-in, a revoked token or a scope that no longer resolves ends the
//! stream with `end`; a token moved to another scope gets that scope's changes from then on.
//!
//! The stream is audited once, when it opens; what it sends is computed by quarry, not asked
//! for by the caller, and takes no query slot.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use super::App;
use crate::Asker;
use quarry::Error;
use quarry::audit::RequestKind;

/// How often the archive's generation is looked at.
const POLL: Duration = Duration::from_millis(250);

/// How often the caller is checked again while nothing changes.
const RECHECK: Duration = Duration::from_secs(15);

/// `GET /api/live`.
pub(super) async fn live(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    headers: HeaderMap,
) -> Response {
    let started = Instant::now();
    let target = "GET /api/live";
    // The scope is resolved, and the archive read, before anything is sent.
    let first = app.service.live_changes(&asker, i64::MAX).await;
    app.service.record(
        &asker,
        RequestKind::Live,
        target,
        None,
        started,
        first.as_ref().err(),
    );
    let generation = match first {
        Ok(changes) => changes.generation,
        Err(e) => return super::error_response(&e, None),
    };
    Sse::new(events(app, asker, headers, generation))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Where a caller's stream is.
struct Feed {
    app: Arc<App>,
    asker: Asker,
    headers: HeaderMap,
    seen: i64,
    hello: bool,
    ended: bool,
    checked: Instant,
}

fn events(
    app: Arc<App>,
    asker: Asker,
    headers: HeaderMap,
    generation: i64,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let feed = Feed {
        app,
        asker,
        headers,
        seen: generation,
        hello: true,
        ended: false,
        checked: Instant::now(),
    };
    futures::stream::unfold(feed, |mut feed| async move {
        if feed.ended {
            return None;
        }
        if feed.hello {
            feed.hello = false;
            let event = json_event("hello", &serde_json::json!({ "generation": feed.seen }));
            return Some((Ok(event), feed));
        }
        loop {
            tokio::time::sleep(POLL).await;
            let moved = feed
                .app
                .service
                .quarry()
                .archive_generation()
                .is_ok_and(|now| now != feed.seen);
            if !moved && feed.checked.elapsed() < RECHECK {
                continue;
            }
            // The caller as it stands now: signed in still, its token valid, under the scope
            // the tokens file gives it now (a narrowed scope narrows the stream).
            feed.checked = Instant::now();
            let caller = feed
                .app
                .tokens
                .caller(&feed.headers, &Method::GET)
                .map(|entry| super::auth::asker_of(&entry))
                .and_then(|asker| {
                    feed.app.service.scope(asker.scope_name())?;
                    Ok(asker)
                });
            match caller {
                Ok(asker) => feed.asker = asker,
                Err(e) => {
                    feed.ended = true;
                    return Some((Ok(json_event("end", &ended(&e))), feed));
                }
            }
            if !moved {
                continue;
            }
            match feed.app.service.live_changes(&feed.asker, feed.seen).await {
                Ok(changes) => {
                    feed.seen = changes.generation;
                    if changes.sessions.is_empty() && !changes.reload {
                        continue;
                    }
                    return Some((Ok(json_event("changes", &changes)), feed));
                }
                // The caller's scope no longer resolves: the stream ends; anything else (the
                // archive busy, say) is tried again at the next look.
                Err(e @ Error::Scope(_)) => {
                    feed.ended = true;
                    return Some((Ok(json_event("end", &ended(&e))), feed));
                }
                Err(_) => {}
            }
        }
    })
}

/// Why a stream ended, as its `end` event says.
fn ended(e: &Error) -> serde_json::Value {
    serde_json::json!({ "code": e.code(), "message": e.message() })
}

fn json_event(name: &str, data: &impl serde::Serialize) -> Event {
    let text = serde_json::to_string(data).unwrap_or_else(|_| "{}".into());
    Event::default().event(name).data(text)
}
