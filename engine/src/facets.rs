//! Facets: how the sessions a search or a filter finds spread over origins, repos, models,
//! tools, days, machines and tags, beside the same counts over the caller's whole scope.
//!
//! A facet counts sessions. The scope's sessions (and, for `tool`, their tool calls) are read
//! once per scope and archive generation through the engine, so the scope applies before
//! anything is counted (`day` is the start's date in `--tz`); each family becomes a map from
//! session to its values, kept in the engine's memo until the generation moves; the
//! scoped counts are then the counts over the sessions the search or filter found, and the
//! global ones (kept with the map) over every session of the scope. `origin`, `repo`, `model`,
//! `machine` and `day` give a session one value (NULL included, as `group by` counts it);
//! `tag` and `tool` give it every tag it carries and every tool it called (none: not counted).
//!
//! `idf` of a value is `ln(N / df)`: N the sessions of the scope, df the sessions holding the
//! value (the global count): 0 for a value every session holds, higher for rarer ones.
//!
//! A budget (`budget_ms`) bounds the time spent on families: a family not done when it runs
//! out is deferred (its query cancelled), named in `deferred_families` with the reason.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::audit::{Language, Outcome};
use crate::engine::Session;
use crate::error::Error;
use crate::lower::clock::Clock;
use crate::search::{SearchRequest, matching_sessions};

/// A facet family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// The source format (`claude-code-session`, ...).
    Origin,
    /// Tags of the session.
    Tag,
    /// The session's main model.
    Model,
    /// The machine it was first read from.
    Machine,
    /// The day it started, in `--tz`.
    Day,
    /// The repository.
    Repo,
    /// Tools it called.
    Tool,
}

impl Family {
    /// Every family, in the order they are computed (cheapest first).
    pub const ALL: [Family; 7] = [
        Family::Origin,
        Family::Tag,
        Family::Model,
        Family::Machine,
        Family::Day,
        Family::Repo,
        Family::Tool,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Origin => "origin",
            Family::Tag => "tag",
            Family::Model => "model",
            Family::Machine => "machine",
            Family::Day => "day",
            Family::Repo => "repo",
            Family::Tool => "tool",
        }
    }

    /// The family named `name`.
    pub fn named(name: &str) -> Result<Family, Error> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == name.trim())
            .ok_or_else(|| {
                Error::BadRequest(format!(
                    "unknown facet family `{name}`: use {}",
                    Family::ALL.map(Family::name).join(", ")
                ))
            })
    }

    /// Where its values come from: a column of [`SESSIONS`], or (`None`) [`TOOLS`].
    fn column(self) -> Option<usize> {
        match self {
            Family::Origin => Some(1),
            Family::Tag => Some(2),
            Family::Model => Some(3),
            Family::Machine => Some(4),
            Family::Day => Some(5),
            Family::Repo => Some(6),
            Family::Tool => None,
        }
    }

    /// A session's values from one row's value column.
    fn values(self, value: Option<String>, clock: &Clock) -> Vec<Option<String>> {
        match self {
            // A JSON array of tags; none (or not an array) is no tag.
            Family::Tag => value
                .and_then(|v| serde_json::from_str::<Vec<String>>(&v).ok())
                .unwrap_or_default()
                .into_iter()
                .map(Some)
                .collect(),
            // The start time in epoch milliseconds: its date in the clock's zone.
            Family::Day => vec![
                value
                    .and_then(|v| v.parse::<i64>().ok())
                    .and_then(|ms| clock.local_date(ms)),
            ],
            Family::Tool => value.into_iter().map(Some).collect(),
            _ => vec![value],
        }
    }
}

/// The sessions of the scope with the columns of every family but `tool`.
const SESSIONS: &str =
    "sessions | select session_id, origin, tags, model, machine, created_at, repo";
/// The tools each session called.
const TOOLS: &str = "actions | group by session_id, tool_name | agg count";

/// One facets request.
#[derive(Debug, Clone, Default)]
pub struct FacetsRequest {
    /// Count the sessions this search text matches (in `lane`).
    pub text: Option<String>,
    /// The search's lane (`auto`, `dialogue`, `actions`).
    pub lane: Option<String>,
    /// Count the sessions holding a row of this query (the language's compact form or a unit
    /// query: `repo:quarry since:2026-01`, `messages where role:assistant`).
    pub filter: Option<String>,
    /// The families to count (default: every one).
    pub families: Option<Vec<String>>,
    /// The time families may take, in milliseconds (default: no limit).
    pub budget_ms: Option<u64>,
    /// Leave out `idf`.
    pub no_idf: bool,
}

