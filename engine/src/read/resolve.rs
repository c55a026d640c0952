//! The ref resolver (`../shared/spec/query-language.txt`: "Resolve refs through the shared
//! resolver rather than turning them into broad text search"): what a ref names, as the
//! caller's scope sees it, bounded. A ref that names nothing the scope sees, or is not a ref,
//! gives a bounded unresolved payload, never an error and never a wider search.
//!
//! Objects are read through the session's own catalog (the same scoped tables a query reads),
//! so a reader's masking, hidden messages and unseen sessions apply exactly as they do to its
//! queries; an object of an unseen session is what an absent one is.

use serde::Serialize;

use super::{Ref, RefKind};
use crate::engine::Session;
use crate::error::Error;

/// The longest text a resolved object holds per field; longer ones are cut, with a caveat.
pub const MAX_TEXT: usize = 4000;
/// The longest excerpt of a delegation's result or of its child's reply.
pub const MAX_EXCERPT: usize = 2000;
/// Messages in each of a delegation's parent windows (context before the call, follow-up after
/// its result).
pub const PARENT_WINDOW: usize = 3;
/// The longest excerpt of one message in a parent window.
pub const MAX_WINDOW_EXCERPT: usize = 1000;

/// What a ref resolves to (the spec's `PublicRefResolutionPayload`, in quarry's fields).
#[derive(Debug, Clone, Serialize)]
pub struct Resolution {
    /// The ref as given.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The kind it names (`None`: not a ref of a known kind).
    pub kind: Option<&'static str>,
    /// Whether it names an object the scope sees.
    pub resolved: bool,
    /// Why not, when it does not: `not_found` or `not_a_ref`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The session the object belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The object's columns as the scope sees them (texts cut at [`MAX_TEXT`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<serde_json::Map<String, serde_json::Value>>,
    /// A delegation's evidence card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// What a reader of the payload should know (cut texts, what was tried).
    pub caveats: Vec<String>,
}

/// A delegation's evidence: its whole recorded instruction, and bounded excerpts of what came
/// back to the parent and of the child's own last reply. It claims nothing of the child's
/// success or of the parent's use of it.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    /// The instruction handed over, whole.
    pub instruction: Option<String>,
    /// `resolved` when the child session is named, else `unresolved`.
    pub mapping_state: Option<String>,
    /// The result's status as the source reports it.
    pub result_status: Option<String>,
    /// The tool result the parent received.
    pub dispatch_result: Option<Excerpt>,
    /// The child session's last assistant message.
    pub child_excerpt: Option<Excerpt>,
    /// The parent's messages before the delegating message (at most [`PARENT_WINDOW`]).
    pub parent_context: ParentWindow,
    /// The parent's messages after the one holding the result (at most [`PARENT_WINDOW`]).
    pub parent_follow_up: ParentWindow,
}

/// A bounded window of the parent's messages.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ParentWindow {
    /// The messages, in order, each text cut at [`MAX_WINDOW_EXCERPT`] characters.
    pub messages: Vec<WindowMessage>,
    /// Whether the parent has more messages beyond the window.
    pub truncated: bool,
}

/// One message of a parent window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowMessage {
    /// Its id.
    pub message_id: String,
    /// Its role.
    pub role: String,
    /// Its text, bounded.
    pub text: Excerpt,
}

/// A bounded excerpt.
#[derive(Debug, Clone, Serialize)]
pub struct Excerpt {
    /// The text, at most [`MAX_EXCERPT`] characters.
    pub text: String,
    /// Whether it was cut.
    pub truncated: bool,
    /// The whole text's length in characters.
    pub chars: usize,
}

