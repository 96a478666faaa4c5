//! The environments list (refreshed every 10 s by htmx, filtered by
//! status, team and tag) and the create form.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Form;
use runner_proto::api::{CreateEnvironment, Tier};
use serde::Deserialize;

use super::page::{render, Chrome, Failure, Section, Signed};
use super::setup;
use super::view::EnvironmentRow;
use crate::access;
use crate::http::auth::Caller;
use crate::http::environments;
use crate::http::error::ApiJson;
use crate::http::origin::Origin;
use crate::state::AppState;
use crate::store::Member;

/// The list's filters, as the query string carries them.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct Filter {
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub team: String,
    #[serde(default)]
    pub tag: String,
}

impl Filter {
    fn keeps(&self, row: &EnvironmentRow) -> bool {
        (self.status.is_empty() || row.chip_class() == self.status)
            && (self.team.is_empty()
                || (self.team == "shared" && row.team.is_none())
                || row.team.as_deref() == Some(self.team.as_str()))
            && (self.tag.is_empty() || row.tags.contains(&self.tag))
    }

    /// The query string that repeats these filters.
    pub fn query(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("status", &self.status)
            .append_pair("team", &self.team)
            .append_pair("tag", &self.tag)
            .finish()
    }
}

/// The rows `member` may see that pass `filter`, by name.
pub async fn rows_for(
    state: &AppState,
    member: &Member,
    filter: &Filter,
) -> Result<Vec<EnvironmentRow>, Failure> {
    let mut rows = Vec::new();
    for environment in state
        .store
        .list_environments()
        .await
        .map_err(crate::http::error::ApiError::from)?
    {
        if !access::can_see(member, &environment) {
            continue;
        }
        let row = EnvironmentRow::of(state, environment).await;
        if filter.keeps(&row) {
            rows.push(row);
        }
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    Ok(rows)
}

/// What the create form held, kept when it is refused.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct CreateForm {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "type")]
    pub env_type: String,
    #[serde(default)]
    pub scope: String,
    #[serde(default)]
    pub tags: String,
    #[serde(default)]
    pub tier: String,
}

#[derive(Template)]
#[template(path = "console/environments.html")]
struct EnvironmentsPage {
    chrome: Chrome,
    rows: Vec<EnvironmentRow>,
    filter: Filter,
    query: String,
    teams: Vec<String>,
    scopes: Vec<String>,
    tags: Vec<String>,
    form: CreateForm,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "console/environment_rows.html")]
struct RowsPartial {
    rows: Vec<EnvironmentRow>,
    query: String,
}

async fn list_page(
    state: &AppState,
    signed: &Signed,
    filter: Filter,
    form: CreateForm,
    error: Option<String>,
) -> Result<Html<String>, Failure> {
    let everything = rows_for(state, &signed.member, &Filter::default()).await?;
    let mut tags: Vec<String> = everything.iter().flat_map(|row| row.tags.clone()).collect();
    tags.sort();
    tags.dedup();
    // Admins see other teams' environments too: filter by any team shown.
    let mut teams: Vec<String> = everything
        .iter()
        .filter_map(|row| row.team.clone())
        .chain(signed.member.teams.iter().cloned())
        .collect();
    teams.sort();
    teams.dedup();
    let rows = everything
        .into_iter()
        .filter(|row| filter.keeps(row))
        .collect();
    let scopes = access::manageable_scopes(&signed.member)
        .iter()
        .map(ToString::to_string)
        .collect();
    render(&EnvironmentsPage {
        chrome: signed.chrome(Section::Environments),
        rows,
        query: filter.query(),
        filter,
        teams,
        scopes,
        tags,
        form,
        error,
    })
}

pub async fn page(
    State(state): State<AppState>,
    signed: Signed,
    Query(filter): Query<Filter>,
) -> Result<Html<String>, Failure> {
    list_page(&state, &signed, filter, CreateForm::default(), None).await
}

/// The table's body alone, for the 10 s refresh.
pub async fn rows(
    State(state): State<AppState>,
    signed: Signed,
    Query(filter): Query<Filter>,
) -> Result<Html<String>, Failure> {
    let rows = rows_for(&state, &signed.member, &filter).await?;
    render(&RowsPartial {
        rows,
        query: filter.query(),
    })
}

/// Creates an environment with a first token, and answers with its setup
/// guide (the token is shown there once). A refused form comes back with
/// what was typed and why.
pub async fn create(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    headers: axum::http::HeaderMap,
    Form(form): Form<CreateForm>,
) -> Result<Response, Failure> {
    let tier = match form.tier.as_str() {
        "development" => Tier::Development,
        _ => Tier::Production,
    };
    let request = CreateEnvironment {
        name: form.name.trim().to_owned(),
        description: form.description.trim().to_owned(),
        env_type: Some(form.env_type.trim().to_owned()).filter(|text| !text.is_empty()),
        tags: split_tags(&form.tags),
        scope: Some(form.scope.clone()).filter(|scope| !scope.is_empty()),
        tier,
        ..CreateEnvironment::default()
    };
    let created = environments::create(
        State(state.clone()),
        Caller(signed.member.clone()),
        origin.clone(),
        ApiJson(request),
    )
    .await;
    let (_, axum::Json(environment)) = match created {
        Ok(created) => created,
        Err(error) => {
            let html = list_page(
                &state,
                &signed,
                Filter::default(),
                form,
                Some(error.message.clone()),
            )
            .await?;
            return Ok((error.status, html).into_response());
        }
    };
    let html =
        setup::guide_with_new_token(&state, &signed, origin, &headers, &environment.id, None)
            .await?;
    Ok((StatusCode::CREATED, html).into_response())
}

/// Tags as typed: separated by commas or spaces.
pub(super) fn split_tags(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|tag| !tag.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_on_commas_and_spaces() {
        assert_eq!(
            split_tags(" gpu, linux  arm64,,"),
            ["gpu", "linux", "arm64"]
        );
        assert!(split_tags("  ").is_empty());
    }
}
