//! Sandbox templates: the list and create form, one template's edit form
//! (with byte counters for the `.env` text and the setup script, and the
//! variables that look like secrets flagged), and delete with the name
//! typed. Every change goes through the API's own functions.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use runner_proto::sandbox::Network;
use runner_proto::templates::{
    CreateTemplate, TemplateWarning, UpdateTemplate, DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_LIFETIME_S, MAX_ENV_TEXT_BYTES, MAX_SETUP_SCRIPT_BYTES,
};
use serde::Deserialize;

use super::page::{render, Chrome, Failure, Section, Signed};
use crate::access;
use crate::http::origin::Origin;
use crate::http::templates as api;
use crate::http::templates::{template_for, visible};
use crate::state::AppState;
use crate::templates::{Intent, TemplateRecord};

/// A template as a row of the list.
pub struct TemplateRow {
    pub id: String,
    pub name: String,
    pub scope: String,
    pub network: &'static str,
    pub variables: usize,
    pub setup: bool,
    pub idle: String,
    pub lifetime: String,
    pub warnings: usize,
}

impl TemplateRow {
    fn of(template: &TemplateRecord) -> Self {
        Self {
            id: template.id.clone(),
            name: template.name.clone(),
            scope: template.scope.to_string(),
            network: network_label(template.network),
            variables: template.entries.len(),
            setup: template.setup().is_some(),
            idle: minutes(template.idle_timeout_s),
            lifetime: minutes(template.max_lifetime_s),
            warnings: template.warnings().len(),
        }
    }
}

fn network_label(network: Network) -> &'static str {
    match network {
        Network::None => "none",
        Network::AllowAll => "allow all",
        Network::Allowlist => "allowlist",
    }
}

/// `900` → `15 min`, `28800` → `8 h`.
fn minutes(seconds: u64) -> String {
    if seconds.is_multiple_of(3600) {
        format!("{} h", seconds / 3600)
    } else {
        format!("{} min", seconds / 60)
    }
}

/// What a template form holds (create and edit): kept as typed when the
/// relay refuses it.
#[derive(Debug, Clone, Deserialize)]
pub struct TemplateForm {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Create only.
    #[serde(default)]
    pub scope: String,
    #[serde(default)]
    pub network: String,
    /// One domain a line (commas and spaces separate too).
    #[serde(default)]
    pub allowed_domains: String,
    #[serde(default)]
    pub env_text: String,
    #[serde(default)]
    pub setup_script: String,
    /// Minutes.
    #[serde(default)]
    pub idle_minutes: String,
    /// Minutes.
    #[serde(default)]
    pub lifetime_minutes: String,
}

impl Default for TemplateForm {
    fn default() -> Self {
        Self {
            name: String::new(),
            description: String::new(),
            scope: String::new(),
            network: "none".to_owned(),
            allowed_domains: String::new(),
            env_text: String::new(),
            setup_script: String::new(),
            idle_minutes: (DEFAULT_IDLE_TIMEOUT_S / 60).to_string(),
            lifetime_minutes: (DEFAULT_MAX_LIFETIME_S / 60).to_string(),
        }
    }
}

impl TemplateForm {
    fn of(template: &TemplateRecord) -> Self {
        Self {
            name: template.name.clone(),
            description: template.description.clone(),
            scope: template.scope.to_string(),
            network: template.network.as_str().to_owned(),
            allowed_domains: template.allowed_domains.join("\n"),
            env_text: template.env_text.clone(),
            setup_script: template.setup_script.clone(),
            idle_minutes: (template.idle_timeout_s / 60).to_string(),
            lifetime_minutes: (template.max_lifetime_s / 60).to_string(),
        }
    }

    fn network(&self) -> Result<Network, Failure> {
        match self.network.as_str() {
            "none" | "" => Ok(Network::None),
            "allow_all" => Ok(Network::AllowAll),
            "allowlist" => Ok(Network::Allowlist),
            other => Err(Failure::new(
                StatusCode::BAD_REQUEST,
                format!("unknown network {other:?}"),
            )),
        }
    }

