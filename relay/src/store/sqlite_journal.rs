//! The SQLite journal's batch statements: the rows of a batch as one
//! multi-row `VALUES` with bound parameters. Not one JSON array read with
//! `json_each`: SQLite would turn each row back into JSON text and parse
//! it again for each of its columns.
//!
//! Every distinct statement text is prepared and cached on its own (sqlx
//! keeps a per-connection cache), so a batch of `n` rows goes out through
//! the statement for the next power of two, its other rows all NULL,
//! which the statement skips. That makes eleven shapes per kind at most
//! (1 to [`MAX_ROWS`] rows), each built once per process. The parameters
//! are anonymous (`?`): SQLite binds them by position, with no name to
//! look up for each of thousands of parameters.

use std::sync::OnceLock;

use sqlx::query::Query;
use sqlx::sqlite::{Sqlite, SqliteArguments};
use time::OffsetDateTime;

use super::journal_sql;
use super::rows::{epoch_to_db, result_text, state_text};
use super::{InvocationRecord, StoreError};

/// Most rows in one statement: 11 parameters a row stays far below
/// SQLite's 32,766, and a larger batch is written as several statements.
pub const MAX_ROWS: usize = 1024;
/// Parameters per row, in the order of
/// [`InvocationRow::COLUMNS`](super::rows::InvocationRow::COLUMNS).
const COLUMNS: usize = 11;
/// Statement shapes per kind: 1, 2, 4, … [`MAX_ROWS`] rows.
const SHAPES: usize = MAX_ROWS.trailing_zeros() as usize + 1;

/// The `VALUES` columns (SQLite names them `column1` …) under the names of
/// [`InvocationRow::COLUMNS`](super::rows::InvocationRow::COLUMNS); the
/// padding rows have a NULL call id.
const INPUT_COLUMNS: &str = "column1 AS call_id, column2 AS environment_id, \
     column3 AS tool_name, column4 AS state, column5 AS epoch, column6 AS created_at, \
     column7 AS finished_at, column8 AS result, column9 AS exit_code, column10 AS error, \
     column11 AS error_code";

/// What a journal statement does with its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Creates rows, or advances existing ones of the same environment.
    Create,
    /// Advances existing rows only (a result no waiting call knew).
    Update,
}

/// One journal entry, ready to bind: the result as the JSON text the
/// column stores (only once the call is done).
pub struct Row<'a> {
    entry: &'a InvocationRecord,
    result: Option<String>,
}

impl<'a> Row<'a> {
    pub fn new(entry: &'a InvocationRecord) -> Result<Self, StoreError> {
        Ok(Self {
            entry,
            result: result_text(entry)?,
        })
    }
}

/// Rows the statement for `rows` rows holds: the next power of two.
fn shape(rows: usize) -> usize {
    rows.clamp(1, MAX_ROWS).next_power_of_two()
}

/// The statements of `kind` that write `rows`: one per [`MAX_ROWS`].
pub fn queries<'q>(
    kind: Kind,
    rows: &'q [Row<'q>],
) -> impl Iterator<Item = Query<'q, Sqlite, SqliteArguments<'q>>> {
    rows.chunks(MAX_ROWS).map(move |chunk| query(kind, chunk))
}

/// The statement of `kind` for 1 to [`MAX_ROWS`] rows, with the NULL rows
/// that pad it to its shape.
fn query<'q>(kind: Kind, rows: &'q [Row<'q>]) -> Query<'q, Sqlite, SqliteArguments<'q>> {
    let shape = shape(rows.len());
    let mut query = sqlx::query(statement(kind, shape));
    for row in rows {
        let entry = row.entry;
        query = query
            .bind(entry.call_id.as_str())
            .bind(entry.environment_id.as_str())
            .bind(entry.tool_name.as_str())
            .bind(state_text(entry.state))
            .bind(entry.epoch.map(epoch_to_db))
            .bind(entry.created_at.unix_timestamp())
            .bind(entry.finished_at.map(OffsetDateTime::unix_timestamp))
            .bind(row.result.as_deref())
            .bind(entry.exit_code)
            .bind(entry.error.as_deref())
            .bind(entry.error_code.as_deref());
    }
    for _ in 0..shape.saturating_sub(rows.len()) * COLUMNS {
        query = query.bind(None::<i64>);
    }
    query
}

/// The text of the statement of `kind` for exactly `shape` rows (a power
/// of two up to [`MAX_ROWS`]), built once.
fn statement(kind: Kind, shape: usize) -> &'static str {
    static CREATE: [OnceLock<String>; SHAPES] = [const { OnceLock::new() }; SHAPES];
    static UPDATE: [OnceLock<String>; SHAPES] = [const { OnceLock::new() }; SHAPES];
    let slot = (shape.trailing_zeros() as usize).min(SHAPES - 1);
    let cache = match kind {
        Kind::Create => &CREATE,
        Kind::Update => &UPDATE,
    };
    cache[slot].get_or_init(|| build(kind, 1 << slot))
}

fn build(kind: Kind, shape: usize) -> String {
    let row = format!("({})", ["?"; COLUMNS].join(", "));
    let values = format!("VALUES {}", vec![row; shape].join(", "));
    // The WHERE before ON CONFLICT is what SQLite's grammar needs there
    // anyway (an `INSERT … SELECT` with an upsert must have one).
    let input = format!("SELECT {INPUT_COLUMNS} FROM ({values}) WHERE column1 IS NOT NULL");
    match kind {
        Kind::Create => journal_sql::insert(&input),
        Kind::Update => journal_sql::update(&format!("({input}) AS input")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_takes_the_next_power_of_two_and_there_are_few_shapes() {
        assert_eq!(shape(0), 1);
        assert_eq!(shape(1), 1);
        assert_eq!(shape(2), 2);
        assert_eq!(shape(3), 4);
        assert_eq!(shape(1000), 1024);
        assert_eq!(shape(MAX_ROWS), MAX_ROWS);
        let shapes: std::collections::BTreeSet<_> = (1..=MAX_ROWS).map(shape).collect();
        assert_eq!(shapes.len(), SHAPES);
    }

    #[test]
    fn each_shape_binds_eleven_parameters_a_row() {
        for kind in [Kind::Create, Kind::Update] {
            for slot in 0..SHAPES {
                let rows = 1 << slot;
                let text = statement(kind, rows);
                assert_eq!(text.matches('?').count(), rows * COLUMNS, "{kind:?} {rows}");
                assert!(std::ptr::eq(text, statement(kind, rows)), "built once");
            }
        }
    }
}
