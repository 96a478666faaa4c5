//! The console's static files, compiled into the binary: htmx (pinned to
//! major version 2, docs/console.md says why), the style sheet and the one
//! small script. Their names carry the relay's version, so a browser may
//! keep them for a year and still never mixes two relays' files.

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// htmx 2.0.11 (`htmx.org` on npm, Zero-Clause BSD), unmodified.
const HTMX: &[u8] = include_bytes!("../../../assets/console/htmx-2.0.11.min.js");
const STYLE: &[u8] = include_bytes!("../../../assets/console/console.css");
const SCRIPT: &[u8] = include_bytes!("../../../assets/console/console.js");

/// The path of an asset in pages.
pub const HTMX_PATH: &str = concat!("/console/assets/htmx-", env!("CARGO_PKG_VERSION"), ".js");
pub const STYLE_PATH: &str = concat!(
    "/console/assets/console-",
    env!("CARGO_PKG_VERSION"),
    ".css"
);
pub const SCRIPT_PATH: &str = concat!("/console/assets/console-", env!("CARGO_PKG_VERSION"), ".js");

pub async fn serve(Path(file): Path<String>) -> Response {
    let path = format!("/console/assets/{file}");
    let (body, kind) = match path.as_str() {
        HTMX_PATH => (HTMX, "text/javascript; charset=utf-8"),
        STYLE_PATH => (STYLE, "text/css; charset=utf-8"),
        SCRIPT_PATH => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        body,
    )
        .into_response()
}

/// The asset paths, for templates without the page frame.
pub struct Assets;

impl Assets {
    pub fn style(&self) -> &'static str {
        STYLE_PATH
    }

    pub fn script(&self) -> &'static str {
        SCRIPT_PATH
    }
}
