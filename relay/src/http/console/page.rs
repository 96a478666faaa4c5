//! What every console page shares: the signed-in member ([`Signed`]), the
//! page frame's data ([`Chrome`]), rendering, error pages ([`Failure`])
//! and the security headers of every answer.

use std::sync::Arc;

use askama::Template;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};

use super::cookie::Csrf;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::state::AppState;
use crate::store::Member;

/// Scripts and styles only from the relay itself, no inline code, no
/// framing, forms only to the relay.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

pub async fn security_headers(request: Request, next: Next) -> Response {
    let is_asset = request.uri().path().starts_with("/console/assets/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let fixed: [(HeaderName, &'static str); 4] = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // `same-origin`: with `no-referrer` browsers send `Origin: null` on
        // the console's own forms, which the cross-site check refuses.
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !is_asset {
        // Pages show tokens and calls: never kept by a browser or a proxy.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The member a console request is signed in as, and the CSRF token its
/// forms carry. Not signed in (or a revoked key): the browser is sent to
/// the sign-in page.
pub struct Signed {
    pub member: Arc<Member>,
    pub csrf: Csrf,
}

impl FromRequestParts<AppState> for Signed {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Failure> {
        // htmx follows a redirect inside its request and would swap the
        // sign-in page into the part it refreshes: it is told instead.
        let by_htmx = parts.headers.contains_key("hx-request");
        // After signing in, a person lands where they were going (an
        // approval's link from a chat, say); a page's refresh is not that.
        let back = (!by_htmx && parts.method == axum::http::Method::GET)
            .then(|| {
                parts
                    .uri
                    .path_and_query()
                    .map(|path| path.as_str().to_owned())
            })
            .flatten();
        let Some(csrf) = parts.extensions.get::<Csrf>().cloned() else {
            return Err(Failure::sign_in().for_htmx(by_htmx).back_to(back));
        };
        let Caller(member) = Caller::from_request_parts(parts, state)
            .await
            .map_err(|error| Failure::from(error).for_htmx(by_htmx).back_to(back))?;
        Ok(Self { member, csrf })
    }
}

/// The console's sections, for the navigation bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Environments,
    Templates,
    Sessions,
    Approvals,
    Audit,
    Playground,
}

/// What the page frame shows: who is signed in, the navigation, the CSRF
/// token for forms.
pub struct Chrome {
    pub member: String,
    pub role: &'static str,
    pub csrf: String,
    pub section: Section,
}

impl Section {
    pub fn name(self) -> &'static str {
        match self {
            Self::Environments => "environments",
            Self::Templates => "templates",
            Self::Sessions => "sessions",
            Self::Approvals => "approvals",
            Self::Audit => "audit",
            Self::Playground => "playground",
        }
    }
}

impl Chrome {
    /// `aria-current` for the navigation link to `section`.
    pub fn current(&self, section: &str) -> &'static str {
        if self.section.name() == section {
            "page"
        } else {
            "false"
        }
    }

    pub fn htmx(&self) -> &'static str {
        super::assets::HTMX_PATH
    }

    pub fn style(&self) -> &'static str {
        super::assets::STYLE_PATH
    }

    pub fn script(&self) -> &'static str {
        super::assets::SCRIPT_PATH
    }
}

impl Signed {
    pub fn chrome(&self, section: Section) -> Chrome {
        let role = match (self.member.is_admin, self.member.kind) {
            (_, crate::store::MemberKind::Agent) => "agent",
            (true, _) => "admin",
            (false, _) => "member",
        };
        Chrome {
            member: self.member.name.clone(),
            role,
            csrf: self.csrf.0.clone(),
            section,
        }
    }
}

/// Whether `path` is a console page of this relay, safe to send a browser
/// to after signing in (never another site: no scheme, no `//`, no `\`).
pub fn is_console_path(path: &str) -> bool {
    path.starts_with("/console/")
        && !path.starts_with("/console/sign-in")
        && !path.contains("//")
        && !path.contains('\\')
        && path.bytes().all(|byte| byte.is_ascii_graphic())
}

/// A template rendered into an answer.
pub fn render(template: &impl Template) -> Result<Html<String>, Failure> {
    template.render().map(Html).map_err(|error| {
        tracing::error!(%error, "console: a template failed to render");
        Failure::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error; see the relay's log",
        )
    })
}

/// An error page (or, for a request that is not signed in, the way to the
/// sign-in page).
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    message: String,
    /// Answering an htmx request: a sign-in is asked for with
    /// `HX-Redirect` alone.
    htmx: bool,
    /// The console page to return to after signing in.
    back: Option<String>,
}

#[derive(Template)]
#[template(path = "console/error.html")]
struct ErrorPage<'a> {
    assets: super::assets::Assets,
    status: u16,
    reason: &'a str,
    message: &'a str,
}

impl Failure {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            htmx: false,
            back: None,
        }
    }

    fn back_to(mut self, back: Option<String>) -> Self {
        self.back = back.filter(|path| is_console_path(path));
        self
    }

    fn for_htmx(mut self, htmx: bool) -> Self {
        self.htmx = htmx;
        self
    }

    pub fn sign_in() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "sign in first")
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        Self::new(error.status, error.message)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        if self.status == StatusCode::UNAUTHORIZED {
            if self.htmx {
                // htmx loads this page in full.
                return (
                    StatusCode::UNAUTHORIZED,
                    [("hx-redirect", HeaderValue::from_static("/console/sign-in"))],
                )
                    .into_response();
            }
            let target = match &self.back {
                Some(back) => format!(
                    "/console/sign-in?next={}",
                    form_urlencoded::byte_serialize(back.as_bytes()).collect::<String>()
                ),
                None => "/console/sign-in".to_owned(),
            };
            return Redirect::to(&target).into_response();
        }
        let page = ErrorPage {
            assets: super::assets::Assets,
            status: self.status.as_u16(),
            reason: self.status.canonical_reason().unwrap_or("Error"),
            message: &self.message,
        };
        match page.render() {
            Ok(html) => (self.status, Html(html)).into_response(),
            Err(_) => (self.status, self.message).into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_console_path;

    #[test]
    fn only_console_pages_of_this_relay_are_places_to_return_to() {
        assert!(is_console_path("/console/approvals/apr_1"));
        assert!(is_console_path("/console/environments?tag=gpu"));
        for elsewhere in [
            "https://evil.example/console/x",
            "//evil.example/console/",
            "/console//evil.example",
            "/console/\\evil.example",
            "/execution-environments",
            "/console/sign-in?next=/console/x",
            "/console/a b",
            "",
        ] {
            assert!(!is_console_path(elsewhere), "{elsewhere}");
        }
    }
}