    fn domains(&self) -> Vec<String> {
        self.allowed_domains
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|domain| !domain.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Minutes typed, as seconds (blank: `default`).
    fn seconds(field: &str, text: &str, default: u64) -> Result<u64, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(default);
        }
        text.parse::<u64>()
            .ok()
            .and_then(|minutes| minutes.checked_mul(60))
            .ok_or_else(|| format!("{field} must be a whole number of minutes"))
    }

    /// Bytes of the `.env` text and the script as they will be saved.
    fn env_bytes(&self) -> usize {
        lf(&self.env_text).len()
    }

    fn setup_bytes(&self) -> usize {
        lf(&self.setup_script).len()
    }
}

/// Browsers send a textarea's line breaks as CRLF; a script run by bash
/// and a `.env` value must keep the LF a person typed.
fn lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

#[derive(Template)]
#[template(path = "console/templates.html")]
struct TemplatesPage {
    chrome: Chrome,
    rows: Vec<TemplateRow>,
    scopes: Vec<String>,
    form: TemplateForm,
    error: Option<String>,
    max_env: usize,
    max_setup: usize,
}

#[derive(Template)]
#[template(path = "console/template.html")]
struct TemplatePage {
    chrome: Chrome,
    id: String,
    name: String,
    scope: String,
    created_by: String,
    updated_at: String,
    manage: bool,
    form: TemplateForm,
    warnings: Vec<TemplateWarning>,
    error: Option<String>,
    notice: Option<String>,
    max_env: usize,
    max_setup: usize,
}

async fn list_page(
    state: &AppState,
    signed: &Signed,
    form: TemplateForm,
    error: Option<String>,
) -> Result<Html<String>, Failure> {
    let rows = visible(state, &signed.member)
        .await?
        .iter()
        .map(TemplateRow::of)
        .collect();
    let scopes = access::manageable_scopes(&signed.member)
        .iter()
        .map(ToString::to_string)
        .collect();
    render(&TemplatesPage {
        chrome: signed.chrome(Section::Templates),
        rows,
        scopes,
        form,
        error,
        max_env: MAX_ENV_TEXT_BYTES,
        max_setup: MAX_SETUP_SCRIPT_BYTES,
    })
}

pub async fn page(State(state): State<AppState>, signed: Signed) -> Result<Html<String>, Failure> {
    list_page(&state, &signed, TemplateForm::default(), None).await
}

fn to_page(id: &str, done: &str) -> Response {
    Redirect::to(&format!(
        "/console/templates/{}?done={done}",
        form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
    ))
    .into_response()
}

