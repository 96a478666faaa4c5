//! Cross-site request forgery: a console change (any method but GET and
//! HEAD) must come from a console page. Three checks, each enough alone
//! against a browser that sends it:
//!
//! * `Sec-Fetch-Site`, when sent, is `same-origin` (or `none`: typed by
//!   the person);
//! * `Origin`, when sent, names this relay's own host;
//! * the request carries the page's CSRF token ([`Csrf`]), as the form
//!   field `csrf` or the header `X-CSRF-Token`.
//!
//! `SameSite=Strict` alone is not enough: another port of the same host
//! is the same site to a browser.

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::cookie::Csrf;
use super::page::Failure;
use crate::http::MAX_BODY_BYTES;

/// The form field that carries the token.
pub const FIELD: &str = "csrf";
/// The header that carries it (htmx requests).
pub const HEADER: &str = "x-csrf-token";

pub async fn refuse_cross_site(request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    if let Err(why) = same_origin(request.headers()) {
        return refused(why);
    }
    // Not signed in: the handler sends the browser to the sign-in page.
    let Some(expected) = request.extensions().get::<Csrf>().cloned() else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let sent_header = parts
        .headers
        .get(HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let (sent, body) = match sent_header {
        Some(token) => (Some(token), body),
        None => {
            let Ok(bytes) = to_bytes(body, MAX_BODY_BYTES).await else {
                return Failure::new(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large")
                    .into_response();
            };
            let token = form_urlencoded::parse(&bytes)
                .find(|(name, _)| name == FIELD)
                .map(|(_, value)| value.into_owned());
            (token, Body::from(bytes))
        }
    };
    let matches = sent.is_some_and(|sent| bool::from(sent.as_bytes().ct_eq(expected.0.as_bytes())));
    if !matches {
        return refused("the form did not carry this page's CSRF token");
    }
    next.run(Request::from_parts(parts, body)).await
}

/// Whether the browser says the request comes from a page of this relay.
pub fn same_origin(headers: &HeaderMap) -> Result<(), &'static str> {
    if let Some(site) = headers.get("sec-fetch-site") {
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return Err("the browser says the request came from another site");
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).map(|host| host.as_bytes());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|origin| origin.split_once("://"))
            .map(|(_, authority)| authority.as_bytes());
        if origin_host.is_none() || origin_host != host {
            return Err("the request came from a page of another origin");
        }
    }
    Ok(())
}

fn refused(why: &str) -> Response {
    tracing::warn!(reason = why, "console: a cross-site request was refused");
    Failure::new(
        StatusCode::FORBIDDEN,
        format!("Refused: {why}. Reload the console page and try again."),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_the_relays_own_origin_passes() {
        assert!(same_origin(&headers(&[("host", "relay:8080")])).is_ok());
        assert!(same_origin(&headers(&[
            ("host", "relay:8080"),
            ("origin", "http://relay:8080"),
            ("sec-fetch-site", "same-origin"),
        ]))
        .is_ok());
        assert!(same_origin(&headers(&[
            ("host", "relay:8080"),
            ("origin", "http://relay:9090"),
        ]))
        .is_err());
        assert!(same_origin(&headers(&[("host", "relay:8080"), ("origin", "null")])).is_err());
        assert!(same_origin(&headers(&[
            ("host", "relay:8080"),
            ("sec-fetch-site", "same-site"),
        ]))
        .is_err());
    }
}
