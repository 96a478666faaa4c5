//! The audit log (organisation admins, as `GET /audit`): filters, newest
//! first, and new entries followed live (a poll every 5 s inserts them at
//! the top).

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Html;
use runner_proto::audit::{AuditAction, AuditDecision, AuditEntry};
use serde::Deserialize;

use super::page::{render, Chrome, Failure, Section, Signed};
use super::view::ago;
use crate::http::audit::{self, AuditParams};
use crate::http::auth::Caller;
use crate::state::AppState;
use crate::store::Member;

/// Entries per page.
const PAGE: u32 = 100;

/// One entry as the table shows it.
pub struct EntryRow {
    pub seq: u64,
    pub at: String,
    pub ago: String,
    pub actor: String,
    pub action: &'static str,
    pub environment: String,
    pub tool: String,
    pub target: String,
    pub decision: &'static str,
    /// The CSS class of the decision.
    pub outcome: &'static str,
    pub code: String,
    pub detail: String,
}

impl EntryRow {
    pub fn of(entry: AuditEntry, now: time::OffsetDateTime) -> Self {
        let at =
            time::OffsetDateTime::parse(&entry.at, &time::format_description::well_known::Rfc3339)
                .map(|at| ago(now, at))
                .unwrap_or_default();
        let actor = match (&entry.actor.name, &entry.actor.kind) {
            (Some(name), Some(kind)) => format!("{name} ({kind})"),
            (Some(name), None) => name.clone(),
            (None, Some(kind)) => kind.clone(),
            (None, None) => entry
                .actor
                .source
                .clone()
                .unwrap_or_else(|| "unknown".to_owned()),
        };
        let mut detail = Vec::new();
        if let Some(code) = entry.exit_code {
            detail.push(format!("exit {code}"));
        }
        if let Some(ms) = entry.duration_ms {
            detail.push(format!("{ms} ms"));
        }
        if let Some(source) = &entry.actor.source {
            detail.push(format!("from {source}"));
        }
        Self {
            seq: entry.seq,
            ago: at,
            at: entry.at,
            actor,
            action: entry.action.as_str(),
            environment: entry.environment_id.unwrap_or_default(),
            tool: entry.tool.unwrap_or_default(),
            target: entry.target.unwrap_or_default(),
            decision: entry.decision.as_str(),
            outcome: match entry.decision {
                AuditDecision::Allowed => "ok",
                AuditDecision::Denied => "denied",
                AuditDecision::Error | AuditDecision::Timeout => "error",
            },
            code: entry.code.unwrap_or_default(),
            detail: detail.join(", "),
        }
    }
}

/// Entries by the API's own rules (admins only), newest first.
pub async fn entry_rows(
    state: &AppState,
    member: &std::sync::Arc<Member>,
    params: AuditParams,
) -> Result<Vec<EntryRow>, Failure> {
    let page = audit::list(
        State(state.clone()),
        Caller(member.clone()),
        Ok(Query(params)),
    )
    .await?;
    let now = state.clock.now();
    Ok(page
        .0
        .entries
        .into_iter()
        .map(|entry| EntryRow::of(entry, now))
        .collect())
}

/// The page's filters.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct Filter {
    #[serde(default)]
    action: String,
    #[serde(default)]
    environment: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    actor: String,
    /// `GET /console/audit/entries`: only entries after this one.
    #[serde(default)]
    after: Option<u64>,
}

impl Filter {
    fn params(&self) -> AuditParams {
        let given = |text: &str| Some(text.trim().to_owned()).filter(|text| !text.is_empty());
        AuditParams {
            action: given(&self.action),
            environment: given(&self.environment),
            tool: given(&self.tool),
            actor: given(&self.actor),
            limit: Some(PAGE),
            ..AuditParams::default()
        }
    }

    fn query(&self, after: u64) -> String {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("action", &self.action)
            .append_pair("environment", &self.environment)
            .append_pair("tool", &self.tool)
            .append_pair("actor", &self.actor)
            .append_pair("after", &after.to_string())
            .finish()
    }
}

#[derive(Template)]
#[template(path = "console/audit.html")]
struct AuditPage {
    chrome: Chrome,
    rows: Vec<EntryRow>,
    actions: Vec<&'static str>,
    filter: Filter,
    follow: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "console/audit_entries.html")]
struct NewEntries {
    rows: Vec<EntryRow>,
    follow: String,
}

pub async fn page(
    State(state): State<AppState>,
    signed: Signed,
    Query(filter): Query<Filter>,
) -> Result<Html<String>, Failure> {
    let mut params = filter.params();
    params.order = Some("desc".to_owned());
    let (rows, error) = match entry_rows(&state, &signed.member, params).await {
        Ok(rows) => (rows, None),
        Err(failure) => (Vec::new(), Some(failure.message().to_owned())),
    };
    let newest = rows.first().map_or(0, |row| row.seq);
    render(&AuditPage {
        chrome: signed.chrome(Section::Audit),
        follow: filter.query(newest),
        rows,
        actions: AuditAction::ALL
            .iter()
            .map(|action| action.as_str())
            .collect(),
        filter,
        error,
    })
}

/// Entries after `after`, newest first, with the next poll before them.
pub async fn entries(
    State(state): State<AppState>,
    signed: Signed,
    Query(filter): Query<Filter>,
) -> Result<Html<String>, Failure> {
    let after = filter.after.unwrap_or(0);
    let mut params = filter.params();
    params.cursor = Some(after.to_string());
    let mut rows = entry_rows(&state, &signed.member, params).await?;
    rows.reverse();
    let newest = rows.first().map_or(after, |row| row.seq);
    render(&NewEntries {
        follow: filter.query(newest),
        rows,
    })
}