impl Excerpt {
    pub(super) fn of(text: &str, max: usize) -> Excerpt {
        let chars = text.chars().count();
        Excerpt {
            text: text.chars().take(max).collect(),
            truncated: chars > max,
            chars,
        }
    }
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Resolves `reference` in `session`'s scope (audited by the caller).
pub(super) async fn resolve(session: &Session, reference: &str) -> Result<Resolution, Error> {
    let unresolved = |kind: Option<RefKind>, reason, caveats: Vec<String>| Resolution {
        reference: reference.to_string(),
        kind: kind.map(RefKind::name),
        resolved: false,
        reason: Some(reason),
        session_id: None,
        object: None,
        evidence: None,
        caveats,
    };
    let parsed = Ref::parse(reference);
    let Some(quarry_schema::refs::RefTable {
        table,
        id: id_column,
        session: session_column,
        ..
    }) = parsed.as_ref().and_then(|r| r.kind.table())
    else {
        // A session ref, or a bare id read as a session's.
        let caveats = match parsed {
            Some(_) => Vec::new(),
            None => vec!["not a ref of a known kind: read as a session's id".to_string()],
        };
        return match super::Reader::new(session)
            .await?
            .header_of(reference)
            .await
        {
            Ok(header) => Ok(Resolution {
                reference: reference.to_string(),
                kind: Some(RefKind::Session.name()),
                resolved: true,
                reason: None,
                session_id: Some(header.session_id.clone()),
                object: match serde_json::to_value(&header) {
                    Ok(serde_json::Value::Object(map)) => Some(map),
                    _ => None,
                },
                evidence: None,
                caveats,
            }),
            Err(Error::SessionNotFound(_)) => Ok(unresolved(
                parsed.map(|r| r.kind).or(Some(RefKind::Session)),
                "not_found",
                caveats,
            )),
            Err(e) => Err(e),
        };
    };
    let Some(parsed) = parsed else {
        return Ok(unresolved(None, "not_a_ref", Vec::new()));
    };
    let (columns, rows) = session
        .sql_rows(&format!(
            "SELECT * FROM {table} WHERE {id_column} = {} LIMIT 1",
            literal(&parsed.id)
        ))
        .await?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(unresolved(Some(parsed.kind), "not_found", Vec::new()));
    };
    let mut caveats = Vec::new();
    let mut object = serde_json::Map::new();
    for (name, value) in columns.into_iter().zip(row) {
        let value = match value {
            serde_json::Value::String(text)
                if text.chars().count() > MAX_TEXT
                    && !(parsed.kind == RefKind::Delegation && name == "instruction") =>
            {
                caveats.push(format!(
                    "`{name}` cut at {MAX_TEXT} of its {} characters",
                    text.chars().count()
                ));
                serde_json::Value::String(text.chars().take(MAX_TEXT).collect())
            }
            other => other,
        };
        object.insert(name, value);
    }
    let session_id = object
        .get(session_column)
        .and_then(|v| v.as_str())
        .map(|s| s.strip_prefix("session:").unwrap_or(s).to_string());
    let evidence = match parsed.kind {
        RefKind::Delegation => Some(evidence(session, &object).await?),
        _ => None,
    };
    Ok(Resolution {
        reference: reference.to_string(),
        kind: Some(parsed.kind.name()),
        resolved: true,
        reason: None,
        session_id,
        object: Some(object),
        evidence,
        caveats,
    })
}

