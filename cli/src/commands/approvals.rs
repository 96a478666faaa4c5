//! `runner approvals list|show|approve|deny`: calls that wait for a
//! person's approval (`/approvals`), and the wait of
//! `runner invoke --wait-approval`.

use std::time::Duration;

use anyhow::Result;
use reqwest::Method;
use runner_proto::api::InvokeResponse;
use runner_proto::approvals::{Approval, ApprovalList, ApprovalStatus, ApprovalTicket, Decide};

use crate::args::{ApprovalDecideArgs, ApprovalStatusArg, ApprovalsCommand};
use crate::client::{with_query, ApiClient, REQUEST_TIMEOUT};
use crate::config::Dirs;
use crate::exit::{self, ExitError};
use crate::output;

/// Longest single long-poll of `GET /approvals/{id}?wait=`.
const POLL: Duration = Duration::from_secs(60);
/// Extra time an HTTP request gets beyond the wait the relay was asked for.
const MARGIN: Duration = Duration::from_secs(15);

pub async fn run(dirs: &Dirs, command: ApprovalsCommand) -> Result<()> {
    match command {
        ApprovalsCommand::List(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let path = with_query(
                "/approvals",
                &[
                    ("status", Some(status_name(args.status))),
                    ("environment", args.env.as_deref()),
                ],
            )?;
            let list: ApprovalList = client.get(&path).await?;
            if args.api.json {
                output::json(&list)?;
            } else {
                let rows: Vec<Vec<String>> = list
                    .approvals
                    .iter()
                    .map(|approval| {
                        vec![
                            approval.id.clone(),
                            approval.status.as_str().to_owned(),
                            approval.environment_name.clone(),
                            approval.tool.clone(),
                            summary(approval),
                            approval.requested_by.name.clone(),
                            approval.expires_at.clone(),
                        ]
                    })
                    .collect();
                output::table(
                    &[
                        "ID",
                        "STATUS",
                        "ENVIRONMENT",
                        "TOOL",
                        "CALL",
                        "REQUESTED BY",
                        "EXPIRES",
                    ],
                    &rows,
                )?;
            }
        }
        ApprovalsCommand::Show(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let approval = match args.wait {
                Some(wait) => wait_settled(&client, &args.approval, wait).await?,
                None => {
                    client
                        .get::<Approval>(&format!("/approvals/{}", args.approval))
                        .await?
                }
            };
            if args.api.json {
                output::json(&approval)?;
            } else {
                show(&approval)?;
            }
        }
        ApprovalsCommand::Approve(args) => decide(dirs, args, "approve").await?,
        ApprovalsCommand::Deny(args) => decide(dirs, args, "deny").await?,
    }
    Ok(())
}

async fn decide(dirs: &Dirs, args: ApprovalDecideArgs, verb: &str) -> Result<()> {
    let client = ApiClient::from_args(dirs, &args.api).await?;
    let body = Decide {
        comment: args.comment,
    };
    let approval: Approval = client
        .request(
            Method::POST,
            &format!("/approvals/{}/{verb}", args.approval),
            Some(&body),
            REQUEST_TIMEOUT,
        )
        .await?;
    if args.api.json {
        output::json(&approval)?;
    } else {
        let what = match approval.status {
            ApprovalStatus::Approved => "approved: the call was sent to the runner",
            _ => "denied: the call will not run",
        };
        output::note(&format!("{} {what}", approval.id));
    }
    Ok(())
}

fn status_name(status: ApprovalStatusArg) -> &'static str {
    match status {
        ApprovalStatusArg::Pending => "pending",
        ApprovalStatusArg::Approved => "approved",
        ApprovalStatusArg::Denied => "denied",
        ApprovalStatusArg::Expired => "expired",
        ApprovalStatusArg::All => "all",
    }
}

/// The call in one cell: a shell command, else the arguments as JSON, cut.
fn summary(approval: &Approval) -> String {
    let text = approval
        .args
        .get("command")
        .and_then(|command| command.as_str())
        .map_or_else(|| approval.args.to_string(), str::to_owned);
    let mut cell: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        cell.push('…');
    }
    cell.replace(['\n', '\t'], " ")
}