/// Creates a template and opens it (its warnings are shown there). A
/// refused form comes back with what was typed and why.
pub async fn create(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Form(form): Form<TemplateForm>,
) -> Result<Response, Failure> {
    let request = (|| {
        Ok::<_, Failure>(CreateTemplate {
            name: form.name.trim().to_owned(),
            description: form.description.trim().to_owned(),
            scope: Some(form.scope.clone()).filter(|scope| !scope.is_empty()),
            network: Some(form.network()?),
            allowed_domains: form.domains(),
            env_text: lf(&form.env_text),
            setup_script: lf(&form.setup_script),
            idle_timeout_s: Some(
                TemplateForm::seconds("idle timeout", &form.idle_minutes, DEFAULT_IDLE_TIMEOUT_S)
                    .map_err(|why| Failure::new(StatusCode::BAD_REQUEST, why))?,
            ),
            max_lifetime_s: Some(
                TemplateForm::seconds(
                    "maximum lifetime",
                    &form.lifetime_minutes,
                    DEFAULT_MAX_LIFETIME_S,
                )
                .map_err(|why| Failure::new(StatusCode::BAD_REQUEST, why))?,
            ),
        })
    })();
    let created = match request {
        Ok(request) => api::create_template(&state, &signed.member, &origin, request)
            .await
            .map_err(Failure::from),
        Err(failure) => Err(failure),
    };
    match created {
        Ok(template) => Ok(to_page(&template.id, "created")),
        Err(failure) => {
            let status = failure.status();
            let html = list_page(&state, &signed, form, Some(failure.message().to_owned())).await?;
            Ok((status, html).into_response())
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    #[serde(default)]
    done: String,
}

fn notice_text(done: &str) -> Option<String> {
    match done {
        "created" => Some("Template created.".to_owned()),
        "saved" => Some("Saved. New sandboxes get these settings.".to_owned()),
        _ => None,
    }
}

fn template_page(
    signed: &Signed,
    template: &TemplateRecord,
    form: TemplateForm,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Html<String>, Failure> {
    render(&TemplatePage {
        chrome: signed.chrome(Section::Templates),
        id: template.id.clone(),
        name: template.name.clone(),
        scope: template.scope.to_string(),
        created_by: template.created_by.name.clone(),
        updated_at: crate::clock::rfc3339(template.updated_at),
        manage: access::can_manage(&signed.member, &template.scope),
        form,
        warnings: template.warnings(),
        error,
        notice,
        max_env: MAX_ENV_TEXT_BYTES,
        max_setup: MAX_SETUP_SCRIPT_BYTES,
    })
}

pub async fn show(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Query(notice): Query<Notice>,
) -> Result<Html<String>, Failure> {
    let template = template_for(&state, &signed.member, &id, Intent::Read).await?;
    let form = TemplateForm::of(&template);
    template_page(&signed, &template, form, None, notice_text(&notice.done))
}

/// Saves the edit form; a refused one comes back as typed, with why.
pub async fn save(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(form): Form<TemplateForm>,
) -> Result<Response, Failure> {
    let template = template_for(&state, &signed.member, &id, Intent::Manage).await?;
    let request = (|| {
        Ok::<_, Failure>(UpdateTemplate {
            name: Some(form.name.trim().to_owned()),
            description: Some(form.description.trim().to_owned()),
            network: Some(form.network()?),
            allowed_domains: Some(form.domains()),
            env_text: Some(lf(&form.env_text)),
            setup_script: Some(lf(&form.setup_script)),
            idle_timeout_s: Some(
                TemplateForm::seconds("idle timeout", &form.idle_minutes, template.idle_timeout_s)
                    .map_err(|why| Failure::new(StatusCode::BAD_REQUEST, why))?,
            ),
            max_lifetime_s: Some(
                TemplateForm::seconds(
                    "maximum lifetime",
                    &form.lifetime_minutes,
                    template.max_lifetime_s,
                )
                .map_err(|why| Failure::new(StatusCode::BAD_REQUEST, why))?,
            ),
            scope: None,
        })
    })();
    let saved = match request {
        Ok(request) => api::update_template(&state, &signed.member, &origin, &template.id, request)
            .await
            .map_err(Failure::from),
        Err(failure) => Err(failure),
    };
    match saved {
        Ok(saved) => Ok(to_page(&saved.id, "saved")),
        Err(failure) => {
            let status = failure.status();
            let html = template_page(
                &signed,
                &template,
                form,
                Some(failure.message().to_owned()),
                None,
            )?;
            Ok((status, html).into_response())
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    confirm_name: String,
}

pub async fn delete(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(form): Form<DeleteForm>,
) -> Result<Response, Failure> {
    let template = template_for(&state, &signed.member, &id, Intent::Manage).await?;
    if form.confirm_name.trim() != template.name {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            format!("Type the template's name ({}) to delete it.", template.name),
        ));
    }
    api::delete_template(&state, &signed.member, &origin, &template.id).await?;
    Ok(Redirect::to("/console/templates").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_read_domains_minutes_and_line_breaks() {
        let form = TemplateForm {
            allowed_domains: "pypi.org\r\nfiles.pythonhosted.org, example.test ".into(),
            env_text: "A=\"x\r\ny\"\r\n".into(),
            ..TemplateForm::default()
        };
        assert_eq!(
            form.domains(),
            ["pypi.org", "files.pythonhosted.org", "example.test"]
        );
        assert_eq!(form.env_bytes(), "A=\"x\ny\"\n".len());
        assert_eq!(TemplateForm::seconds("t", " 15 ", 1), Ok(900));
        assert_eq!(TemplateForm::seconds("t", "", 7), Ok(7));
        assert!(TemplateForm::seconds("t", "1.5", 7).is_err());
        assert_eq!(minutes(900), "15 min");
        assert_eq!(minutes(28_800), "8 h");
    }
}
