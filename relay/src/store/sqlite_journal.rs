//! The SQLite journal's batch statements: the rows of a batch as one
//! multi-row `VALUES` with bound parameters.
//!
//! Before, the rows travelled as one JSON array read with `json_each`.
//! SQLite turned each row back into JSON text and parsed it again for each
//! of its ten columns: ≈ 35,000 instructions a row, a sixth of all the
//! relay spent on a `ping` (callgrind; bench/ROUNDS.md, eighth round).
//!
//! Every distinct statement text is prepared and cached on its own (sqlx
//! keeps a per-connection cache), so a batch of `n` rows goes out through
//! the statement for the next power of two, its other rows all NULL,
//! which the statement skips. That makes eleven shapes per kind at most
//! (1 to [`MAX_ROWS`] rows), each built once per process.

use std::sync::OnceLock;

use sqlx::query::Query;
use sqlx::sqlite::{Sqlite, SqliteArguments};
use time::OffsetDateTime;

use super::{
    corrupt, epoch_to_db, journal_upsert, sql_state_rank, state_text, InvocationRecord, StoreError,
};

/// Most rows in one statement: 10 parameters a row stays far below
/// SQLite's 32,766, and a larger batch is written as several statements.
pub const MAX_ROWS: usize = 1024;
/// Parameters per row, in [`INVOCATION_COLUMNS`] order.
const COLUMNS: usize = 10;
/// Statement shapes per kind: 1, 2, 4, … [`MAX_ROWS`] rows.
const SHAPES: usize = MAX_ROWS.trailing_zeros() as usize + 1;

pub const INVOCATION_COLUMNS: &str = "call_id, environment_id, tool_name, state, epoch, \
     created_at, finished_at, result, exit_code, error";
/// The `VALUES` columns (SQLite names them `column1` …) under the names of
/// [`INVOCATION_COLUMNS`]; the padding rows have a NULL call id.
const INPUT_COLUMNS: &str = "column1 AS call_id, column2 AS environment_id, \
     column3 AS tool_name, column4 AS state, column5 AS epoch, column6 AS created_at, \
     column7 AS finished_at, column8 AS result, column9 AS exit_code, column10 AS error";

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
        let result = match entry.state {
            runner_proto::api::InvocationState::Done => {
                Some(serde_json::to_string(&entry.result).map_err(|e| corrupt("invocations", e))?)
            }
            _ => None,
        };
        Ok(Self { entry, result })
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
            .bind(entry.error.as_deref());
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
    let input = format!("SELECT {INPUT_COLUMNS} FROM ({values}) WHERE column1 IS NOT NULL");
    match kind {
        // The WHERE before ON CONFLICT is what SQLite's grammar needs
        // there anyway; a row of another environment is left alone.
        Kind::Create => format!(
            "INSERT INTO invocations ({INVOCATION_COLUMNS}) {input} {}",
            journal_upsert()
        ),
        Kind::Update => format!(
            "UPDATE invocations SET state = input.state, \
             tool_name = CASE WHEN invocations.tool_name = '' THEN input.tool_name ELSE invocations.tool_name END, \
             epoch = COALESCE(invocations.epoch, input.epoch), finished_at = input.finished_at, \
             result = input.result, exit_code = input.exit_code, error = input.error \
             FROM ({input}) AS input \
             WHERE invocations.call_id = input.call_id \
             AND invocations.environment_id = input.environment_id AND {} < {}",
            sql_state_rank("invocations.state"),
            sql_state_rank("input.state")
        ),
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
    fn each_shape_binds_ten_parameters_a_row() {
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