fn show(approval: &Approval) -> Result<()> {
    let mut lines = vec![
        ("id", approval.id.clone()),
        ("status", approval.status.as_str().to_owned()),
        (
            "environment",
            format!(
                "{} ({})",
                approval.environment_name, approval.environment_id
            ),
        ),
        ("tool", approval.tool.clone()),
        ("arguments", serde_json::to_string_pretty(&approval.args)?),
        ("rule", approval.rule.clone()),
        (
            "requested by",
            format!(
                "{} ({})",
                approval.requested_by.name, approval.requested_by.id
            ),
        ),
        ("requested at", approval.requested_at.clone()),
        ("expires at", approval.expires_at.clone()),
        ("call id", approval.call_id.clone()),
        ("call sha256", approval.call_sha256.clone()),
    ];
    if let Some(session) = &approval.session_id {
        lines.push(("session", session.clone()));
    }
    if let Some(by) = &approval.decided_by {
        lines.push((
            "decided by",
            format!(
                "{} at {}",
                by.name,
                approval.decided_at.as_deref().unwrap_or("?")
            ),
        ));
    }
    if let Some(comment) = &approval.comment {
        lines.push(("comment", comment.clone()));
    }
    if let Some(outcome) = &approval.outcome {
        let ended = match (&outcome.error_code, outcome.exit_code) {
            (Some(code), _) => format!("failed ({code})"),
            (None, Some(code)) => format!("exit code {code}"),
            (None, None) => "done".to_owned(),
        };
        lines.push(("call", format!("{ended} at {}", outcome.finished_at)));
    }
    if let Some(notification) = &approval.notification {
        let mut text = format!(
            "{} after {} attempt(s)",
            notification.state.as_str(),
            notification.attempts
        );
        if let Some(error) = &notification.last_error {
            text.push_str(&format!(": {error}"));
        }
        lines.push(("webhook", text));
    }
    let rows: Vec<Vec<String>> = lines
        .into_iter()
        .map(|(key, value)| vec![key.to_owned(), value])
        .collect();
    output::table(&["FIELD", "VALUE"], &rows)
}

/// Long-polls an approval until it is settled (refused, or approved and
/// its call ended) or `wait` has passed; answers its latest state.
pub async fn wait_settled(client: &ApiClient, id: &str, wait: Duration) -> Result<Approval> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let poll = left.min(POLL).as_secs().max(1);
        let approval: Approval = client
            .request::<(), Approval>(
                Method::GET,
                &format!("/approvals/{id}?wait={poll}"),
                None,
                Duration::from_secs(poll) + MARGIN,
            )
            .await?;
        if approval.settled() || tokio::time::Instant::now() >= deadline {
            return Ok(approval);
        }
    }
}

/// `runner invoke --wait-approval`: after a 202, waits for the decision
/// and the call, then answers as the invoke would have: the call's answer,
/// or exit 66 when denied or expired.
pub async fn wait_for_call(
    client: &ApiClient,
    ticket: &ApprovalTicket,
    wait: Duration,
) -> Result<InvokeResponse> {
    output::note(&format!(
        "approval {} requested (expires {}); waiting up to {}: someone else who may manage the \
         environment decides with `runner approvals approve {}` (or deny)",
        ticket.approval_id,
        ticket.expires_at,
        humanise(wait),
        ticket.approval_id
    ));
    let approval = wait_settled(client, &ticket.approval_id, wait).await?;
    match (approval.status, &approval.outcome) {
        (ApprovalStatus::Denied, _) => {
            let by = approval
                .decided_by
                .as_ref()
                .map_or_else(String::new, |by| format!(" by {}", by.name));
            let why = approval
                .comment
                .as_ref()
                .map_or_else(String::new, |comment| format!(": {comment}"));
            Err(ExitError::new(
                exit::FORBIDDEN,
                format!(
                    "approval {} was denied{by}{why}; the call did not run",
                    approval.id
                ),
            )
            .into())
        }
        (ApprovalStatus::Expired, _) => Err(ExitError::new(
            exit::FORBIDDEN,
            format!(
                "approval {} expired at {} without a decision; the call did not run",
                approval.id, approval.expires_at
            ),
        )
        .into()),
        (_, Some(outcome)) => match &outcome.error_code {
            None => Ok(InvokeResponse {
                call_id: approval.call_id.clone(),
                result: outcome.result.clone(),
                exit_code: outcome.exit_code,
                error: outcome.error.clone(),
                error_code: None,
                notice: None,
            }),
            Some(code) => {
                let status = match code.as_str() {
                    "timeout" => exit::TIMEOUT,
                    "runner_disconnected" | "runner_not_connected" => exit::NO_RUNNER,
                    "tool_not_allowed" | "path_not_allowed" | "denied_by_runner_policy" => {
                        exit::FORBIDDEN
                    }
                    _ => exit::FAILURE,
                };
                let message = outcome
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("the approved call failed: {code}"));
                Err(ExitError::new(status, message).into())
            }
        },
        _ => Err(ExitError::new(
            exit::TIMEOUT,
            format!(
                "approval {} is still {} after {}",
                approval.id,
                approval.status.as_str(),
                humanise(wait)
            ),
        )
        .with_hint(format!(
            "wait on: `runner approvals show {} --wait 10m`",
            approval.id
        ))
        .into()),
    }
}

fn humanise(wait: Duration) -> String {
    let seconds = wait.as_secs();
    match seconds {
        s if s % 3600 == 0 && s > 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 && s > 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_parse_with_units_and_are_bounded() {
        use crate::args::parse_wait;
        assert_eq!(parse_wait("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_wait("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_wait("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_wait("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "0", "10x", "m", "25h", "-1s", "1.5m"] {
            assert!(parse_wait(bad).is_err(), "{bad:?}");
        }
        assert_eq!(humanise(Duration::from_secs(600)), "10m");
        assert_eq!(humanise(Duration::from_secs(90)), "90s");
    }
}