impl FacetsRequest {
    /// The text an error of this request is about, to draw its diagnostics under: the filter
    /// for a query error, else the search text.
    pub fn text_of(&self, error: &Error) -> &str {
        crate::search::about(
            error,
            self.filter.as_deref(),
            self.text.as_deref().unwrap_or_default(),
        )
    }
}

/// One facet value and its sessions.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bucket {
    /// The value (null: sessions without one).
    pub value: Option<String>,
    /// Sessions holding it.
    pub count: u64,
    /// `ln(N / df)` against the scope's whole universe (absent with `no_idf`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idf: Option<f64>,
}

/// Sessions counted.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Totals {
    /// Sessions the search or filter found (every session of the scope without one).
    pub scoped: u64,
    /// Sessions of the scope.
    pub global: u64,
}

/// How one family fared.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyStatus {
    /// `complete` or `deferred`.
    pub state: &'static str,
    /// Why it was deferred.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether its global view was kept from an earlier request at this generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
}

/// A facets response: both views, per family.
#[derive(Debug, Clone, Serialize)]
pub struct Facets {
    /// Whether a search or a filter narrowed the scoped view.
    pub scoped_to_query: bool,
    /// The search text as applied (normalized), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The search's lane, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval_lane: Option<&'static str>,
    /// The filter, when there was one.
    #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Sessions in each view.
    pub total_sessions: Totals,
    /// Per complete family, the counts over the sessions found (values with none left out).
    pub scoped: BTreeMap<&'static str, Vec<Bucket>>,
    /// Per complete family, the counts over the scope's every session.
    pub global: BTreeMap<&'static str, Vec<Bucket>>,
    /// Families counted.
    pub complete_families: Vec<&'static str>,
    /// Families asked for and not counted.
    pub deferred_families: Vec<&'static str>,
    /// Every family asked for, and how it fared.
    pub family_status: BTreeMap<&'static str, FamilyStatus>,
    /// The budget applied.
    pub budget_ms: Option<u64>,
    /// Whether the budget ran out before every family was counted.
    pub budget_exceeded: bool,
    /// The archive generation the counts are as of.
    pub generation: i64,
}

/// Counts `request` in `session` (its scope applies before anything is counted), audited.
pub async fn facets(session: &Session, request: &FacetsRequest) -> Result<Facets, Error> {
    let mut ticket = session.intend(Language::Facets, &audit_text(request))?;
    let result = run(session, request).await;
    let message = result.as_ref().err().map(ToString::to_string);
    let outcome = match (&result, &message) {
        (Ok(facets), _) => Outcome::Ok {
            rows: facets.complete_families.len(),
            truncated: facets.budget_exceeded,
        },
        (Err(_), message) => Outcome::Error(message.as_deref().unwrap_or_default()),
    };
    ticket.finish(outcome).map_err(Error::Audit)?;
    result
}

/// What the audit trail records of a request.
fn audit_text(request: &FacetsRequest) -> String {
    let mut text = "facets".to_string();
    for (name, value) in [
        ("query", &request.text),
        ("lane", &request.lane),
        ("where", &request.filter),
    ] {
        if let Some(value) = value {
            text.push_str(&format!(" --{name} {value}"));
        }
    }
    if let Some(families) = &request.families {
        text.push_str(&format!(" --families {}", families.join(",")));
    }
    text
}

/// One family over the scope's sessions: each session's values, and the global counts.
struct FamilyIndex {
    values: HashMap<String, Vec<Option<String>>>,
    global: HashMap<Option<String>, u64>,
}

