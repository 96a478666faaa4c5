//! Approvals: the pending queue with each call shown in full (refreshed
//! every 5 s), approve or deny with a comment, and the decided ones.
//! Built for a phone as much as a desk: one card per approval.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use runner_proto::approvals::{Approval, ApprovalStatus, Decide};
use serde::Deserialize;

use super::page::{render, Chrome, Failure, Section, Signed};
use crate::access;
use crate::environment::Scope;
use crate::http::approvals::{self, GetQuery, ListQuery};
use crate::http::auth::Caller;
use crate::http::error::ApiJson;
use crate::http::origin::Origin;
use crate::state::AppState;

/// An approval as a card shows it.
pub struct Card {
    pub id: String,
    pub status: &'static str,
    pub tool: String,
    pub environment: String,
    pub environment_id: String,
    pub requested_by: String,
    pub requested_at: String,
    pub expires_at: String,
    pub rule: String,
    pub args: String,
    pub call_sha256: String,
    pub timeout_s: u64,
    pub decided: String,
    pub comment: String,
    pub outcome: String,
    /// Whether the signed-in member may decide it (and why not).
    pub decidable: Result<(), String>,
}

impl Card {
    pub fn may_decide(&self) -> bool {
        self.decidable.is_ok()
    }

    pub fn why_not(&self) -> &str {
        self.decidable.as_ref().err().map_or("", String::as_str)
    }
}

/// Environments' scopes as read for one page (`None`: deleted), so that a
/// queue of approvals reads each environment once.
type Scopes = HashMap<String, Option<Scope>>;

async fn card(state: &AppState, signed: &Signed, approval: Approval, scopes: &mut Scopes) -> Card {
    let decidable = if approval.status != ApprovalStatus::Pending {
        Err("already decided".to_owned())
    } else {
        let id = &approval.environment_id;
        let scope = match scopes.get(id) {
            Some(scope) => Ok(scope.clone()),
            None => state
                .store
                .environment(id)
                .await
                .map(|environment| environment.map(|environment| environment.scope))
                .inspect(|scope| {
                    scopes.insert(id.clone(), scope.clone());
                }),
        };
        match scope {
            Ok(Some(scope)) => {
                access::may_decide(&signed.member, &scope, &approval.requested_by.id)
                    .map_err(|why| why.to_string())
            }
            Ok(None) => Err("its environment was deleted".to_owned()),
            // The API decides anyway; the page only offers what it would allow.
            Err(_) => Err("its environment could not be read; reload the page".to_owned()),
        }
    };
    let outcome = approval
        .outcome
        .as_ref()
        .map_or_else(String::new, |outcome| {
            match (&outcome.error, outcome.exit_code) {
                (Some(error), _) => format!("failed: {error}"),
                (None, Some(code)) => format!("ran, exit code {code}"),
                (None, None) => "ran".to_owned(),
            }
        });
    Card {
        status: approval.status.as_str(),
        tool: approval.tool,
        environment: approval.environment_name,
        environment_id: approval.environment_id,
        requested_by: approval.requested_by.name,
        requested_at: approval.requested_at,
        expires_at: approval.expires_at,
        rule: approval.rule,
        args: serde_json::to_string_pretty(&approval.args).unwrap_or_default(),
        call_sha256: approval.call_sha256,
        timeout_s: approval.timeout_s,
        decided: match (&approval.decided_by, &approval.decided_at) {
            (Some(by), Some(at)) => format!("{} at {at}", by.name),
            (None, Some(at)) => format!("at {at}"),
            _ => String::new(),
        },
        comment: approval.comment.unwrap_or_default(),
        outcome,
        decidable,
        id: approval.id,
    }
}

async fn cards(
    state: &AppState,
    signed: &Signed,
    status: &str,
    limit: u32,
) -> Result<Vec<Card>, Failure> {
    let list = approvals::list(
        State(state.clone()),
        Caller(signed.member.clone()),
        Query(ListQuery {
            status: Some(status.to_owned()),
            environment: None,
            limit: Some(limit),
        }),
    )
    .await?;
    let mut cards = Vec::new();
    let mut scopes = Scopes::new();
    for approval in list.0.approvals {
        if status == "all" && approval.status == ApprovalStatus::Pending {
            continue;
        }
        cards.push(card(state, signed, approval, &mut scopes).await);
    }
    Ok(cards)
}

#[derive(Template)]
#[template(path = "console/approvals.html")]
struct ApprovalsPage {
    chrome: Chrome,
    pending: Vec<Card>,
    decided: Vec<Card>,
}

#[derive(Template)]
#[template(path = "console/approvals_pending.html")]
struct PendingPartial {
    chrome: Chrome,
    pending: Vec<Card>,
}

#[derive(Template)]
#[template(path = "console/approval.html")]
struct ApprovalPage {
    chrome: Chrome,
    card: Card,
}

pub async fn page(State(state): State<AppState>, signed: Signed) -> Result<Html<String>, Failure> {
    render(&ApprovalsPage {
        pending: cards(&state, &signed, "pending", 100).await?,
        decided: cards(&state, &signed, "all", 30).await?,
        chrome: signed.chrome(Section::Approvals),
    })
}

/// The queue alone, for the 5 s refresh.
pub async fn pending(
    State(state): State<AppState>,
    signed: Signed,
) -> Result<Html<String>, Failure> {
    render(&PendingPartial {
        pending: cards(&state, &signed, "pending", 100).await?,
        chrome: signed.chrome(Section::Approvals),
    })
}

/// One approval: where the webhook's link leads.
pub async fn detail(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
) -> Result<Html<String>, Failure> {
    let approval = approvals::get(
        State(state.clone()),
        Caller(signed.member.clone()),
        Path(id),
        Query(GetQuery { wait: None }),
    )
    .await?;
    render(&ApprovalPage {
        card: card(&state, &signed, approval.0, &mut Scopes::new()).await,
        chrome: signed.chrome(Section::Approvals),
    })
}

#[derive(Debug, Deserialize)]
pub struct DecideForm {
    #[serde(default)]
    decision: String,
    #[serde(default)]
    comment: String,
    /// Where to go back to: the queue or the approval's own page.
    #[serde(default)]
    back: String,
}

pub async fn decide(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Result<Response, Failure> {
    let body = Decide {
        comment: Some(form.comment.trim().to_owned()).filter(|comment| !comment.is_empty()),
    };
    let caller = Caller(signed.member.clone());
    let decided = match form.decision.as_str() {
        "approve" => {
            approvals::approve(
                State(state),
                caller,
                origin,
                Path(id.clone()),
                ApiJson(body),
            )
            .await
        }
        "deny" => {
            approvals::deny(
                State(state),
                caller,
                origin,
                Path(id.clone()),
                ApiJson(body),
            )
            .await
        }
        _ => {
            return Err(Failure::new(
                StatusCode::BAD_REQUEST,
                "choose approve or deny",
            ))
        }
    };
    let _ = decided?;
    let back = if form.back == "detail" {
        format!(
            "/console/approvals/{}",
            form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
        )
    } else {
        "/console/approvals".to_owned()
    };
    Ok(Redirect::to(&back).into_response())
}
