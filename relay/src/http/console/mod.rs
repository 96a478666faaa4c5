//! The web console (`/console/…`, docs/console.md): server-rendered pages
//! over the API's own handlers, so a person in a browser sees and may do
//! exactly what their API key may through the API.
//!
//! * Sign-in turns an API key (or a one-time link printed by `serve` or
//!   `dev`) into an `HttpOnly`, `SameSite=Strict` cookie scoped to
//!   `/console` ([`cookie`]). The API itself never reads that cookie: the
//!   console's middleware hands the key to the API's [`Caller`] extractor
//!   only for console routes.
//! * Every change is a POST carrying a CSRF token derived from the key;
//!   a request another site's page makes is refused ([`guard`]).
//! * Pages are askama templates (`relay/templates/console/`), partial
//!   updates are htmx, and every asset is compiled into the binary
//!   ([`assets`]).
//!
//! [`Caller`]: super::auth::Caller

mod approvals;
mod assets;
mod audit;
mod cookie;
mod environment;
mod environments;
mod guard;
mod page;
mod playground;
mod sessions;
mod setup;
mod signin;
mod templates;
mod view;

use axum::middleware;
use axum::response::Redirect;
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The console's routes, or none with `--no-console`.
pub fn routes(state: &AppState) -> Router<AppState> {
    if !state.console.enabled {
        return Router::new();
    }
    let pages = Router::new()
        .route(
            "/console",
            get(|| async { Redirect::to("/console/environments") }),
        )
        .route(
            "/console/",
            get(|| async { Redirect::to("/console/environments") }),
        )
        .route(
            "/console/environments",
            get(environments::page).post(environments::create),
        )
        .route("/console/environments/rows", get(environments::rows))
        .route("/console/environments/{id}", get(environment::page))
        .route(
            "/console/environments/{id}/status",
            get(environment::status),
        )
        .route(
            "/console/environments/{id}/setup",
            get(setup::page).post(setup::new_token),
        )
        .route("/console/environments/{id}/wait", get(setup::wait))
        .route(
            "/console/environments/{id}/rotate",
            post(environment::rotate),
        )
        .route(
            "/console/environments/{id}/revoke",
            post(environment::revoke),
        )
        .route(
            "/console/environments/{id}/policy",
            post(environment::policy),
        )
        .route(
            "/console/environments/{id}/settings",
            post(environment::settings),
        )
        .route(
            "/console/environments/{id}/delete",
            post(environment::delete),
        )
        .route(
            "/console/playground",
            get(playground::page).post(playground::decide),
        )
        .route("/console/approvals", get(approvals::page))
        .route("/console/approvals/pending", get(approvals::pending))
        .route("/console/approvals/{id}", get(approvals::detail))
        .route("/console/approvals/{id}/decide", post(approvals::decide))
        .route("/console/audit", get(audit::page))
        .route("/console/audit/entries", get(audit::entries))
        .route("/console/sessions", get(sessions::page))
        .route(
            "/console/templates",
            get(templates::page).post(templates::create),
        )
        .route(
            "/console/templates/{id}",
            get(templates::show).post(templates::save),
        )
        .route("/console/templates/{id}/delete", post(templates::delete))
        .route("/console/sign-out", post(signin::sign_out))
        .layer(middleware::from_fn(guard::refuse_cross_site))
        .layer(middleware::from_fn(cookie::key_from_cookie));
    Router::new()
        .route("/console/sign-in", get(signin::page).post(signin::sign_in))
        .route("/console/assets/{file}", get(assets::serve))
        .merge(pages)
        .layer(middleware::from_fn(page::security_headers))
}
