-- Approvals: a call to a tool that needs a person's approval, kept until
-- someone allowed to decide approves or denies it (docs/approvals.md).
CREATE TABLE approvals (
    id                TEXT PRIMARY KEY,
    call_id           TEXT NOT NULL UNIQUE, -- the id the call runs under
    status            TEXT NOT NULL,        -- 'pending', 'approved' or 'denied'
    environment_id    TEXT NOT NULL,        -- no foreign key: the record outlives it
    environment_name  TEXT NOT NULL,
    session_id        TEXT,
    tool              TEXT NOT NULL,
    args              TEXT NOT NULL,        -- JSON; in full while pending, masked once decided
    timeout_s         BIGINT NOT NULL,
    call_sha256       TEXT NOT NULL,
    rule              TEXT NOT NULL,
    requested_by      TEXT NOT NULL,        -- member id
    requested_by_name TEXT NOT NULL,
    requested_at      BIGINT NOT NULL,
    expires_at        BIGINT NOT NULL,
    decided_by        TEXT,
    decided_by_name   TEXT,
    decided_at        BIGINT,
    comment           TEXT,
    outcome           TEXT,                 -- JSON, once the approved call ended
    notification      TEXT                  -- JSON, the webhook's delivery
);

CREATE INDEX approvals_status_expiry ON approvals(status, expires_at);
CREATE INDEX approvals_requested_at ON approvals(requested_at);
