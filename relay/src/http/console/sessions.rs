//! Work sessions, read-only: who started each, the environment it is
//! locked to and that environment's status now.

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Html;
use runner_proto::sessions::Session;

use super::page::{render, Chrome, Failure, Section, Signed};
use super::view;
use crate::http::auth::Caller;
use crate::http::sessions::{self, ListQuery};
use crate::state::AppState;

/// A session as a row.
pub struct SessionRow {
    pub id: String,
    pub state: &'static str,
    pub created_by: String,
    pub agent: String,
    pub requested: String,
    pub environment: String,
    pub environment_id: String,
    pub chip_class: &'static str,
    pub chip_label: &'static str,
    pub reason: String,
    pub created_at: String,
    pub last_used_at: String,
    pub ends: String,
}

impl SessionRow {
    fn of(session: Session) -> Self {
        let (chip_class, chip_label, environment, environment_id, reason) =
            match &session.environment {
                Some(environment) => {
                    let (class, label) = match environment.status {
                        Some(status) => view::chip(status),
                        None => ("offline", "Deleted"),
                    };
                    (
                        class,
                        label,
                        environment.name.clone(),
                        environment.id.clone(),
                        environment.reason.clone().unwrap_or_default(),
                    )
                }
                None => (
                    "pending",
                    "Not placed yet",
                    String::new(),
                    String::new(),
                    String::new(),
                ),
            };
        Self {
            state: session.state.as_str(),
            created_by: session.created_by.name,
            agent: session.agent.map(|agent| agent.name).unwrap_or_default(),
            requested: session.requested,
            environment,
            environment_id,
            chip_class,
            chip_label,
            reason,
            created_at: session.created_at,
            last_used_at: session.last_used_at,
            ends: session.ended_at.unwrap_or(session.expires_at),
            id: session.id,
        }
    }
}

#[derive(Template)]
#[template(path = "console/sessions.html")]
struct SessionsPage {
    chrome: Chrome,
    rows: Vec<SessionRow>,
}

pub async fn page(State(state): State<AppState>, signed: Signed) -> Result<Html<String>, Failure> {
    let list = sessions::list(
        State(state),
        Caller(signed.member.clone()),
        Query(ListQuery { state: None }),
    )
    .await?;
    render(&SessionsPage {
        chrome: signed.chrome(Section::Sessions),
        rows: list.0.sessions.into_iter().map(SessionRow::of).collect(),
    })
}
