//! The audit log's append on SQLite through SQLite's own calls, under the
//! lock of the sqlx connection that holds the append's transaction.
//!
//! Why it exists: binding a row's eleven values through sqlx costs more
//! than SQLite storing the row. sqlx copies every borrowed text, hands
//! the copies to its connection thread, where SQLite copies them again,
//! and frees both; here each value is bound where it lies
//! (`SQLITE_STATIC`), in the same statements of up to 64 rows.
//!
//! The simple path stays beside it: the multi-row `INSERT` through sqlx
//! in `sql_store.rs`, which PostgreSQL always takes and SQLite takes in a
//! build without the `sqlite-audit-fast-path` feature; a test writes the
//! same batches both ways and compares every column of every row
//! (docs/relay-fast-paths.md).

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CStr};
use std::ptr::{self, NonNull};

use libsqlite3_sys as ffi;

use super::rows::{AuditRow, AuditRowValues};
use super::sql_store::{audit_insert_text, AUDIT_ROWS_PER_INSERT};
use super::StoreError;

/// A prepared statement, finalized when dropped (whatever failed).
struct Statement(NonNull<ffi::sqlite3_stmt>);

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement came from `sqlite3_prepare_v3` on a
        // connection still locked by the caller, and is finalized once.
        unsafe {
            ffi::sqlite3_finalize(self.0.as_ptr());
        }
    }
}

/// Inserts `rows` through `db`, a connection the caller holds locked
/// (`LockedSqliteHandle`) inside the append's open transaction. Any
/// failure leaves the transaction for the caller to roll back.
///
/// Rows go in statements of [`AUDIT_ROWS_PER_INSERT`] rows, as on the
/// simple path: one statement of many rows keeps SQLite's cursors on the
/// table and its indexes where its last row went, where a statement a row
/// would seek each one from its root again.
pub fn insert(db: NonNull<ffi::sqlite3>, rows: &[AuditRowValues<'_>]) -> Result<(), StoreError> {
    let db = db.as_ptr();
    let full = rows.chunks_exact(AUDIT_ROWS_PER_INSERT);
    let rest = full.remainder();
    if full.len() > 0 {
        let statement = prepare(db, &audit_insert_text(AUDIT_ROWS_PER_INSERT, true))?;
        for chunk in full {
            run(db, &statement, chunk)?;
        }
    }
    if !rest.is_empty() {
        let statement = prepare(db, &audit_insert_text(rest.len(), true))?;
        run(db, &statement, rest)?;
    }
    Ok(())
}

/// Binds `rows` to `statement` (made for exactly as many) and steps it.
fn run(
    db: *mut ffi::sqlite3,
    statement: &Statement,
    rows: &[AuditRowValues<'_>],
) -> Result<(), StoreError> {
    let stmt = statement.0.as_ptr();
    // SAFETY: `stmt` is a live statement of `db`, which the caller holds
    // locked, with a parameter for each of the rows' values. Each text is
    // bound as `SQLITE_STATIC` with its length: SQLite reads it in place,
    // and `rows` outlives the step and the reset, after which the
    // statement holds no pointer into it (the next use binds every
    // parameter again, and it is finalized before `rows` can go).
    let code = unsafe {
        let mut code = ffi::SQLITE_OK;
        for (row, values) in rows.iter().enumerate() {
            let first = (row * AuditRow::WRITTEN_WIDTH) as c_int;
            let texts = [
                Some(values.action),
                values.actor_id,
                values.environment_id,
                values.session_id,
                values.tool,
                Some(values.decision),
                Some(values.entry),
                Some(values.prev_hash),
                Some(values.hash),
            ];
            code = ffi::sqlite3_bind_int64(stmt, first + 1, values.seq);
            if code == ffi::SQLITE_OK {
                code = ffi::sqlite3_bind_int64(stmt, first + 2, values.at_ms);
            }
            for (index, text) in (first + 3..).zip(texts) {
                if code != ffi::SQLITE_OK {
                    break;
                }
                code = match text {
                    Some(text) => ffi::sqlite3_bind_text64(
                        stmt,
                        index,
                        text.as_ptr().cast::<c_char>(),
                        text.len() as u64,
                        ffi::SQLITE_STATIC(),
                        ffi::SQLITE_UTF8 as u8,
                    ),
                    None => ffi::sqlite3_bind_null(stmt, index),
                };
            }
            if code != ffi::SQLITE_OK {
                break;
            }
        }
        if code == ffi::SQLITE_OK {
            code = ffi::sqlite3_step(stmt);
        }
        // The reset's own code repeats the step's error, if any.
        ffi::sqlite3_reset(stmt);
        code
    };
    if code == ffi::SQLITE_DONE {
        Ok(())
    } else {
        Err(failure(db, code, "appending to the audit log"))
    }
}

fn prepare(db: *mut ffi::sqlite3, sql: &str) -> Result<Statement, StoreError> {
    let mut stmt = ptr::null_mut();
    // SAFETY: `db` is an open connection the caller holds locked; the
    // text is passed with its length (no terminating NUL is read).
    let code = unsafe {
        ffi::sqlite3_prepare_v3(
            db,
            sql.as_ptr().cast::<c_char>(),
            c_int::try_from(sql.len()).unwrap_or(c_int::MAX),
            0,
            &mut stmt,
            ptr::null_mut(),
        )
    };
    let statement = NonNull::new(stmt).map(Statement);
    match statement {
        Some(statement) if code == ffi::SQLITE_OK => Ok(statement),
        // The connection's message is read before the statement goes.
        _ => Err(failure(db, code, "preparing the audit log's insert")),
    }
}

/// The connection's error, as the store reports it.
fn failure(db: *mut ffi::sqlite3, code: c_int, doing: &str) -> StoreError {
    // SAFETY: `db` is open; `sqlite3_errmsg` returns a NUL-terminated
    // text owned by the connection, copied here before any other call.
    let message = unsafe {
        let text = ffi::sqlite3_errmsg(db);
        if text.is_null() {
            String::new()
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        }
    };
    StoreError::Sqlite(format!("{doing}: {message} (code {code})"))
}
