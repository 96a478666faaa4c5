-- The kind of a journalled call's failure, beside its text: what a
-- repeated call_id answers with, as the first call did
-- ('denied_by_runner_policy': 403; 'runner_disconnected': 503, the state
-- 'failed' of a call whose runner's session ended before it answered).
ALTER TABLE invocations ADD COLUMN error_code TEXT;
