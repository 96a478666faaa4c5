//! HTTP client for the relay's API, shared by the admin commands.
//!
//! Every relay error answer (`{"error":{"code","message"}}`) becomes an
//! [`ExitError`] whose exit code follows the HTTP status, so each command
//! gets the documented exit codes without handling them itself.

use std::time::Duration;

use anyhow::{Context, Result};
use reqwest::{Method, StatusCode};
use runner_proto::api::{Environment, EnvironmentList, ErrorBody};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::args::ApiArgs;
use crate::config::{ConfigFile, Dirs};
use crate::credentials::{self, SecretKind};
use crate::env_vars;
use crate::exit::{self, ExitError};
use crate::secret::Secret;

/// Time to establish a TCP/TLS connection to the relay.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for an ordinary (non-invoke) API request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An authenticated client for one relay.
pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    api_key: Secret,
}

impl ApiClient {
    /// URL: `--url`/RUNNER_URL, else the one from `runner login`.
    /// Key: RUNNER_API_KEY, else the stored one.
    pub async fn from_args(dirs: &Dirs, api: &ApiArgs) -> Result<ApiClient> {
        let config = ConfigFile::load(dirs)?;
        let url = match (&api.url, &config.login) {
            (Some(url), _) => url.clone(),
            (None, Some(login)) => login.url.clone(),
            (None, None) => {
                return Err(ExitError::new(exit::CONFIG, "no relay URL")
                    .with_hint("pass --url, set RUNNER_URL, or run `runner login --url URL`")
                    .into())
            }
        };
        let api_key = match std::env::var(env_vars::API_KEY) {
            Ok(key) if !key.trim().is_empty() => Secret::new(key.trim()),
            _ => match &config.login {
                Some(login) => {
                    credentials::load(dirs, SecretKind::ApiKey, login.api_key_location).await?
                }
                None => {
                    return Err(ExitError::new(exit::CONFIG, "no API key")
                        .with_hint("set RUNNER_API_KEY or run `runner login --url URL`")
                        .into())
                }
            },
        };
        ApiClient::new(&url, api_key)
    }

    pub fn new(url: &str, api_key: Secret) -> Result<ApiClient> {
        Ok(ApiClient {
            http: http_client()?,
            base: normalise_base_url(url)?,
            api_key,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Sends a request and decodes a JSON answer.
    pub async fn request<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        timeout: Duration,
    ) -> Result<T> {
        let url = format!("{}{}", self.base, path);
        let mut request = self
            .http
            .request(method.clone(), &url)
            .bearer_auth(self.api_key.expose())
            .timeout(timeout);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|error| unreachable(&url, &error))?;
        decode(response, &url).await
    }

    /// The full URL of an API path on this relay.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends a JSON request and returns the relay's response whatever its
    /// status, or the transport error as it is: for a caller that decides
    /// itself what a lost connection means (`runner invoke` asks again).
    pub async fn send<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        body: &B,
        accept: &str,
        timeout: Duration,
    ) -> Result<reqwest::Response, reqwest::Error> {
        self.http
            .request(method, self.url(path))
            .bearer_auth(self.api_key.expose())
            .header(reqwest::header::ACCEPT, accept)
            .timeout(timeout)
            .json(body)
            .send()
            .await
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.request::<(), T>(Method::GET, path, None, REQUEST_TIMEOUT)
            .await
    }

