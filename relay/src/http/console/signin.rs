//! Signing in (an API key, or a one-time link's code) and out.

use askama::Template;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::assets::Assets;
use super::cookie;
use super::guard;
use super::page::{render, Failure};
use crate::http::auth::Caller;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage<'a> {
    assets: Assets,
    error: Option<&'a str>,
}

pub async fn page() -> Result<Response, Failure> {
    Ok(render(&SignInPage {
        assets: Assets,
        error: None,
    })?
    .into_response())
}

#[derive(Debug, Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    key: String,
    #[serde(default)]
    code: String,
}

pub async fn sign_in(
    State(state): State<AppState>,
    mut parts: Parts,
    Form(form): Form<SignInForm>,
) -> Result<Response, Failure> {
    // A forged sign-in would put the browser in someone else's account.
    if let Err(why) = guard::same_origin(&parts.headers) {
        return Err(Failure::new(
            StatusCode::FORBIDDEN,
            format!("Refused: {why}."),
        ));
    }
    let key = if form.code.trim().is_empty() {
        form.key.trim().to_owned()
    } else {
        match state
            .console
            .links
            .redeem(form.code.trim(), state.clock.now())
        {
            Some(key) => key.expose().to_owned(),
            None => {
                return refused(
                    "This sign-in link was used already or has expired. Sign in with an API key.",
                );
            }
        }
    };
    if key.is_empty() {
        return refused("Paste an API key (rnrk_…).");
    }
    let bearer = match HeaderValue::from_str(&format!("Bearer {key}")) {
        Ok(value) if cookie::well_formed(&key) => value,
        _ => return refused("That is not an API key: they start with rnrk_."),
    };
    // The API's own check, so a failed sign-in is counted and audited
    // like any request with a bad key.
    parts.headers.insert(header::AUTHORIZATION, bearer);
    if Caller::from_request_parts(&mut parts, &state)
        .await
        .is_err()
    {
        return refused(
            "That API key is not valid on this relay (revoked, or from another relay).",
        );
    }
    let Some(set_cookie) = cookie::set(&key, state.console.secure_cookie) else {
        return refused("That is not an API key: they start with rnrk_.");
    };
    let mut response = Redirect::to("/console/environments").into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, set_cookie);
    Ok(response)
}

fn refused(message: &str) -> Result<Response, Failure> {
    let html = render(&SignInPage {
        assets: Assets,
        error: Some(message),
    })?;
    Ok((StatusCode::UNAUTHORIZED, html).into_response())
}

pub async fn sign_out(State(state): State<AppState>) -> Response {
    let mut response = Redirect::to("/console/sign-in").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        cookie::clear(state.console.secure_cookie),
    );
    response
}
