//! snapshots
