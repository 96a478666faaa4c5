//! `runner status ENV` (the relay's view) and `runner status --local` (this
//! machine's runner, from its status file and instance lock).

use anyhow::Result;
use runner_proto::api::EnvironmentStatus;

use crate::agent::health::{self, Snapshot, State};
use crate::agent::lock;
use crate::args::{EnvTarget, StatusArgs};
use crate::client::ApiClient;
use crate::commands::token;
use crate::config::Dirs;
use crate::exit::{self, ExitError};
use crate::output;

pub async fn run(dirs: &Dirs, args: StatusArgs) -> Result<u8> {
    match (args.local, args.env) {
        (true, _) => local(dirs, args.api.json),
        (false, Some(env)) => {
            remote(dirs, EnvTarget { env, api: args.api }).await?;
            Ok(exit::OK)
        }
        // clap requires ENV unless --local.
        (false, None) => {
            Err(ExitError::new(exit::USAGE, "name an environment, or pass --local").into())
        }
    }
}

async fn remote(dirs: &Dirs, target: EnvTarget) -> Result<()> {
    let client = ApiClient::from_args(dirs, &target.api).await?;
    let env = client.resolve_env(&target.env).await?;
    let status: EnvironmentStatus = client
        .get(&format!("/execution-environments/{}/status", env.id))
        .await?;
    if target.api.json {
        return output::json(&status);
    }
    let mut rows = vec![
        ("environment", format!("{} ({})", status.name, status.id)),
        ("status", status.status.as_str().to_owned()),
    ];
    if let Some(reason) = &status.reason {
        rows.push(("reason", reason.clone()));
    }
    rows.push((
        "last seen",
        status
            .last_seen
            .clone()
            .unwrap_or_else(|| "never".to_owned()),
    ));
    if let Some(runner) = &status.runner {
        rows.push((
            "runner",
            format!(
                "{} {} ({}/{})",
                runner.hostname, runner.version, runner.os, runner.arch
            ),
        ));
    }
    if let Some(token) = &status.token {
        rows.push(("token", token.hint.clone()));
    }
    if let Some(token) = &status.runner_token {
        rows.push(("runner uses token", token::describe_runner_token(token)));
    }
    output::fields(&rows)
}

/// What `--local` found: the last snapshot, judged by whether a runner
/// still holds the instance lock (a status file outlives its process).
fn local(dirs: &Dirs, json: bool) -> Result<u8> {
    let snapshot = health::read_status_file(&dirs.state)
        .map_err(|message| ExitError::new(exit::FAILURE, message))?;
    let holder = lock::holder(&dirs.state).is_some();
    let (snapshot, running) = match (snapshot, holder) {
        (Some(snapshot), true) => (Some(snapshot), true),
        (Some(mut snapshot), false) => {
            // The file is what the runner last said; it is gone now.
            snapshot.state = State::Stopped;
            snapshot.in_flight = 0;
            snapshot.backlog = 0;
            if snapshot.reason.is_none() {
                snapshot.reason = Some("the runner is not running".to_owned());
            }
            (Some(snapshot), false)
        }
        (None, running) => (None, running),
    };
    let up = running && snapshot.as_ref().is_some_and(|s| s.state.is_up());
    let code = if up { exit::OK } else { exit::NO_RUNNER };

    if json {
        output::json(&serde_json::json!({
            "running": running,
            "state_dir": dirs.state,
            "status": snapshot,
        }))?;
        return Ok(code);
    }
    match &snapshot {
        None if running => output::fields(&[
            ("status", "starting".to_owned()),
            ("state dir", dirs.state.display().to_string()),
        ])?,
        None => {
            return Err(ExitError::new(
                exit::NO_RUNNER,
                format!(
                    "no runner has run with the state directory {}",
                    dirs.state.display()
                ),
            )
            .with_hint("start one with `runner run` (or `runner service install`); a service uses RUNNER_STATE_DIR=/var/lib/runner: run this as root or as its user with that variable")
            .into())
        }
        Some(snapshot) => output::fields(&rows(snapshot, running))?,
    }
    Ok(code)
}

fn rows(s: &Snapshot, running: bool) -> Vec<(&'static str, String)> {
    let mut rows = vec![("status", s.state.as_str().to_owned())];
    if let Some(reason) = &s.reason {
        rows.push(("reason", reason.clone()));
    }
    rows.push(("relay", s.relay.clone()));
    if let (Some(id), Some(name)) = (&s.environment_id, &s.environment_name) {
        rows.push(("environment", format!("{name} ({id})")));
    }
    rows.push(("version", s.version.clone()));
    if let Some(latest) = &s.latest_version {
        rows.push(("latest version", latest.clone()));
    }
    if let Some(update) = &s.update {
        rows.push(("update", update.clone()));
    }
    if running {
        rows.push(("pid", s.pid.to_string()));
        rows.push((
            "calls",
            format!(
                "{} running, {} queued (limit {})",
                s.in_flight, s.backlog, s.max_concurrent_calls
            ),
        ));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if let Some(since) = s.connected_since {
        rows.push(("connected for", ago(now, since)));
    }
    rows.push(("reported", format!("{} ago", ago(now, s.updated_at))));
    rows
}

/// `now - then` as `1h 2m 3s` (0s when `then` is in the future).
fn ago(now: u64, then: u64) -> String {
    let secs = now.saturating_sub(then);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m {s}s"),
        _ => format!("{h}h {m}m {s}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(super::ago(100, 100), "0s");
        assert_eq!(super::ago(100, 200), "0s");
        assert_eq!(super::ago(3725, 0), "1h 2m 5s");
        assert_eq!(super::ago(61, 0), "1m 1s");
    }
}
