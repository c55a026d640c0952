//! The web page: its assets (compiled into the binary, no network at run time) and the browser
//! sign-in. A person signs in with a bearer token once (`POST /api/session`, the token in the
//! `Authorization` header, never in a URL); the answer sets an `HttpOnly`, `SameSite=Strict`
//! cookie naming a sign-in that lasts [`SIGN_IN_TTL`] and ends when the token is revoked.
//! Every later request of the page (downloads and exports too) goes with that cookie, so the
//! page sees exactly what the token's scope sees.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::auth::{COOKIE, SIGN_IN_TTL, asker_of};
use super::{App, error_response, json_response};
use crate::Asker;
use quarry::audit::RequestKind;

/// One asset of the page: its path, media type and bytes.
struct Asset {
    path: &'static str,
    media_type: &'static str,
    body: &'static str,
}

/// The page's assets.
const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        media_type: "text/html; charset=utf-8",
        body: include_str!("../../web/index.html"),
    },
    Asset {
        path: "/assets/app.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/app.js"),
    },
    Asset {
        path: "/assets/app.css",
        media_type: "text/css; charset=utf-8",
        body: include_str!("../../web/app.css"),
    },
];

/// What the page may load and whom it may talk to: this server only.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The asset at `path`, when there is one.
pub(super) fn asset(path: &str) -> Option<Response> {
    let asset = ASSETS.iter().find(|a| a.path == path)?;
    let mut response = (StatusCode::OK, asset.body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.media_type),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(response)
}

/// `GET /`, `GET /assets/…`.
pub(super) async fn page(uri: axum::http::Uri) -> Response {
    asset(uri.path()).unwrap_or_else(|| StatusCode::NOT_FOUND.into_response())
}

/// `POST /api/session`: signs in with the request's bearer token; the answer sets the cookie.
pub(super) async fn sign_in(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let entry = match app.tokens.authorize(&headers) {
        Ok(entry) => entry,
        Err(e) => {
            app.service
                .refused_anonymously("http", &peer.ip().to_string(), &e);
            return error_response(&e, None);
        }
    };
    let started = std::time::Instant::now();
    let signed = app.tokens.sign_in(&entry);
    let asker = asker_of(&entry);
    app.service.record(
        &asker,
        RequestKind::SignIn,
        "/api/session",
        None,
        started,
        signed.as_ref().err(),
    );
    let cookie = match signed {
        Ok(cookie) => cookie,
        Err(e) => return error_response(&e, None),
    };
    let mut response = json_response(
        serde_json::json!({
            "who": entry.name,
            "scope": entry.scope,
            "expires_in_s": SIGN_IN_TTL.as_secs(),
        })
        .to_string(),
    );
    set_cookie(&mut response, &cookie, SIGN_IN_TTL.as_secs());
    response
}

/// `GET /api/session`: who the request's token or sign-in is.
pub(super) async fn whoami(Extension(asker): Extension<Asker>) -> Response {
    json_response(
        serde_json::json!({
            "who": asker.caller.who,
            "scope": asker.scope_name(),
        })
        .to_string(),
    )
}

/// `DELETE /api/session`: ends the sign-in; the answer clears the cookie.
pub(super) async fn sign_out(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    headers: HeaderMap,
) -> Response {
    let started = std::time::Instant::now();
    app.tokens.sign_out(&headers);
    app.service.record(
        &asker,
        RequestKind::SignOut,
        "/api/session",
        None,
        started,
        None,
    );
    let mut response = json_response(serde_json::json!({"signed_out": true}).to_string());
    set_cookie(&mut response, "", 0);
    response
}

fn set_cookie(response: &mut Response, value: &str, max_age: u64) {
    let cookie = format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
}
