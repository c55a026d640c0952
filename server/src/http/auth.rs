//! Bearer tokens: the tokens file as last read (read again whenever it changes, so a revoked
//! token stops working at the next request, without a restart), the browser sign-ins made from
//! them ([`super::web`]), and the middleware that lets a request on only with a valid token or
//! sign-in, whose caller and scope it hands to the handler.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{App, error_response};
use crate::tokens::{FileStamp, TokenEntry, TokenError, Tokens};
use crate::{Asker, ScopeRef};
use quarry::{Caller, Error};

/// The name of the sign-in cookie.
pub(super) const COOKIE: &str = "quarry_session";

/// How long a browser sign-in lasts.
pub(super) const SIGN_IN_TTL: Duration = Duration::from_secs(8 * 3600);

/// A browser sign-in: the token it was made from (by hash: revoking the token ends it) and
/// when it ends.
struct SignIn {
    token_sha256: String,
    expires: Instant,
}

/// The tokens file as last read, and the browser sign-ins made from its tokens.
pub(super) struct TokenStore {
    path: PathBuf,
    cached: Mutex<Option<(FileStamp, Arc<Tokens>)>>,
    /// Sign-ins by the SHA-256 of their cookie (the cookie itself is kept nowhere).
    sign_ins: Mutex<HashMap<String, SignIn>>,
}

impl TokenStore {
    pub(super) fn new(path: PathBuf) -> TokenStore {
        TokenStore {
            path,
            cached: Mutex::new(None),
            sign_ins: Mutex::new(HashMap::new()),
        }
    }

    /// Makes a sign-in for the token of `entry`: the cookie's value (random, 256 bits).
    pub(super) fn sign_in(&self, entry: &TokenEntry) -> Result<String, Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::Internal(format!("no randomness for a sign-in: {e}")))?;
        let cookie: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut sign_ins = self.sign_ins.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        sign_ins.retain(|_, s| s.expires > now);
        sign_ins.insert(
            crate::tokens::sha256_hex(&cookie),
            SignIn {
                token_sha256: entry.sha256.to_ascii_lowercase(),
                expires: now + SIGN_IN_TTL,
            },
        );
        Ok(cookie)
    }

    /// Ends the sign-in whose cookie `headers` carry, if any.
    pub(super) fn sign_out(&self, headers: &HeaderMap) {
        if let Some(cookie) = cookie_of(headers) {
            let mut sign_ins = self.sign_ins.lock().unwrap_or_else(|p| p.into_inner());
            sign_ins.remove(&crate::tokens::sha256_hex(&cookie));
        }
    }

    /// The token entry of the sign-in whose cookie `headers` carry: refused once it expired
    /// or its token was revoked, and for a request from another site (or, when it changes
    /// anything, one whose `Origin` is not this server's).
    fn signed_in(&self, headers: &HeaderMap, method: &Method) -> Result<TokenEntry, Error> {
        let unauthorized = |message: &str| Error::Unauthorized(message.to_string());
        let cookie = cookie_of(headers).ok_or_else(|| {
            unauthorized("give a token (Authorization: Bearer TOKEN) or sign in on the page")
        })?;
        check_same_site(headers, method)?;
        let key = crate::tokens::sha256_hex(&cookie);
        let token = {
            let mut sign_ins = self.sign_ins.lock().unwrap_or_else(|p| p.into_inner());
            match sign_ins.get(&key) {
                Some(s) if s.expires > Instant::now() => s.token_sha256.clone(),
                Some(_) => {
                    sign_ins.remove(&key);
                    return Err(unauthorized("the sign-in expired: sign in again"));
                }
                None => return Err(unauthorized("not signed in (or the server restarted)")),
            }
        };
        let tokens = self.current().map_err(|e| {
            eprintln!("quarry serve: {e}");
            Error::TokensUnavailable
        })?;
        match tokens
            .tokens
            .iter()
            .find(|e| e.sha256.eq_ignore_ascii_case(&token))
        {
            Some(entry) => Ok(entry.clone()),
            None => {
                self.sign_ins
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&key);
                Err(unauthorized("the token of this sign-in was revoked"))
            }
        }
    }

    /// The caller of a request: its bearer token when it has an `Authorization` header, else
    /// its sign-in cookie.
    pub(super) fn caller(&self, headers: &HeaderMap, method: &Method) -> Result<TokenEntry, Error> {
        if headers.contains_key(header::AUTHORIZATION) {
            self.authorize(headers)
        } else {
            self.signed_in(headers, method)
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

    /// The entry of the request's bearer token.
    pub(super) fn authorize(&self, headers: &HeaderMap) -> Result<TokenEntry, Error> {
        let unauthorized = |message: &str| Error::Unauthorized(message.to_string());
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| unauthorized("give a token: Authorization: Bearer TOKEN"))?;
        let text = value
            .to_str()
            .map_err(|_| unauthorized("the Authorization header is not text"))?;
        let token = text
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| unauthorized("use Authorization: Bearer TOKEN"))?;
        let tokens = self.current().map_err(|e| {
            eprintln!("quarry serve: {e}");
            Error::TokensUnavailable
        })?;
        tokens
            .find(token)
            .cloned()
            .ok_or_else(|| unauthorized("the token is not valid (unknown or revoked)"))
    }
}