async fn run(session: &Session, request: &FacetsRequest) -> Result<Facets, Error> {
    let started = Instant::now();
    let families = match &request.families {
        Some(names) => {
            let mut families = names
                .iter()
                .filter(|n| !n.trim().is_empty())
                .map(|n| Family::named(n))
                .collect::<Result<Vec<_>, _>>()?;
            families.sort();
            families.dedup();
            families
        }
        None => Family::ALL.to_vec(),
    };
    let filter = request
        .filter
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty());
    let text = request
        .text
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    // The sessions found, decided before anything is counted.
    let (query, lane, found) = match text {
        Some(text) => {
            let search = SearchRequest {
                text: text.to_string(),
                lane: request.lane.clone(),
                filter: filter.map(str::to_string),
                ..SearchRequest::default()
            };
            let (normalized, lane, sessions) = matching_sessions(session, &search).await?;
            (Some(normalized), Some(lane.name()), Some(sessions))
        }
        None => match filter {
            Some(filter) => (
                None,
                None,
                Some(crate::search::filtered_sessions(session, filter).await?),
            ),
            None => (None, None, None),
        },
    };
    let generation = session.generation()?;
    let scope = session.scope().identity();
    let memo = session.engine().memo();
    let (sessions, _) = memo
        .get_async(&format!("facets:{scope}:sessions"), generation, || {
            session.string_rows(SESSIONS)
        })
        .await?;
    let n = sessions.len() as u64;
    let budget = request.budget_ms.map(Duration::from_millis);
    let mut out = Facets {
        scoped_to_query: found.is_some(),
        query,
        retrieval_lane: lane,
        filter: filter.map(str::to_string),
        total_sessions: Totals {
            scoped: found.as_ref().map_or(n, |f| f.len() as u64),
            global: n,
        },
        scoped: BTreeMap::new(),
        global: BTreeMap::new(),
        complete_families: Vec::new(),
        deferred_families: Vec::new(),
        family_status: BTreeMap::new(),
        budget_ms: request.budget_ms,
        budget_exceeded: false,
        generation,
    };
    for family in families {
        let key = format!("facets:{scope}:{}", family.name());
        let compute = memo.get_async(&key, generation, || index(session, family, &sessions));
        let indexed = match budget {
            None => Some(compute.await?),
            Some(budget) => match budget.checked_sub(started.elapsed()) {
                Some(left) if !left.is_zero() => {
                    tokio::time::timeout(left, compute).await.ok().transpose()?
                }
                _ => None,
            },
        };
        let Some((index, cached)) = indexed else {
            out.budget_exceeded = true;
            out.deferred_families.push(family.name());
            out.family_status.insert(
                family.name(),
                FamilyStatus {
                    state: "deferred",
                    reason: Some(format!(
                        "the budget of {} ms ran out before it was counted: ask again with a larger budget_ms, or for this family alone",
                        request.budget_ms.unwrap_or_default()
                    )),
                    cached: None,
                },
            );
            continue;
        };
        let idf = |df: u64| (!request.no_idf && df > 0).then(|| (n as f64 / df as f64).ln());
        let buckets = |counts: Vec<(Option<String>, u64)>| -> Vec<Bucket> {
            let mut buckets: Vec<Bucket> = counts
                .into_iter()
                .map(|(value, count)| {
                    let df = index.global_count(&value);
                    Bucket {
                        value,
                        count,
                        idf: idf(df),
                    }
                })
                .collect();
            sort(&mut buckets);
            buckets
        };
        let global = buckets(index.global.clone().into_iter().collect());
        let scoped = match &found {
            Some(found) => buckets(index.counts(found)),
            None => global.clone(),
        };
        out.scoped.insert(family.name(), scoped);
        out.global.insert(family.name(), global);
        out.complete_families.push(family.name());
        out.family_status.insert(
            family.name(),
            FamilyStatus {
                state: "complete",
                reason: None,
                cached: Some(cached),
            },
        );
    }
    Ok(out)
}

/// Reads `family` over the session's scope: from the scope's `sessions` rows ([`SESSIONS`]),
/// or for `tool` with its own query.
async fn index(
    session: &Session,
    family: Family,
    sessions: &[Vec<Option<String>>],
) -> Result<FamilyIndex, Error> {
    let pairs: Vec<(Option<String>, Option<String>)> = match family.column() {
        Some(column) => sessions
            .iter()
            .map(|row| (row[0].clone(), row[column].clone()))
            .collect(),
        None => session
            .string_rows(TOOLS)
            .await?
            .into_iter()
            .map(|mut row| (row.remove(0), row.remove(0)))
            .collect(),
    };
    let mut values: HashMap<String, Vec<Option<String>>> = HashMap::new();
    for (id, value) in pairs {
        let Some(id) = id else { continue };
        values
            .entry(id)
            .or_default()
            .extend(family.values(value, session.clock()));
    }
    let mut global: HashMap<Option<String>, u64> = HashMap::new();
    for held in values.values_mut() {
        held.sort();
        held.dedup();
        for value in held.iter() {
            *global.entry(value.clone()).or_default() += 1;
        }
    }
    Ok(FamilyIndex { values, global })
}

