//! quarry's DataFusion `TableProvider`s over the archive, one per table.
//!
//! [`sqlite`] streams the SQLite archive (Arrow schemas from the declaration, projection, filter
//! and limit pushdown from one classifier, rowid-range partitions); [`snapshot`] writes and reads
//! the columnar snapshot (Parquet files through object_store, a manifest published last);
//! [`scoped`] wraps any of them in a reader scope's filters and masking; [`store`] turns a path
//! or URL into an object store. The archive file itself (DDL, migrations, generations) is
//! `quarry_archive`'s; this crate knows nothing about the query language.

pub mod pass_through;
pub mod scoped;
pub mod snapshot;
pub mod sqlite;
pub mod store;
