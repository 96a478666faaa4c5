-- The audit log: append-only, one hash chain (docs/audit.md).

CREATE TABLE audit_log (
    seq             INTEGER PRIMARY KEY,   -- 1, 2, 3… without gaps
    at_ms           INTEGER NOT NULL,      -- Unix milliseconds
    action          TEXT NOT NULL,         -- e.g. 'tool.invoke'
    actor_id        TEXT,
    actor_name      TEXT,
    actor_kind      TEXT,
    key_id          TEXT,                  -- 12 hex digits of the key's hash
    client          TEXT,
    source          TEXT,
    environment_id  TEXT,
    session_id      TEXT,
    tool            TEXT,
    call_id         TEXT,
    target          TEXT,
    args_digest     TEXT,
    args            TEXT,                  -- canonical JSON, env values masked
    decision        TEXT NOT NULL,
    code            TEXT,
    exit_code       INTEGER,
    duration_ms     INTEGER,
    bytes_out       INTEGER,
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL
);

CREATE INDEX audit_log_at ON audit_log(at_ms);
CREATE INDEX audit_log_environment ON audit_log(environment_id, seq);
CREATE INDEX audit_log_actor ON audit_log(actor_id, seq);

-- The chain's head: the newest entry's number and hash, and how far
-- retention pruned. One row; appends lock it first, so relays sharing the
-- database append one at a time and keep one chain.
CREATE TABLE audit_head (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    seq             INTEGER NOT NULL,
    hash            TEXT NOT NULL,
    pruned_through  INTEGER NOT NULL
);

INSERT INTO audit_head (id, seq, hash, pruned_through)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000', 0);
