-- Sandboxes: an environment whose runner a sandbox host started for one
-- work session, or the managed runner of a deployed environment
-- (docs/sandboxes.md). The row outlives the environment, so a session can
-- say what became of its sandbox.
CREATE TABLE sandboxes (
    id                   TEXT PRIMARY KEY,   -- a session's: also its environment's id
    session_id           TEXT NOT NULL,      -- '' for a deployment
    deployment_of        TEXT,               -- the environment deployed (no foreign key)
    host_environment_id  TEXT NOT NULL,      -- no foreign key: the record outlives the host
    host_name            TEXT NOT NULL,
    template_id          TEXT,
    state                TEXT NOT NULL,      -- provisioning, setting_up, ready, busy, stopped, failed
    reason               TEXT,
    setup                TEXT,               -- JSON SetupReport, when a setup script ran
    created_by           TEXT NOT NULL,      -- member id
    created_at           INTEGER NOT NULL,
    ready_at             INTEGER,
    ended_at             INTEGER
);

CREATE INDEX sandboxes_session ON sandboxes(session_id);
CREATE INDEX sandboxes_deployment ON sandboxes(deployment_of);
CREATE INDEX sandboxes_created_at ON sandboxes(created_at);

-- The template a session's sandbox is prepared by (its id; a template
-- deleted before the sandbox starts leaves the default configuration).
ALTER TABLE work_sessions ADD COLUMN template_id TEXT;
