//! The journal's batch statements as both databases spell them: only the
//! input table differs (SQLite: a multi-row `VALUES`; PostgreSQL: `UNNEST`
//! over arrays), named `input` with the columns of
//! [`InvocationRow::COLUMNS`](super::rows::InvocationRow::COLUMNS).
//!
//! An entry only moves forward (pending → dispatched → failed → done; the
//! first answer wins, and the runner's answer beats the relay's "failed"),
//! keeps the first tool name and epoch it got, and a step naming another
//! environment leaves it alone.

use super::rows::InvocationRow;

/// The ranking of [`super::state_rank`] in SQL, for a column `expr`.
fn state_rank(expr: &str) -> String {
    format!("(CASE {expr} WHEN 'pending' THEN 0 WHEN 'dispatched' THEN 1 WHEN 'failed' THEN 2 ELSE 3 END)")
}

/// Creates the entries of `input` (a `SELECT` of its rows), or moves the
/// existing ones forward.
pub fn insert(input: &str) -> String {
    // The conflict clause names `excluded` (the proposed row), which both
    // databases spell alike.
    format!(
        "INSERT INTO invocations ({columns}) {input} \
         ON CONFLICT (call_id) DO UPDATE SET state = excluded.state, \
         tool_name = CASE WHEN invocations.tool_name = '' THEN excluded.tool_name ELSE invocations.tool_name END, \
         epoch = COALESCE(invocations.epoch, excluded.epoch), finished_at = excluded.finished_at, \
         result = excluded.result, exit_code = excluded.exit_code, error = excluded.error, \
         error_code = excluded.error_code \
         WHERE invocations.environment_id = excluded.environment_id AND {old} < {new}",
        columns = InvocationRow::COLUMNS,
        old = state_rank("invocations.state"),
        new = state_rank("excluded.state"),
    )
}

/// Moves the existing entries of `input` (a table expression aliased
/// `input`) forward; creates none.
pub fn update(input: &str) -> String {
    format!(
        "UPDATE invocations SET state = input.state, \
         tool_name = CASE WHEN invocations.tool_name = '' THEN input.tool_name ELSE invocations.tool_name END, \
         epoch = COALESCE(invocations.epoch, input.epoch), finished_at = input.finished_at, \
         result = input.result, exit_code = input.exit_code, error = input.error, \
         error_code = input.error_code \
         FROM {input} \
         WHERE invocations.call_id = input.call_id \
         AND invocations.environment_id = input.environment_id AND {old} < {new}",
        old = state_rank("invocations.state"),
        new = state_rank("input.state"),
    )
}
