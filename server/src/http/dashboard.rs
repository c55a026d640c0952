//! The dashboards over HTTP: `GET /api/dashboard` lists the panels;
//! `GET /api/dashboard/{panel}?since=YYYY-MM-DD&until=YYYY-MM-DD&tz=ZONE` answers one (its
//! query, the query's rows, the charts as SVG, the headline figures) under the caller's scope;
//! `GET /api/dashboard/all?…` answers every panel in one streamed response, one JSON line per
//! panel as soon as it is ready. The page asks for them all at once that way, so no panel waits
//! on another (nor on the browser's six connections to a host).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use futures::StreamExt;
use serde::Deserialize;

use super::{App, error_response, json_response, params};
use crate::Asker;
use quarry::Error;
use quarry::dashboard::{PanelId, Range};

/// A panel's parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PanelParams {
    /// From this day on (`YYYY-MM-DD`, in `tz`).
    since: Option<String>,
    /// Through this day.
    until: Option<String>,
    /// The zone of days and buckets (`UTC`, an offset, an IANA name); the server's otherwise.
    tz: Option<String>,
}

fn day(name: &str, text: Option<&str>) -> Result<Option<NaiveDate>, Error> {
    text.filter(|t| !t.is_empty())
        .map(|t| {
            NaiveDate::parse_from_str(t, "%Y-%m-%d")
                .ok()
                .filter(|d| (1..=9999).contains(&chrono::Datelike::year(d)))
                .ok_or_else(|| Error::BadRequest(format!("{name} must be a day, YYYY-MM-DD: {t}")))
        })
        .transpose()
}

impl PanelParams {
    /// The range and zone asked for, or why they are not ones.
    fn checked(&self) -> Result<Range, Error> {
        if let Some(tz) = &self.tz {
            quarry::request::check_zone(tz).map_err(Error::BadRequest)?;
        }
        self.range()
    }

    fn range(&self) -> Result<Range, Error> {
        let range = Range {
            since: day("since", self.since.as_deref())?,
            until: day("until", self.until.as_deref())?,
        };
        if let (Some(since), Some(until)) = (range.since, range.until)
            && since > until
        {
            return Err(Error::BadRequest(format!(
                "since ({since}) is after until ({until})"
            )));
        }
        Ok(range)
    }
}

/// `GET /api/dashboard`: the panels, in order.
pub(super) async fn list() -> Response {
    let panels: Vec<serde_json::Value> = PanelId::ALL
        .iter()
        .map(|p| serde_json::json!({"id": p.name(), "title": p.title()}))
        .collect();
    json_response(serde_json::json!({ "panels": panels }).to_string())
}

/// `GET /api/dashboard/{panel}`.
pub(super) async fn panel(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    Path(name): Path<String>,
    query: Result<Query<PanelParams>, QueryRejection>,
) -> Response {
    let target = format!("GET /api/dashboard/{name}");
    let asked = params(query).and_then(|p| {
        let id = PanelId::from_name(&name).ok_or_else(|| {
            let names: Vec<&str> = PanelId::ALL.iter().map(|p| p.name()).collect();
            Error::NotFound(format!(
                "no dashboard panel {name}: the panels are {}",
                names.join(", ")
            ))
        })?;
        Ok((id, p.checked()?, p))
    });
    let (id, range, p) = match asked {
        Ok(asked) => asked,
        Err(e) => return app.refuse(&asker, &target, e),
    };
    match app.service.panel(&asker, id, &range, p.tz.as_deref()).await {
        Ok(panel) => match serde_json::to_string(&panel) {
            Ok(body) => json_response(body),
            Err(e) => error_response(&Error::Internal(e.to_string()), None),
        },
        Err(e) => error_response(&e, Some(&id.query(&range))),
    }
}

/// `GET /api/dashboard/all`: every panel, streamed as NDJSON, one line per panel as soon as it is
/// ready: `{"id", "panel"}`, or `{"id", "error"}` with the error body when that panel failed.
pub(super) async fn all(
    State(app): State<Arc<App>>,
    Extension(asker): Extension<Asker>,
    query: Result<Query<PanelParams>, QueryRejection>,
) -> Response {
    let asked = params(query).and_then(|p| Ok((p.checked()?, p)));
    let (range, p) = match asked {
        Ok(asked) => asked,
        Err(e) => return app.refuse(&asker, "GET /api/dashboard/all", e),
    };
    let answers = match app
        .service
        .panels(&asker, PanelId::ALL.to_vec(), range, p.tz.as_deref())
        .await
    {
        Ok(answers) => answers,
        Err(e) => return error_response(&e, None),
    };
    let lines = answers.map(move |(id, answer)| {
        let line = match answer {
            Ok(panel) => serde_json::json!({ "id": id.name(), "panel": panel }),
            Err(e) => {
                serde_json::json!({ "id": id.name(), "error": e.body(Some(&id.query(&range))) })
            }
        };
        Ok::<_, std::convert::Infallible>(Bytes::from(format!("{line}\n")))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response()
}
