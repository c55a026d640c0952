//! The FTS5 auxiliary functions quarry registers: `quarry_hit(TABLE)`, which reports what
//! FTS5's own `bm25()` reads for the current row (its per-phrase frequencies, its length in
//! tokens, and the table's row and token counts) without computing a score, so the score can
//! be computed over statistics of the caller's rows (the engine's `search::bm25`); and
//! `quarry_frequencies(TABLE)`, the per-phrase frequencies alone, for a caller that knows each
//! row's length already (reading it is a lookup in the `_docsize` table per row).
//!
//! This is the only crate of quarry with unsafe code: the C ABI of the function and the
//! `fts5_api` pointer it is registered through, as SQLite documents them. Everything unsafe is
//! in this file, each block with the invariant it relies on.
//!
//! The blob it returns: the table's row count and token count (i64 each), the row's token count
//! (i64), then one frequency per phrase (f64: the row's instances of the phrase, each column
//! weighted 1.0 as `bm25()` weights them by default), all little-endian. `quarry_frequencies`
//! returns the frequencies alone, in the same encoding.

use std::ffi::{CStr, c_int, c_void};
use std::ptr;

use rusqlite::Connection;
use rusqlite::ffi;

/// The name of the function reporting what `bm25()` reads.
pub const HIT: &str = "quarry_hit";
/// The name of the function reporting the row's frequencies alone.
pub const FREQUENCIES: &str = "quarry_frequencies";

/// The phrases' frequencies from the blob [`FREQUENCIES`] returns, written into `frequencies`
/// (cleared first); `false` for a blob it did not write.
pub fn frequencies(blob: &[u8], frequencies: &mut Vec<f64>) -> bool {
    if !blob.len().is_multiple_of(8) {
        return false;
    }
    frequencies.clear();
    frequencies.extend(blob.chunks_exact(8).map(|w| {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        f64::from_le_bytes(word)
    }));
    true
}

/// What [`HIT`] reported for one row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowHit {
    /// Rows of the whole FTS table.
    pub table_rows: i64,
    /// Tokens of the whole FTS table (every column).
    pub table_tokens: i64,
    /// Tokens of this row (every column).
    pub row_tokens: i64,
    /// Instances of each phrase in this row.
    pub frequencies: Vec<f64>,
}

impl RowHit {
    /// The row's tokens from the blob [`HIT`] returns, its phrases' instances written into
    /// `frequencies` (cleared first): [`RowHit::decode`] without allocating, for a scan.
    pub fn frequencies(blob: &[u8], frequencies: &mut Vec<f64>) -> Option<i64> {
        if blob.len() < 24 || !(blob.len() - 24).is_multiple_of(8) {
            return None;
        }
        frequencies.clear();
        let mut words = blob.chunks_exact(8).map(|w| {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            word
        });
        let row_tokens = words.nth(2).map(i64::from_le_bytes)?;
        frequencies.extend(words.map(f64::from_le_bytes));
        Some(row_tokens)
    }

    /// Reads the blob [`HIT`] returns.
    pub fn decode(blob: &[u8]) -> Option<RowHit> {
        if blob.len() < 24 || !(blob.len() - 24).is_multiple_of(8) {
            return None;
        }
        let word = |i: usize| -> [u8; 8] {
            let mut w = [0u8; 8];
            w.copy_from_slice(&blob[i * 8..i * 8 + 8]);
            w
        };
        Some(RowHit {
            table_rows: i64::from_le_bytes(word(0)),
            table_tokens: i64::from_le_bytes(word(1)),
            row_tokens: i64::from_le_bytes(word(2)),
            frequencies: (3..blob.len() / 8)
                .map(|i| f64::from_le_bytes(word(i)))
                .collect(),
        })
    }
}

/// The C signature of an FTS5 auxiliary function.
type Auxiliary = unsafe extern "C" fn(
    *const ffi::Fts5ExtensionApi,
    *mut ffi::Fts5Context,
    *mut ffi::sqlite3_context,
    c_int,
    *mut *mut ffi::sqlite3_value,
);

