-- The change feed behind the relays' read cache (relay/src/read_cache.rs):
-- a change to anything a relay keeps a copy of (an environment's settings
-- and policy; members, their API keys and teams) notifies every relay
-- listening on `runner_changes`, whoever made it: another relay, or
-- `runner-relay admin`. Notifications leave when the transaction commits.
-- Heartbeat bookkeeping (last_seen, runner) notifies nobody: no copy
-- depends on it.

CREATE FUNCTION runner_notify_environment() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('runner_changes', 'environment:' || OLD.id);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE FUNCTION runner_notify_members() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('runner_changes', 'members');
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER environments_changed AFTER UPDATE ON environments
    FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name
        OR OLD.description IS DISTINCT FROM NEW.description
        OR OLD.env_type IS DISTINCT FROM NEW.env_type
        OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.tier IS DISTINCT FROM NEW.tier
        OR OLD.install_browser_tools IS DISTINCT FROM NEW.install_browser_tools
        OR OLD.policy IS DISTINCT FROM NEW.policy)
    EXECUTE FUNCTION runner_notify_environment();

CREATE TRIGGER environments_deleted AFTER DELETE ON environments
    FOR EACH ROW EXECUTE FUNCTION runner_notify_environment();

CREATE TRIGGER members_changed AFTER UPDATE OR DELETE ON members
    FOR EACH STATEMENT EXECUTE FUNCTION runner_notify_members();

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION runner_notify_members();

CREATE TRIGGER team_members_changed AFTER INSERT OR UPDATE OR DELETE ON team_members
    FOR EACH STATEMENT EXECUTE FUNCTION runner_notify_members();
