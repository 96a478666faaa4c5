//! Signing in (an API key, or a one-time link's code) and out.

use askama::Template;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::assets::Assets;
use super::cookie;
use super::guard;
use super::page::{is_console_path, render, Failure};
use crate::http::auth::Caller;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage<'a> {
    assets: Assets,
    error: Option<&'a str>,
    /// Where to go once signed in.
    next: &'a str,
}

#[derive(Debug, Default, Deserialize)]
pub struct Next {
    #[serde(default)]
    next: String,
}

pub async fn page(Query(Next { next }): Query<Next>) -> Result<Response, Failure> {
    let next = if is_console_path(&next) {
        next.as_str()
    } else {
        ""
    };
    Ok(render(&SignInPage {
        assets: Assets,
        error: None,
        next,
    })?
    .into_response())
}

/// The sign-in form: it carries a key or a link's code, so its `Debug`
/// shows neither.
#[derive(Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    key: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    next: String,
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
                    &form.next,
                );
            }
        }
    };
    if key.is_empty() {
        return refused("Paste an API key (rnrk_…).", &form.next);
    }
    let mut bearer = match HeaderValue::from_str(&format!("Bearer {key}")) {
        Ok(value) if cookie::well_formed(&key) => value,
        _ => return refused("That is not an API key: they start with rnrk_.", &form.next),
    };
    // The API's own check, so a failed sign-in is counted and audited
    // like any request with a bad key.
    bearer.set_sensitive(true);
    parts.headers.insert(header::AUTHORIZATION, bearer);
    if Caller::from_request_parts(&mut parts, &state)
        .await
        .is_err()
    {
        return refused(
            "That API key is not valid on this relay (revoked, or from another relay).",
            &form.next,
        );
    }
    let Some(set_cookie) = cookie::set(&key, state.console.secure_cookie) else {
        return refused("That is not an API key: they start with rnrk_.", &form.next);
    };
    let target = if is_console_path(&form.next) {
        form.next.as_str()
    } else {
        "/console/environments"
    };
    let mut response = Redirect::to(target).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, set_cookie);
    Ok(response)
}

impl std::fmt::Debug for SignInForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInForm")
            .field("key", &"…")
            .field("code", &"…")
            .field("next", &self.next)
            .finish()
    }
}

fn refused(message: &str, next: &str) -> Result<Response, Failure> {
    let next = if is_console_path(next) { next } else { "" };
    let html = render(&SignInPage {
        assets: Assets,
        next,
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

#[cfg(test)]
mod tests {
    use super::SignInForm;

    #[test]
    fn the_forms_debug_shows_no_key_or_code() {
        let form = SignInForm {
            key: "rnrk_secretkey".to_owned(),
            code: "rnrl_secretcode".to_owned(),
            next: "/console/audit".to_owned(),
        };
        let shown = format!("{form:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("/console/audit"), "{shown}");
    }
}
