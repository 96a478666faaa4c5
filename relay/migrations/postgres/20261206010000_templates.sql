-- Sandbox templates: what a new sandbox is prepared with (docs/templates.md).
-- Sessions name a template by id only, so deleting one leaves nothing behind.
CREATE TABLE templates (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    description      TEXT NOT NULL,
    scope            TEXT NOT NULL,      -- "shared" or "team:<name>"
    network          TEXT NOT NULL,      -- "none", "allow_all" or "allowlist"
    allowed_domains  TEXT NOT NULL,      -- JSON array of strings
    env_text         TEXT NOT NULL,      -- the .env text as given
    setup_script     TEXT NOT NULL,      -- empty: none
    idle_timeout_s   BIGINT NOT NULL,
    max_lifetime_s   BIGINT NOT NULL,
    created_by       TEXT NOT NULL,      -- member id; no foreign key: the template outlives it
    created_by_name  TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