/// Lets a request on only with a valid bearer token or sign-in: the handler gets its
/// [`Asker`]. A refusal is counted in the audit trail per minute and source address.
pub(super) async fn require_token(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    match app.tokens.caller(request.headers(), request.method()) {
        Ok(entry) => {
            request.extensions_mut().insert(asker_of(&entry));
            next.run(request).await
        }
        Err(e) => {
            app.service
                .refused_anonymously("http", &peer.ip().to_string(), &e);
            error_response(&e, None)
        }
    }
}

/// Who asks with the token of `entry`: its name, over HTTP, under its scope.
pub(super) fn asker_of(entry: &TokenEntry) -> Asker {
    Asker {
        caller: Caller {
            who: Some(entry.name.clone()),
            surface: "http".into(),
        },
        scope: ScopeRef::Named(entry.scope.clone()),
    }
}

/// The sign-in cookie's value in `headers`.
fn cookie_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Refuses a cookie-carrying request another site made: one the browser marks
/// `Sec-Fetch-Site: cross-site`, or one that may change state (not GET or HEAD) whose `Origin`
/// is missing or is not this server (the `Host` it was sent to).
fn check_same_site(headers: &HeaderMap, method: &Method) -> Result<(), Error> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if text("sec-fetch-site") == Some("cross-site") {
        return Err(Error::CrossSite(
            "a request from another site cannot use this server's sign-in".into(),
        ));
    }
    if method == Method::GET || method == Method::HEAD {
        return Ok(());
    }
    let host = text("host").unwrap_or_default();
    let same = text("origin")
        .and_then(|o| o.split_once("://"))
        .is_some_and(|(_, rest)| rest == host);
    if same {
        Ok(())
    } else {
        Err(Error::CrossSite(
            "a signed-in request that is not a GET must come from this server's own page (Origin)"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; quarry_session=abc ; b=2")]);
        assert_eq!(cookie_of(&h).as_deref(), Some("abc"));
        assert_eq!(
            cookie_of(&headers(&[("cookie", "quarry_sessionx=1")])),
            None
        );
        assert_eq!(cookie_of(&headers(&[("cookie", "quarry_session=")])), None);
    }

    #[test]
    fn cross_site_requests_are_refused() {
        let get = Method::GET;
        let post = Method::POST;
        let site = |v| ("sec-fetch-site", v);
        assert!(check_same_site(&headers(&[site("same-origin")]), &get).is_ok());
        assert!(check_same_site(&headers(&[site("cross-site")]), &get).is_err());
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(check_same_site(&own, &post).is_ok());
        let other = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ]);
        assert!(check_same_site(&other, &post).is_err());
        assert!(check_same_site(&headers(&[("host", "127.0.0.1:8080")]), &post).is_err());
    }
}