impl FamilyIndex {
    /// How many of the scope's sessions hold `value`.
    fn global_count(&self, value: &Option<String>) -> u64 {
        self.global.get(value).copied().unwrap_or(0)
    }

    /// The counts over `sessions`.
    fn counts(&self, sessions: &HashSet<String>) -> Vec<(Option<String>, u64)> {
        let mut counts: HashMap<&Option<String>, u64> = HashMap::new();
        for session in sessions {
            for value in self.values.get(session).into_iter().flatten() {
                *counts.entry(value).or_default() += 1;
            }
        }
        counts.into_iter().map(|(v, c)| (v.clone(), c)).collect()
    }
}

/// Most sessions first, then by value (null last).
fn sort(buckets: &mut [Bucket]) {
    buckets.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| match (&a.value, &b.value) {
                (Some(x), Some(y)) => x.cmp(y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            })
    });
}

/// The facets as lines for a terminal: per family, its values with scoped and global counts.
pub fn render_text(facets: &Facets) -> String {
    let mut out = String::new();
    let totals = facets.total_sessions;
    if facets.scoped_to_query {
        let _ = writeln!(
            out,
            "{} of {} sessions found (generation {})",
            totals.scoped, totals.global, facets.generation
        );
    } else {
        let _ = writeln!(
            out,
            "{} sessions (generation {})",
            totals.global, facets.generation
        );
    }
    for family in &facets.complete_families {
        let _ = writeln!(out, "\n{family}");
        let global = facets.global.get(family).map(Vec::as_slice).unwrap_or(&[]);
        for bucket in facets.scoped.get(family).into_iter().flatten() {
            let value = bucket.value.as_deref().unwrap_or("(none)");
            let of = global
                .iter()
                .find(|g| g.value == bucket.value)
                .map_or(0, |g| g.count);
            let idf = bucket
                .idf
                .map(|i| format!("  idf {i:.3}"))
                .unwrap_or_default();
            if facets.scoped_to_query {
                let _ = writeln!(out, "  {value}  {} of {of}{idf}", bucket.count);
            } else {
                let _ = writeln!(out, "  {value}  {}{idf}", bucket.count);
            }
        }
    }
    for family in &facets.deferred_families {
        let reason = facets
            .family_status
            .get(family)
            .and_then(|s| s.reason.as_deref())
            .unwrap_or("deferred");
        let _ = writeln!(out, "\n{family}: deferred ({reason})");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_family_is_named_and_an_unknown_one_is_refused() {
        assert_eq!(Family::named(" tool").unwrap(), Family::Tool);
        let e = Family::named("tools").unwrap_err().to_string();
        assert!(e.contains("unknown facet family `tools`"), "{e}");
        assert!(e.contains("origin, tag, model"), "{e}");
    }

    #[test]
    fn tags_come_from_the_json_array_and_days_from_the_zone() {
        let utc = Clock::from_env(Some("UTC")).unwrap();
        let warsaw = Clock::from_env(Some("Europe/Warsaw")).unwrap();
        assert_eq!(
            Family::Tag.values(Some(r#"["a","b"]"#.into()), &utc),
            vec![Some("a".to_string()), Some("b".to_string())]
        );
        assert!(Family::Tag.values(None, &utc).is_empty());
        assert!(Family::Tool.values(None, &utc).is_empty());
        // 2026-02-28T23:30:00Z is already 1 March in Warsaw.
        let ms = Some("1772321400000".to_string());
        assert_eq!(
            Family::Day.values(ms.clone(), &utc),
            vec![Some("2026-02-28".to_string())]
        );
        assert_eq!(
            Family::Day.values(ms, &warsaw),
            vec![Some("2026-03-01".to_string())]
        );
        assert_eq!(Family::Repo.values(None, &utc), vec![None]);
    }

    #[test]
    fn buckets_go_most_sessions_first_then_by_value_with_null_last() {
        let b = |v: Option<&str>, c| Bucket {
            value: v.map(str::to_string),
            count: c,
            idf: None,
        };
        let mut buckets = vec![
            b(None, 2),
            b(Some("b"), 2),
            b(Some("a"), 2),
            b(Some("z"), 5),
        ];
        sort(&mut buckets);
        let order: Vec<_> = buckets.iter().map(|b| b.value.clone()).collect();
        assert_eq!(
            order,
            vec![
                Some("z".to_string()),
                Some("a".to_string()),
                Some("b".to_string()),
                None
            ]
        );
    }
}
