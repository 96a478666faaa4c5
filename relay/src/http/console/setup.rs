//! The setup guide: the commands that install and connect a runner, with
//! the relay's URL and (once, right after it is made) the token filled in,
//! per install method; then a live wait until the runner connects.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::Html;
use runner_proto::api::Status;

use super::page::{render, Chrome, Failure, Section, Signed};
use super::view::{self, EnvironmentRow};
use crate::http::auth::{environment_for, Caller, Intent};
use crate::http::origin::Origin;
use crate::http::tokens;
use crate::state::AppState;

/// Shown where the token goes when it cannot be shown again.
const TOKEN_PLACEHOLDER: &str = "<token>";

/// One install method's commands.
pub struct Method {
    pub id: &'static str,
    pub label: &'static str,
    pub intro: String,
    pub install: Vec<String>,
    pub upgrade: Vec<String>,
    pub uninstall: Vec<String>,
}

#[derive(Template)]
#[template(path = "console/setup.html")]
struct SetupPage {
    chrome: Chrome,
    environment: EnvironmentRow,
    base: String,
    base_from_config: bool,
    token: Option<String>,
    methods: Vec<Method>,
    wait: WaitPartial,
}

#[derive(Template)]
#[template(path = "console/setup_wait.html")]
pub struct WaitPartial {
    id: String,
    connected: bool,
    status: &'static str,
    detail: String,
}

/// The relay's URL as runners should dial it: `--public-url`, else the
/// address this browser reached it at.
fn base_url(state: &AppState, headers: &HeaderMap) -> (String, bool) {
    if let Some(url) = state.public_url.as_deref() {
        return (url.trim_end_matches('/').to_owned(), true);
    }
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .filter(|host| {
            host.bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b".-:[]".contains(&byte))
        })
        .unwrap_or("localhost");
    let scheme = if state.console.secure_cookie {
        "https"
    } else {
        "http"
    };
    (format!("{scheme}://{host}"), false)
}

fn methods(state: &AppState, base: &str, token: &str) -> Vec<Method> {
    let image = &state.console.docker_image;
    let mirror = if state.releases.is_some() {
        format!("This relay serves install.sh and the runner binary from {base}.")
    } else {
        "This relay serves no release mirror (start it with --releases-dir), so install.sh is \
         not served here: put a release mirror's URL in place of the relay's, or use the \
         manual tab."
            .to_owned()
    };
    vec![
        Method {
            id: "linux",
            label: "Linux",
            intro: format!(
                "Installs the runner as a hardened systemd service. RUN_AS is the existing user \
                 the service runs as. {mirror}"
            ),
            install: vec![format!(
                "curl -fsSL {base}/install.sh | sudo TOKEN={token} URL={base} RUN_AS=runner bash"
            )],
            upgrade: vec![format!("curl -fsSL {base}/install.sh | sudo bash")],
            uninstall: vec![format!(
                "curl -fsSL {base}/install.sh | sudo bash -s -- --uninstall"
            )],
        },
        Method {
            id: "docker",
            label: "Docker",
            intro: format!(
                "Runs the runner in a container of the image installers/Dockerfile builds \
                 ({image}); tools it should offer must be in the image."
            ),
            install: vec![format!(
                "docker run -d --name runner --restart unless-stopped -e RUNNER_URL={base} \
                 -e RUNNER_TOKEN={token} -v runner-workspace:/workspace {image}"
            )],
            upgrade: vec![
                "docker rm -f runner".to_owned(),
                format!(
                    "docker run -d --name runner --restart unless-stopped -e RUNNER_URL={base} \
                     -e RUNNER_TOKEN={token} -v runner-workspace:/workspace <new image>"
                ),
            ],
            uninstall: vec![
                "docker rm -f runner".to_owned(),
                "docker volume rm runner-workspace".to_owned(),
            ],
        },
        Method {
            id: "manual",
            label: "Manual",
            intro: "With the runner binary already on the machine: register it (the token is \
                    read from RUNNER_TOKEN, or asked for), then run it in the foreground or \
                    install it as a service."
                .to_owned(),
            install: vec![
                format!("RUNNER_TOKEN={token} runner register --url {base}"),
                "runner run".to_owned(),
            ],
            upgrade: vec!["runner update".to_owned()],
            uninstall: vec![
                "runner service uninstall".to_owned(),
                "runner unregister".to_owned(),
            ],
        },
    ]
}

/// The guide for environment `id`; `token` is shown when it was just
/// made (in this answer only).
pub async fn render_guide(
    state: &AppState,
    signed: &Signed,
    headers: &HeaderMap,
    id: &str,
    token: Option<String>,
) -> Result<Html<String>, Failure> {
    let environment = environment_for(state, &signed.member, id, Intent::Manage).await?;
    let row = EnvironmentRow::of(state, (*environment).clone()).await;
    let (base, base_from_config) = base_url(state, headers);
    let shown = token.as_deref().unwrap_or(TOKEN_PLACEHOLDER);
    render(&SetupPage {
        chrome: signed.chrome(Section::Environments),
        methods: methods(state, &base, shown),
        wait: wait_partial(&row),
        environment: row,
        base,
        base_from_config,
        token,
    })
}

fn wait_partial(row: &EnvironmentRow) -> WaitPartial {
    let connected = matches!(row.status, Status::Online | Status::Degraded);
    let detail = match (&row.version, &row.host) {
        (Some(version), Some(host)) if connected => {
            format!("runner {version} on {host} is connected")
        }
        _ if connected => "a runner is connected".to_owned(),
        _ => row
            .reason
            .clone()
            .unwrap_or_else(|| "waiting for the runner".to_owned()),
    };
    WaitPartial {
        id: row.id.clone(),
        connected,
        status: view::chip(row.status).1,
        detail,
    }
}

pub async fn page(
    State(state): State<AppState>,
    signed: Signed,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Html<String>, Failure> {
    render_guide(&state, &signed, &headers, &id, None).await
}

/// A new token for the guide (the previous one stays valid for the
/// default grace period).
pub async fn new_token(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Html<String>, Failure> {
    guide_with_new_token(&state, &signed, origin, &headers, &id, None).await
}

/// Makes environment `id` a new token (through the API's handler, with
/// `grace_hours` for the previous one, or its default) and answers with
/// the guide showing it: the only time it is shown.
pub async fn guide_with_new_token(
    state: &AppState,
    signed: &Signed,
    origin: Origin,
    headers: &HeaderMap,
    id: &str,
    grace_hours: Option<&str>,
) -> Result<Html<String>, Failure> {
    let query = grace_hours
        .map(|hours| ("grace_hours".to_owned(), hours.to_owned()))
        .into_iter()
        .collect();
    let generated = tokens::generate(
        State(state.clone()),
        Caller(signed.member.clone()),
        origin,
        Path(id.to_owned()),
        Ok(Query(query)),
    )
    .await?;
    render_guide(state, signed, headers, id, Some(generated.0.token)).await
}

/// The waiting line, polled until the runner connects.
pub async fn wait(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
) -> Result<Html<String>, Failure> {
    let environment = environment_for(&state, &signed.member, &id, Intent::Read).await?;
    let row = EnvironmentRow::of(&state, (*environment).clone()).await;
    render(&wait_partial(&row))
}
