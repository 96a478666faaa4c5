-- Audit rows of chain format 2 (relay/src/audit/chain.rs, docs/audit.md):
-- the columns a query filters on (seq, at_ms, action, actor_id,
-- environment_id, session_id, tool) stay columns, with decision and the
-- two hashes; every other field is in `entry`, one JSON array, so that
-- appending a row binds 11 values instead of 23. Rows written before keep
-- every field in its own column and `entry` NULL (format 1); both verify.
ALTER TABLE audit_log ADD COLUMN entry TEXT;
