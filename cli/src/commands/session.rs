//! `runner session create|list|show|end`: sessions on the relay
//! (`/sessions`), whose calls stay on the machine their first call picked.

use anyhow::Result;
use reqwest::Method;
use runner_proto::sessions::{CreateSession, Session, SessionList};
use serde_json::Value;

use crate::args::{SessionCommand, SessionStateArg};
use crate::client::{ApiClient, REQUEST_TIMEOUT};
use crate::config::Dirs;
use crate::{env_vars, output};

pub async fn run(dirs: &Dirs, command: SessionCommand) -> Result<()> {
    match command {
        SessionCommand::Create(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let body = CreateSession {
                environment: args.env,
                tags: args.tags,
                agent: args.agent,
                template: args.template,
            };
            let session: Session = client
                .request(Method::POST, "/sessions", Some(&body), REQUEST_TIMEOUT)
                .await?;
            if args.api.json {
                output::json(&session)?;
            } else {
                // The id alone on stdout, for `$(runner session create)`.
                println!("{}", session.id);
                output::note(&format!(
                    "session {} ({} from {}): its first call picks the machine; use it with \
                     `runner invoke --session {} TOOL` or export {}={}",
                    session.id,
                    session.requested,
                    session.requested_from,
                    session.id,
                    env_vars::SESSION,
                    session.id
                ));
            }
        }
        SessionCommand::List(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let path = match args.state {
                None => "/sessions".to_owned(),
                Some(state) => format!("/sessions?state={}", state_name(state)),
            };
            let list: SessionList = client.get(&path).await?;
            if args.api.json {
                output::json(&list)?;
            } else {
                let rows: Vec<Vec<String>> = list
                    .sessions
                    .iter()
                    .map(|session| {
                        vec![
                            session.id.clone(),
                            session.state.as_str().to_owned(),
                            environment_cell(session),
                            session.requested.clone(),
                            session.created_by.name.clone(),
                            session.last_used_at.clone(),
                        ]
                    })
                    .collect();
                output::table(
                    &[
                        "ID",
                        "STATE",
                        "ENVIRONMENT",
                        "REQUESTED",
                        "CREATED BY",
                        "LAST USED",
                    ],
                    &rows,
                )?;
            }
        }
        SessionCommand::Show(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let session: Session = client.get(&format!("/sessions/{}", target.session)).await?;
            if target.api.json {
                output::json(&session)?;
            } else {
                show(&session)?;
            }
        }
        SessionCommand::End(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let _: Value = client
                .request::<(), Value>(
                    Method::DELETE,
                    &format!("/sessions/{}", target.session),
                    None,
                    REQUEST_TIMEOUT,
                )
                .await?;
            if target.api.json {
                output::json(&serde_json::json!({ "ended": target.session }))?;
            } else {
                output::note(&format!("ended session {}", target.session));
            }
        }
    }
    Ok(())
}

fn state_name(state: SessionStateArg) -> &'static str {
    match state {
        SessionStateArg::Open => "open",
        SessionStateArg::Ended => "ended",
        SessionStateArg::Expired => "expired",
    }
}

/// `name (status)`, `-` before the first call.
fn environment_cell(session: &Session) -> String {
    match &session.environment {
        None => "-".to_owned(),
        Some(environment) if environment.deleted => format!("{} (deleted)", environment.id),
        Some(environment) => format!(
            "{} ({})",
            if environment.name.is_empty() {
                &environment.id
            } else {
                &environment.name
            },
            environment
                .status
                .map_or("unknown", runner_proto::api::Status::as_str)
        ),
    }
}

fn show(session: &Session) -> Result<()> {
    let environment = match &session.environment {
        None => "not chosen yet (the first call picks it)".to_owned(),
        Some(environment) => {
            let mut text = format!("{} ({})", environment.name, environment.id);
            if environment.deleted {
                text.push_str(": deleted");
            } else if let Some(status) = environment.status {
                text.push_str(&format!(": {}", status.as_str()));
                if let Some(reason) = &environment.reason {
                    text.push_str(&format!(" ({reason})"));
                }
            }
            text
        }
    };
    let mut rows = vec![
        ("id", session.id.clone()),
        ("state", session.state.as_str().to_owned()),
        (
            "requested",
            format!("{} (from {})", session.requested, session.requested_from),
        ),
        ("environment", environment),
    ];
    if let Some(reason) = &session.selection_reason {
        rows.push(("chosen because", reason.clone()));
    }
    if !session.tags.is_empty() {
        rows.push(("tags", session.tags.join(", ")));
    }
    if let Some(template) = &session.template_id {
        rows.push(("template", template.clone()));
    }
    if let Some(sandbox) = &session.sandbox {
        let mut text = format!(
            "{} on host {}: {}",
            sandbox.id,
            sandbox.host_name,
            sandbox.state.as_str()
        );
        if let Some(reason) = &sandbox.reason {
            text.push_str(&format!(" ({reason})"));
        }
        rows.push(("sandbox", text));
        if let Some(setup) = &sandbox.setup {
            let exit = setup
                .exit_code
                .map_or_else(|| "killed".to_owned(), |code| format!("exit {code}"));
            rows.push(("setup", format!("{exit} after {} ms", setup.duration_ms)));
        }
    }
    rows.push(("created by", session.created_by.name.clone()));
    if let Some(agent) = &session.agent {
        rows.push(("agent", agent.name.clone()));
    }
    rows.push(("created", session.created_at.clone()));
    rows.push(("last used", session.last_used_at.clone()));
    match &session.ended_at {
        Some(ended) => rows.push(("ended", ended.clone())),
        None => rows.push(("expires", session.expires_at.clone())),
    }
    output::fields(&rows)
}
