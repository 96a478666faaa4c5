-- Runner session ownership (fenced by epoch) and the call journal.

-- One row per environment that ever had a runner. `epoch` only grows: a
-- relay accepting a runner's socket increments it in one statement and
-- becomes `holder`; a holder whose lease refresh finds a higher epoch (or
-- another holder) closes its socket. `holder` is NULL once the socket
-- closed cleanly; a holder that died leaves a lease that goes stale after
-- `refreshed_at` stops moving.
CREATE TABLE runner_sessions (
    environment_id  TEXT PRIMARY KEY REFERENCES environments(id) ON DELETE CASCADE,
    epoch           INTEGER NOT NULL,
    holder          TEXT,
    session_id      TEXT NOT NULL,
    presence        TEXT NOT NULL,    -- JSON: host facts and tools, as announced
    heartbeat       TEXT NOT NULL DEFAULT '{}',  -- JSON: the latest heartbeat's report
    refreshed_at    INTEGER NOT NULL
);

-- pending → dispatched(epoch) → done. Keyed by call_id, which a client may
-- choose (idempotency key). Rows are pruned a while after they are done.
CREATE TABLE invocations (
    call_id         TEXT PRIMARY KEY,
    environment_id  TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    state           TEXT NOT NULL,    -- 'pending', 'dispatched', 'done'
    epoch           INTEGER,
    created_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    result          TEXT,             -- JSON
    exit_code       INTEGER,
    error           TEXT
);

CREATE INDEX invocations_finished ON invocations(finished_at) WHERE finished_at IS NOT NULL;