    /// Finds an environment by id, or else by exact name.
    pub async fn resolve_env(&self, id_or_name: &str) -> Result<Environment> {
        // An id is one request; only names need the whole list.
        if id_or_name.starts_with("env_") {
            match self
                .get::<Environment>(&format!("/execution-environments/{id_or_name}"))
                .await
            {
                Ok(found) => return Ok(found),
                Err(error)
                    if error.downcast_ref::<ExitError>().map(|e| e.code)
                        == Some(exit::NOT_FOUND) => {}
                Err(error) => return Err(error),
            }
        }
        let list: EnvironmentList = self.get("/execution-environments").await?;
        if let Some(found) = list.environments.iter().find(|env| env.id == id_or_name) {
            return Ok(found.clone());
        }
        let mut named = list
            .environments
            .into_iter()
            .filter(|env| env.name == id_or_name);
        match (named.next(), named.next()) {
            (Some(found), None) => Ok(found),
            (Some(_), Some(_)) => Err(ExitError::new(
                exit::BAD_REQUEST,
                format!("several environments are named {id_or_name:?}"),
            )
            .with_hint("use the environment id (see `runner env list`)")
            .into()),
            (None, _) => Err(ExitError::new(
                exit::NOT_FOUND,
                format!("no environment {id_or_name:?} (by id or name) that you can see"),
            )
            .with_hint("`runner env list` shows the ones you can use")
            .into()),
        }
    }
}

/// The one reqwest client configuration (rustls, timeouts, user agent).
pub fn http_client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .use_preconfigured_tls(crate::tls::client_config().as_ref().clone())
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the HTTP client")
}

/// `https://relay.example.com/` → `https://relay.example.com`; refuses
/// anything that is not http(s).
/// The relay URL of a command whose only sources are `--url` and
/// RUNNER_URL (`register`, `login`). The flag is optional to clap, so its
/// usage line does not show as required what the environment may give;
/// given neither way, this usage error names both.
pub fn given_url(url: Option<&str>) -> Result<&str> {
    url.map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or_else(|| {
            ExitError::new(exit::USAGE, "no relay URL given")
                .with_hint(format!("pass --url URL or set {}", env_vars::URL))
                .into()
        })
}

pub fn normalise_base_url(url: &str) -> Result<String> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|error| {
        ExitError::new(
            exit::BAD_REQUEST,
            format!("relay URL {url:?} is not valid: {error}"),
        )
        .with_hint("use the form https://relay.example.com")
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ExitError::new(
            exit::BAD_REQUEST,
            format!("relay URL {url:?} must start with http:// or https://"),
        )
        .into());
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// An unreachable-relay error naming the URL and the whole cause chain
/// (the TLS reason is deep in it).
pub fn unreachable(url: &str, error: &reqwest::Error) -> anyhow::Error {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    ExitError::new(
        exit::UNREACHABLE,
        format!("{what}: {url}: {}", error_chain(error)),
    )
    .with_hint("check the URL and that the relay is running (`runner doctor` explains more)")
    .into()
}

/// `error: cause: cause…` on one line.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Decodes a success body, or turns an error answer into an [`ExitError`].
pub async fn decode<T: DeserializeOwned>(response: reqwest::Response, url: &str) -> Result<T> {
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|error| unreachable(url, &error))?;
    if status.is_success() {
        // 204 and other empty answers decode as JSON null.
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        return serde_json::from_slice(bytes).with_context(|| {
            format!("the relay's answer from {url} is not what this runner version expects")
        });
    }
    Err(status_error(status, &bytes).into())
}

/// `path?name=value&…` with each given value form-encoded (names, ids and
/// times a user typed may hold anything); absent values are left out.
pub fn with_query(path: &str, pairs: &[(&str, Option<&str>)]) -> Result<String> {
    // Only for its query encoder: the client adds the relay's address.
    let mut url = reqwest::Url::parse("http://relay").context("building the query")?;
    url.set_path(path);
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in pairs {
            if let Some(value) = value {
                query.append_pair(name, value);
            }
        }
    }
    Ok(match url.query().filter(|query| !query.is_empty()) {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    })
}

