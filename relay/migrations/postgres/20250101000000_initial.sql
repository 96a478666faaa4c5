-- Durable state of the relay, shared by every relay instance. The same
-- tables as the SQLite schema; times are Unix seconds (UTC). Secrets are
-- stored as hex SHA-256 only.

CREATE TABLE members (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    is_admin    BOOLEAN NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    member_id   TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    key_hash    TEXT NOT NULL UNIQUE,
    hint        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE teams (
    name        TEXT PRIMARY KEY,
    created_at  BIGINT NOT NULL
);

CREATE TABLE team_members (
    team_name   TEXT NOT NULL REFERENCES teams(name) ON DELETE CASCADE,
    member_id   TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    PRIMARY KEY (team_name, member_id)
);

CREATE TABLE environments (
    id                     TEXT PRIMARY KEY,
    name                   TEXT NOT NULL,
    description            TEXT NOT NULL,
    env_type               TEXT NOT NULL,
    tags                   TEXT NOT NULL,     -- JSON array of strings
    scope                  TEXT NOT NULL,     -- "shared" or "team:<name>"
    tier                   TEXT NOT NULL,     -- "production" or "development"
    install_browser_tools  BOOLEAN NOT NULL,
    policy                 TEXT NOT NULL,     -- JSON, runner_proto::ws::Policy
    created_at             BIGINT NOT NULL,
    last_seen              BIGINT,
    runner                 TEXT               -- JSON, runner_proto::api::RunnerInfo
);

CREATE UNIQUE INDEX environments_name ON environments(name) WHERE name <> '';

CREATE TABLE registration_tokens (
    id              TEXT PRIMARY KEY,
    environment_id  TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
    token_hash      TEXT NOT NULL UNIQUE,
    hint            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    last_used_at    BIGINT,
    valid_until     BIGINT,
    -- Creation order among tokens made in the same second (SQLite's rowid).
    seq             BIGSERIAL
);

CREATE INDEX registration_tokens_environment ON registration_tokens(environment_id);
