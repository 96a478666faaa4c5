-- Agents, default environments and work sessions.

-- A member is a person or an agent (an API client acting for a team).
ALTER TABLE members ADD COLUMN kind TEXT NOT NULL DEFAULT 'person';
-- Where sessions of an agent (then of its team) go when they name no
-- environment. An environment id, deliberately without a foreign key: when
-- the environment is deleted the id stays, so the agent or team is seen to
-- have no runner tools instead of silently falling back to "auto".
ALTER TABLE members ADD COLUMN default_environment TEXT;
ALTER TABLE teams ADD COLUMN default_environment TEXT;

-- A work session: what an agent or CI job asked for, and the environment
-- its first call locked (never changed afterwards; no foreign key, so a
-- deleted environment is still named and the session refuses calls).
CREATE TABLE work_sessions (
    id                TEXT PRIMARY KEY,
    created_by        TEXT NOT NULL,     -- member id
    created_by_name   TEXT NOT NULL,
    agent_id          TEXT,
    agent_name        TEXT,
    requested         TEXT NOT NULL,     -- 'auto', 'sandbox' or an environment id
    requested_from    TEXT NOT NULL,     -- 'request', 'agent', 'team' or 'auto'
    tags              TEXT NOT NULL,     -- JSON array of strings
    environment_id    TEXT,
    environment_name  TEXT,              -- as it was when locked
    selection_reason  TEXT,
    locked_at         BIGINT,
    created_at        BIGINT NOT NULL,
    last_used_at      BIGINT NOT NULL,
    idle_timeout_s    BIGINT NOT NULL,
    ended_at          BIGINT
);

CREATE INDEX work_sessions_created_by ON work_sessions(created_by);
CREATE INDEX work_sessions_last_used ON work_sessions(last_used_at);