/// Registers [`HIT`] and [`FREQUENCIES`] on `conn` (once per connection).
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    let functions: [(&CStr, Auxiliary); 2] = [
        (c"quarry_hit", quarry_hit),
        (c"quarry_frequencies", quarry_frequencies),
    ];
    for (name, function) in functions {
        // SAFETY: `api` is the connection's live fts5_api (checked non-null with a version that
        // has xCreateFunction); the name is a static C string; the function keeps no user data.
        let rc = unsafe {
            match (*api).xCreateFunction {
                Some(create) => create(api, name.as_ptr(), ptr::null_mut(), Some(function), None),
                None => ffi::SQLITE_ERROR,
            }
        };
        if rc != ffi::SQLITE_OK {
            return Err(rusqlite::Error::SqliteFailure(
                ffi::Error::new(rc),
                Some("cannot register the full-text ranking functions".into()),
            ));
        }
    }
    Ok(())
}

/// The connection's `fts5_api` pointer, as SQLite documents fetching it: `SELECT fts5(?1)`
/// with a pointer bound under the type "fts5_api_ptr".
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let failure = |rc: c_int| {
        rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some("FTS5 is not available".into()))
    };
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    // SAFETY: the statement is prepared, bound, stepped and finalized on this connection's
    // handle within this function; the bound pointer outlives the step (it is `api`, on this
    // stack frame), and SQLite writes the API's address into it.
    unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let sql = c"SELECT fts5(?1)";
        let rc = ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut());
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc));
        }
        let kind: &CStr = c"fts5_api_ptr";
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
            kind.as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        let rc = ffi::sqlite3_finalize(stmt);
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc));
        }
    }
    // SAFETY: a non-null pointer SQLite gave is its static fts5_api.
    if api.is_null() || unsafe { (*api).iVersion } < 2 {
        return Err(failure(ffi::SQLITE_ERROR));
    }
    Ok(api)
}

/// [`HIT`] (see the module docs).
unsafe extern "C" fn quarry_hit(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _n_val: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: SQLite calls this with its live extension API and context for the current row.
    unsafe { answer(ctx, hit(&*api, fts)) }
}

/// [`FREQUENCIES`] (see the module docs).
unsafe extern "C" fn quarry_frequencies(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _n_val: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: SQLite calls this with its live extension API and context for the current row.
    unsafe {
        let api = &*api;
        let mut blob = Vec::new();
        let result = instances(api, fts, &mut blob).map(|()| blob);
        answer(ctx, result)
    }
}