/// Maps an HTTP error answer to an exit code and a message that says what to do.
pub fn status_error(status: StatusCode, body: &[u8]) -> ExitError {
    let detail = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error);
    let message = detail
        .as_ref()
        .map(|d| d.message.clone())
        .unwrap_or_else(|| format!("the relay answered {status}"));
    let call_id = detail.as_ref().and_then(|d| d.call_id.clone());
    let (code, hint) = match status {
        StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY | StatusCode::CONFLICT => {
            (exit::BAD_REQUEST, None)
        }
        StatusCode::UNAUTHORIZED => (
            exit::UNAUTHORIZED,
            Some("check RUNNER_API_KEY or run `runner login` again".to_owned()),
        ),
        StatusCode::FORBIDDEN => (
            exit::FORBIDDEN,
            match detail.as_ref().map(|detail| detail.code.as_str()) {
                Some("approval_required") => Some(
                    "add --wait-approval to ask a person to approve this call, and wait".to_owned(),
                ),
                Some("approval_denied" | "approval_expired" | "not_an_approver") => None,
                Some("denied_by_runner_policy") => Some(
                    "the permission file on the runner's machine refused it; \
                     `runner policy check` there shows which rule"
                        .to_owned(),
                ),
                _ => Some(
                    "an admin can change the environment's policy (`runner env update`)".to_owned(),
                ),
            },
        ),
        StatusCode::NOT_FOUND => (exit::NOT_FOUND, None),
        StatusCode::GONE => (
            exit::NOT_FOUND,
            Some("start a new session: `runner session create`".to_owned()),
        ),
        StatusCode::SERVICE_UNAVAILABLE => (
            exit::NO_RUNNER,
            match (detail.as_ref().map(|detail| detail.code.as_str()), call_id) {
                (Some(runner_proto::api::RUNNER_DISCONNECTED), Some(id)) => Some(format!(
                    "call {id} failed when the runner's connection dropped; if the runner \
                     comes back with its result, `runner invoke … --call-id {id}` gets it \
                     (it is not run again)"
                )),
                _ => Some(
                    "start the runner on that machine (`runner run` or its service)".to_owned(),
                ),
            },
        ),
        StatusCode::GATEWAY_TIMEOUT => (
            exit::TIMEOUT,
            Some(match call_id {
                Some(id) => format!("call {id} was cancelled; raise --timeout if it needs longer"),
                None => "raise --timeout if the call needs longer".to_owned(),
            }),
        ),
        StatusCode::TOO_MANY_REQUESTS => (
            exit::RATE_LIMITED,
            Some(
                "too many failed attempts came from this address; wait a minute, and check \
                 the token or key (a valid one is never refused for this)"
                    .to_owned(),
            ),
        ),
        _ => (exit::UNREACHABLE, None),
    };
    let mut error = ExitError::new(code, message);
    error.hint = hint;
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_encoded_and_absent_values_left_out() {
        assert_eq!(
            with_query(
                "/approvals",
                &[
                    ("status", Some("pending")),
                    ("environment", Some("build box&x=1"))
                ]
            )
            .expect("query"),
            "/approvals?status=pending&environment=build+box%26x%3D1"
        );
        assert_eq!(
            with_query(
                "/approvals",
                &[("environment", Some("env_1.a-b")), ("x", None)]
            )
            .expect("query"),
            "/approvals?environment=env_1.a-b"
        );
        assert_eq!(
            with_query("/audit", &[("x", None)]).expect("query"),
            "/audit"
        );
    }

    #[test]
    fn base_urls_are_normalised_and_checked() {
        assert_eq!(
            normalise_base_url("http://127.0.0.1:7700/").expect("valid"),
            "http://127.0.0.1:7700"
        );
        assert!(normalise_base_url("ftp://x").is_err());
        assert!(normalise_base_url("not a url").is_err());
    }

    #[test]
    fn error_answers_map_to_documented_exit_codes() {
        let body = br#"{"error":{"code":"timeout","message":"timed out","call_id":"c-1"}}"#;
        let error = status_error(StatusCode::GATEWAY_TIMEOUT, body);
        assert_eq!(error.code, exit::TIMEOUT);
        assert!(error.hint.as_deref().unwrap_or("").contains("c-1"));
        assert_eq!(
            status_error(StatusCode::FORBIDDEN, b"").code,
            exit::FORBIDDEN
        );
        assert_eq!(
            status_error(StatusCode::SERVICE_UNAVAILABLE, b"x").code,
            exit::NO_RUNNER
        );
        assert_eq!(
            status_error(StatusCode::UNAUTHORIZED, b"{}").code,
            exit::UNAUTHORIZED
        );
    }
}
