//! Bearer tokens: the tokens file as last read (read again whenever it changes, so a revoked
//! token stops working at the next request, without a restart), and the middleware that lets a
//! request on only with a valid token, whose caller and scope it hands to the handler.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{App, error_response};
use crate::tokens::{FileStamp, TokenEntry, TokenError, Tokens};
use crate::{Asker, ScopeRef};
use quarry::{Caller, Error};

/// The tokens file as last read.
pub(super) struct TokenStore {
    path: PathBuf,
    cached: Mutex<Option<(FileStamp, Arc<Tokens>)>>,
}

impl TokenStore {
    pub(super) fn new(path: PathBuf) -> TokenStore {
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

    /// The entry of the request's bearer token.
    fn authorize(&self, headers: &HeaderMap) -> Result<TokenEntry, Error> {
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

/// Lets a request on only with a valid bearer token: the handler gets its [`Asker`]. A refusal
/// is counted in the audit trail per minute and source address.
pub(super) async fn require_token(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    match app.tokens.authorize(request.headers()) {
        Ok(entry) => {
            request.extensions_mut().insert(Asker {
                caller: Caller {
                    who: Some(entry.name.clone()),
                    surface: "http".into(),
                },
                scope: ScopeRef::Named(entry.scope.clone()),
            });
            next.run(request).await
        }
        Err(e) => {
            app.service
                .refused_anonymously("http", &peer.ip().to_string(), &e);
            error_response(&e, None)
        }
    }
}