/// Sets the function's result: the blob, or the error code.
///
/// # Safety
/// `ctx` must be the context SQLite passed to the auxiliary function call.
unsafe fn answer(ctx: *mut ffi::sqlite3_context, result: Result<Vec<u8>, c_int>) {
    // SAFETY: `ctx` is live for this call (the caller's contract); SQLite copies the blob
    // (SQLITE_TRANSIENT) before this returns.
    unsafe {
        match result {
            Ok(blob) => ffi::sqlite3_result_blob(
                ctx,
                blob.as_ptr().cast::<c_void>(),
                blob.len() as c_int,
                ffi::SQLITE_TRANSIENT(),
            ),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// SQLite's `SQLITE_OK` as a `Result`.
fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// Appends to `blob` the current row's instances of each phrase (f64, little-endian), every
/// column weighted 1.0.
///
/// # Safety
/// `api` and `fts` must be what SQLite passed to an auxiliary function call.
unsafe fn instances(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    blob: &mut Vec<u8>,
) -> Result<(), c_int> {
    let missing = ffi::SQLITE_MISUSE;
    // SAFETY: forwarded from the caller's contract; the iterator and out-pointers are locals,
    // and the iterator is used only within this call, as FTS5 requires.
    unsafe {
        let phrases = (api.xPhraseCount.ok_or(missing)?)(fts).max(0);
        let first = api.xPhraseFirst.ok_or(missing)?;
        let next = api.xPhraseNext.ok_or(missing)?;
        blob.reserve(8 * phrases as usize);
        for phrase in 0..phrases {
            let mut iter = ffi::Fts5PhraseIter {
                a: ptr::null(),
                b: ptr::null(),
            };
            let (mut column, mut offset) = (0, 0);
            ok(first(fts, phrase, &mut iter, &mut column, &mut offset))?;
            let mut count = 0u32;
            while column >= 0 {
                count += 1;
                next(fts, &mut iter, &mut column, &mut offset);
            }
            blob.extend_from_slice(&f64::from(count).to_le_bytes());
        }
        Ok(())
    }
}

/// The [`HIT`] blob of the current row, or SQLite's error code.
///
/// # Safety
/// `api` and `fts` must be what SQLite passed to an auxiliary function call.
unsafe fn hit(api: &ffi::Fts5ExtensionApi, fts: *mut ffi::Fts5Context) -> Result<Vec<u8>, c_int> {
    let missing = ffi::SQLITE_MISUSE;
    // SAFETY: forwarded from the caller's contract; out-pointers are locals.
    unsafe {
        let mut row_tokens: c_int = 0;
        ok((api.xColumnSize.ok_or(missing)?)(fts, -1, &mut row_tokens))?;
        let mut table_rows: ffi::sqlite3_int64 = 0;
        ok((api.xRowCount.ok_or(missing)?)(fts, &mut table_rows))?;
        let mut table_tokens: ffi::sqlite3_int64 = 0;
        ok((api.xColumnTotalSize.ok_or(missing)?)(
            fts,
            -1,
            &mut table_tokens,
        ))?;
        let mut blob = Vec::with_capacity(64);
        blob.extend_from_slice(&table_rows.to_le_bytes());
        blob.extend_from_slice(&table_tokens.to_le_bytes());
        blob.extend_from_slice(&i64::from(row_tokens).to_le_bytes());
        instances(api, fts, &mut blob)?;
        Ok(blob)
    }
}

/// The token count of one `blocks_fts_docsize` row: the sum of its per-column sizes, stored as
/// SQLite varints.
pub fn docsize_tokens(blob: &[u8]) -> i64 {
    let mut total = 0i64;
    let mut value = 0i64;
    let mut bytes = 0;
    for &byte in blob {
        bytes += 1;
        if bytes == 9 {
            total += (value << 8) | i64::from(byte);
            value = 0;
            bytes = 0;
            continue;
        }
        value = (value << 7) | i64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            total += value;
            value = 0;
            bytes = 0;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn varints_sum_as_sqlite_writes_them() {
        // 3, 200 (0x81 0x48), 0, 16384 (0x81 0x80 0x00).
        assert_eq!(
            docsize_tokens(&[0x03, 0x81, 0x48, 0x00, 0x81, 0x80, 0x00]),
            3 + 200 + 16384
        );
        assert_eq!(docsize_tokens(&[]), 0);
    }

    #[test]
    fn the_function_reports_what_bm25_reads() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(a, b);
             INSERT INTO t VALUES ('x y x z', 'y');
             INSERT INTO t VALUES ('q', 'r s');",
        )
        .unwrap();
        register(&conn).unwrap();
        let blob: Vec<u8> = conn
            .query_row(
                "SELECT quarry_hit(t) FROM t WHERE t MATCH '\"x\" AND \"y\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let hit = RowHit::decode(&blob).unwrap();
        assert_eq!(
            hit,
            RowHit {
                table_rows: 2,
                table_tokens: 8,
                row_tokens: 5,
                frequencies: vec![2.0, 2.0],
            }
        );
        // The scan's reading of the same blob, into a reused buffer.
        let mut frequencies = vec![9.0; 5];
        assert_eq!(RowHit::frequencies(&blob, &mut frequencies), Some(5));
        assert_eq!(frequencies, vec![2.0, 2.0]);
        assert_eq!(RowHit::frequencies(&blob[..20], &mut frequencies), None);
        // The frequencies alone, for the same row and a NOT phrase (never in a matching row).
        let alone: Vec<u8> = conn
            .query_row(
                "SELECT quarry_frequencies(t) FROM t WHERE t MATCH '\"x\" AND \"y\" NOT \"q\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(super::frequencies(&alone, &mut frequencies));
        assert_eq!(frequencies, vec![2.0, 2.0, 0.0]);
        assert!(!super::frequencies(&alone[..7], &mut frequencies));
        let sizes: Vec<u8> = conn
            .query_row("SELECT sz FROM t_docsize WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(docsize_tokens(&sizes), 5);
    }
}