/// A delegation's evidence card, read in the same scope.
async fn evidence(
    session: &Session,
    delegation: &serde_json::Map<String, serde_json::Value>,
) -> Result<Evidence, Error> {
    let text = |name: &str| {
        delegation
            .get(name)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let (id, parent, child) = (
        text("delegation_id").unwrap_or_default(),
        text("parent_session_id").unwrap_or_default(),
        text("child_session_id"),
    );
    // The first column of a statement's first row.
    let first_value = |sql: String| async move {
        let (_, rows) = session.sql_rows(&sql).await?;
        Ok::<_, Error>(rows.into_iter().next().and_then(|r| r.into_iter().next()))
    };
    let first = |sql: String| async move {
        Ok::<_, Error>(
            first_value(sql)
                .await?
                .and_then(|v| v.as_str().map(str::to_string)),
        )
    };
    // The call's result: the tool_result block of the call's tool id in the parent.
    let tool_id = id
        .strip_prefix(&format!("{parent}/"))
        .unwrap_or_default()
        .to_string();
    let dispatch = first(format!(
        "SELECT text FROM blocks WHERE session_id = {} AND type = 'tool_result' AND tool_id = {} LIMIT 1",
        literal(&parent),
        literal(&tool_id)
    ))
    .await?;
    let reply = match &child {
        Some(child) => {
            first(format!(
                "SELECT text FROM messages WHERE session_id = {} AND role = 'assistant' \
                 AND text <> '' ORDER BY position DESC LIMIT 1",
                literal(child)
            ))
            .await?
        }
        None => None,
    };
    // The parent's windows: before the delegating message, and after the result's message.
    let position = |sql: String| async move {
        Ok::<_, Error>(first_value(sql).await?.and_then(|v| v.as_i64()))
    };
    let call_at = match text("parent_message_id") {
        Some(m) => {
            position(format!(
                "SELECT position FROM messages WHERE session_id = {} AND message_id = {}",
                literal(&parent),
                literal(&m)
            ))
            .await?
        }
        None => None,
    };
    let result_at = position(format!(
        "SELECT m.position FROM blocks b JOIN messages m ON m.message_id = b.message_id \
         WHERE b.session_id = {0} AND m.session_id = {0} AND b.type = 'tool_result' \
         AND b.tool_id = {1} ORDER BY m.position LIMIT 1",
        literal(&parent),
        literal(&tool_id)
    ))
    .await?;
    let parent_context = match call_at {
        Some(at) => window(session, &parent, &format!("position < {at}"), "DESC").await?,
        None => ParentWindow::default(),
    };
    let parent_follow_up = match result_at.or(call_at) {
        Some(at) => window(session, &parent, &format!("position > {at}"), "ASC").await?,
        None => ParentWindow::default(),
    };
    Ok(Evidence {
        instruction: text("instruction"),
        mapping_state: text("mapping_state"),
        result_status: text("result_status"),
        dispatch_result: dispatch.map(|t| Excerpt::of(&t, MAX_EXCERPT)),
        child_excerpt: reply.map(|t| Excerpt::of(&t, MAX_EXCERPT)),
        parent_context,
        parent_follow_up,
    })
}

/// Up to [`PARENT_WINDOW`] messages of `parent` where `condition` holds, nearest first in
/// `order` (`DESC`: the ones just before), given back in conversation order.
async fn window(
    session: &Session,
    parent: &str,
    condition: &str,
    order: &str,
) -> Result<ParentWindow, Error> {
    let (_, rows) = session
        .sql_rows(&format!(
            "SELECT message_id, role, text FROM messages WHERE session_id = {} AND {condition} \
             ORDER BY position {order} LIMIT {}",
            literal(parent),
            PARENT_WINDOW + 1
        ))
        .await?;
    let truncated = rows.len() > PARENT_WINDOW;
    let mut messages: Vec<WindowMessage> = rows
        .into_iter()
        .take(PARENT_WINDOW)
        .map(|r| {
            let field = |i: usize| {
                r.get(i)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            WindowMessage {
                message_id: field(0),
                role: field(1),
                text: Excerpt::of(&field(2), MAX_WINDOW_EXCERPT),
            }
        })
        .collect();
    if order == "DESC" {
        messages.reverse();
    }
    Ok(ParentWindow {
        messages,
        truncated,
    })
}

/// A resolution as lines for people.
pub fn render(resolution: &Resolution) -> String {
    let mut out = String::new();
    let kind = resolution.kind.unwrap_or("?");
    if !resolution.resolved {
        out.push_str(&format!(
            "{} ({kind}): unresolved, {}\n",
            resolution.reference,
            resolution.reason.unwrap_or("not_found")
        ));
    } else {
        out.push_str(&format!("{} ({kind})\n", resolution.reference));
        for (name, value) in resolution.object.iter().flatten() {
            let shown = match value {
                serde_json::Value::String(s) => s.lines().next().unwrap_or("").to_string(),
                other => other.to_string(),
            };
            out.push_str(&format!("  {name}: {shown}\n"));
        }
        if let Some(e) = &resolution.evidence {
            for (name, excerpt) in [
                ("dispatch result", &e.dispatch_result),
                ("child's last reply", &e.child_excerpt),
            ] {
                if let Some(x) = excerpt {
                    let cut = if x.truncated { " …" } else { "" };
                    let first = x.text.lines().next().unwrap_or("");
                    out.push_str(&format!("  {name}: {first}{cut} ({} chars)\n", x.chars));
                }
            }
            for (name, w) in [
                ("parent context", &e.parent_context),
                ("parent follow-up", &e.parent_follow_up),
            ] {
                let more = if w.truncated { ", more beyond" } else { "" };
                out.push_str(&format!(
                    "  {name} ({} messages{more}):\n",
                    w.messages.len()
                ));
                for m in &w.messages {
                    let first = m.text.text.lines().find(|l| !l.trim().is_empty());
                    let first = first.unwrap_or("(no text: tool calls or results only)");
                    let short: String = first.chars().take(100).collect();
                    out.push_str(&format!("    {}: {short}\n", m.role));
                }
            }
        }
    }
    for c in &resolution.caveats {
        out.push_str(&format!("  note: {c}\n"));
    }
    out
}
