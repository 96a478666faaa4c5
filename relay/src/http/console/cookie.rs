//! The console's session cookie: the member's API key, `HttpOnly` (no
//! script reads it), `SameSite=Strict`, scoped to `/console` (the API never
//! receives it), `Secure` when the relay is reached over TLS.
//!
//! The cookie holds the key itself rather than a server-side session id,
//! so that any relay of a cluster serves any console request and revoking
//! the key signs every browser out at once (docs/console.md).
//!
//! Cookie headers are read and written here by hand: one name, one value
//! of URL-safe characters, and fixed attributes need no cookie library.

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};

use crate::secret::API_KEY_PREFIX;

/// The cookie's name.
pub const NAME: &str = "runner_console";
/// How long a sign-in lasts.
pub const MAX_AGE_S: u64 = 12 * 60 * 60;

/// The CSRF token of the signed-in member's pages: derived from the key,
/// so a page of another site (which cannot read the cookie) cannot know it,
/// and every relay of a cluster derives the same one.
#[derive(Clone, PartialEq, Eq)]
pub struct Csrf(pub String);

impl std::fmt::Debug for Csrf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Csrf(…)")
    }
}

impl Csrf {
    pub fn of(key: &str) -> Self {
        let digest = Sha256::new()
            .chain_update(b"runner-console-csrf\0")
            .chain_update(key.as_bytes())
            .finalize();
        Self(hex::encode(&digest[..16]))
    }
}

/// The API key in a request's console cookie, if it holds one of the
/// right shape.
pub fn key(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == NAME)
        .map(|(_, value)| value)
        .filter(|value| well_formed(value))
}

/// Whether `key` looks like an API key and is safe in a cookie value.
pub fn well_formed(key: &str) -> bool {
    key.starts_with(API_KEY_PREFIX)
        && key.len() <= 128
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// `Set-Cookie` for a signed-in browser.
pub fn set(key: &str, secure: bool) -> Option<HeaderValue> {
    if !well_formed(key) {
        return None;
    }
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{NAME}={key}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={MAX_AGE_S}{secure}"
    ))
    .ok()
}

/// `Set-Cookie` that signs a browser out.
pub fn clear(secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{NAME}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("runner_console=; Path=/console; Max-Age=0"))
}

/// Console pages authenticate with the cookie and nothing else: its key
/// becomes the request's bearer credential for the API's extractor, and
/// any `Authorization` header the browser sent is dropped.
pub async fn key_from_cookie(mut request: Request, next: Next) -> Response {
    let found = key(request.headers()).map(|key| {
        (
            HeaderValue::from_str(&format!("Bearer {key}")),
            Csrf::of(key),
        )
    });
    let headers = request.headers_mut();
    headers.remove(header::AUTHORIZATION);
    if let Some((Ok(mut bearer), csrf)) = found {
        bearer.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, bearer);
        request.extensions_mut().insert(csrf);
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    #[test]
    fn the_key_is_found_among_other_cookies_and_only_in_its_shape() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; runner_console=rnrk_abc-DEF_9; b=2"),
        );
        assert_eq!(key(&headers), Some("rnrk_abc-DEF_9"));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("runner_console=rnrk_a\"b"),
        );
        assert_eq!(key(&headers), None);
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("runner_console=other"),
        );
        assert_eq!(key(&headers), None);
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_under_tls() {
        let plain = set("rnrk_x", false).expect("a key makes a cookie");
        let plain = plain.to_str().expect("ASCII");
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        let secure = set("rnrk_x", true).expect("a key makes a cookie");
        assert!(secure.to_str().expect("ASCII").ends_with("; Secure"));
        assert!(set("rnrk_x; Path=/", false).is_none());
    }

    #[test]
    fn csrf_tokens_differ_per_key_and_never_show_the_key() {
        let a = Csrf::of("rnrk_one");
        assert_eq!(a, Csrf::of("rnrk_one"));
        assert_ne!(a, Csrf::of("rnrk_two"));
        assert!(!a.0.contains("rnrk"));
        assert_eq!(format!("{a:?}"), "Csrf(…)");
    }
}
