//! Refs: the public names of archive objects that answers carry (`session:ID`, `message:ID`,
//! ...), as `../shared/spec/query-language.txt` lists them, so a client can open what a row or
//! a hit cites.

/// What a ref names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// A session (`session:<session_id>`).
    Session,
    /// A message (`message:<message_id>`).
    Message,
    /// A block (`block:<block_id>`).
    Block,
    /// A tool call and its result (`action:<action_id>`).
    Action,
    /// An assertion (`assertion:<assertion_id>`).
    Assertion,
    /// A hand-off to a subagent (`delegation:<delegation_id>`).
    Delegation,
    /// An agent run (`run:<run_id>`).
    Run,
    /// A lifecycle event (`observed-event:<event_id>`).
    ObservedEvent,
    /// A context boundary (`context-snapshot:<snapshot_id>`).
    ContextSnapshot,
}

/// Every kind, in the spec's order.
pub const KINDS: [RefKind; 9] = [
    RefKind::Session,
    RefKind::Message,
    RefKind::Block,
    RefKind::Action,
    RefKind::Assertion,
    RefKind::Delegation,
    RefKind::Run,
    RefKind::ObservedEvent,
    RefKind::ContextSnapshot,
];

impl RefKind {
    /// The ref's prefix, without its colon.
    pub fn name(self) -> &'static str {
        match self {
            RefKind::Session => "session",
            RefKind::Message => "message",
            RefKind::Block => "block",
            RefKind::Action => "action",
            RefKind::Assertion => "assertion",
            RefKind::Delegation => "delegation",
            RefKind::Run => "run",
            RefKind::ObservedEvent => "observed-event",
            RefKind::ContextSnapshot => "context-snapshot",
        }
    }
}

/// Where the objects of a ref kind live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefTable {
    /// The table.
    pub table: &'static str,
    /// Its id column (what follows the ref's colon).
    pub id: &'static str,
    /// The column naming the session an object belongs to.
    pub session: &'static str,
    /// The column naming the message an object is or belongs to, when it has one.
    pub message: Option<&'static str>,
}

impl RefKind {
    /// Where the objects of this kind live; `None` for sessions themselves.
    pub fn table(self) -> Option<RefTable> {
        let t = |table, id, session, message| RefTable {
            table,
            id,
            session,
            message,
        };
        Some(match self {
            RefKind::Session => return None,
            RefKind::Message => t("messages", "message_id", "session_id", Some("message_id")),
            RefKind::Block => t("blocks", "block_id", "session_id", Some("message_id")),
            RefKind::Action => t("actions", "action_id", "session_id", Some("message_id")),
            RefKind::Assertion => t(
                "assertions",
                "assertion_id",
                "session_id",
                Some("message_id"),
            ),
            RefKind::Delegation => t(
                "delegations",
                "delegation_id",
                "parent_session_id",
                Some("parent_message_id"),
            ),
            RefKind::Run => t("runs", "run_id", "session_id", None),
            RefKind::ObservedEvent => t("observed_events", "event_id", "session_id", None),
            RefKind::ContextSnapshot => t("context_snapshots", "snapshot_id", "session_id", None),
        })
    }
}

/// A parsed ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    /// What it names.
    pub kind: RefKind,
    /// The object's id (what follows the first colon; ids hold colons themselves, as
    /// `session:claude-code-session:1f0c…` shows).
    pub id: String,
}

impl Ref {
    /// `text` as a ref when it starts with a kind's prefix and a colon; `None` for anything
    /// else (a bare id, which a session read takes as a session's).
    pub fn parse(text: &str) -> Option<Ref> {
        let (prefix, id) = text.trim().split_once(':')?;
        let kind = KINDS.into_iter().find(|k| k.name() == prefix)?;
        Some(Ref {
            kind,
            id: id.to_string(),
        })
    }

    /// `text` as a ref, a bare id read as a session's (as a session read takes it).
    pub fn parse_or_session(text: &str) -> Ref {
        Ref::parse(text).unwrap_or_else(|| Ref {
            kind: RefKind::Session,
            id: text.trim().to_string(),
        })
    }

    /// The ref's canonical text, `kind:id`.
    pub fn canonical(&self) -> String {
        format!("{}:{}", self.kind.name(), self.id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_ref_is_its_kind_and_everything_after_the_first_colon() {
        assert_eq!(
            Ref::parse("session:claude-code-session:1f0c").unwrap(),
            Ref {
                kind: RefKind::Session,
                id: "claude-code-session:1f0c".into()
            }
        );
        assert_eq!(
            Ref::parse(" observed-event:s/session_started")
                .unwrap()
                .kind,
            RefKind::ObservedEvent
        );
        for kind in KINDS {
            assert_eq!(
                Ref::parse(&format!("{}:x", kind.name())).unwrap().kind,
                kind
            );
        }
        // A session id's own origin prefix is not a ref kind.
        assert_eq!(Ref::parse("claude-code-session:1f0c"), None);
        assert_eq!(Ref::parse("1f0c"), None);
    }
}
