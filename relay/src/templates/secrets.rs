//! Whether a template variable looks like a secret: its name says so, or
//! its value has the shape of a well-known credential. Only a warning: the
//! template is saved either way, but its users can read every value.

/// Words in a variable's name that mark a secret (compared uppercased).
const SECRET_WORDS: [&str; 5] = ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY"];

/// Prefixes of well-known credentials, with what they are.
const KNOWN_PREFIXES: [(&str, &str); 20] = [
    ("ghp_", "a GitHub personal access token"),
    ("gho_", "a GitHub OAuth token"),
    ("ghu_", "a GitHub user-to-server token"),
    ("ghs_", "a GitHub server-to-server token"),
    ("ghr_", "a GitHub refresh token"),
    ("github_pat_", "a GitHub fine-grained token"),
    ("glpat-", "a GitLab personal access token"),
    ("sk-ant-", "an Anthropic API key"),
    ("sk-", "an OpenAI-style API key"),
    ("xoxb-", "a Slack bot token"),
    ("xoxp-", "a Slack user token"),
    ("xapp-", "a Slack app token"),
    ("AKIA", "an AWS access key id"),
    ("ASIA", "an AWS temporary access key id"),
    ("AIza", "a Google API key"),
    ("npm_", "an npm token"),
    ("pypi-", "a PyPI token"),
    ("hf_", "a Hugging Face token"),
    ("rnrk_", "a runner API key"),
    ("rnrt_", "a runner registration token"),
];

/// Shortest value a prefix rule applies to: `sk-` alone, or a word like
/// `hf_home`, is no credential.
const MIN_CREDENTIAL_CHARS: usize = 16;

/// Why `name=value` looks like a secret, or `None`.
pub fn looks_secret(name: &str, value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if let Some(what) = known_format(value) {
        return Some(format!("the value of {name} looks like {what}"));
    }
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS
        .iter()
        .find(|word| upper.contains(*word))
        .map(|word| format!("the name {name} contains {word}"))
}

/// What kind of credential `value` looks like.
fn known_format(value: &str) -> Option<&'static str> {
    let value = value.trim();
    if value.contains("-----BEGIN") && value.contains("PRIVATE KEY") {
        return Some("a private key");
    }
    if url_with_password(value) {
        return Some("a URL with a password");
    }
    if is_jwt(value) {
        return Some("a JSON Web Token");
    }
    let credential_shaped = value.len() >= MIN_CREDENTIAL_CHARS
        && !value.contains(char::is_whitespace)
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+' | '='));
    if !credential_shaped {
        return None;
    }
    KNOWN_PREFIXES
        .iter()
        .find(|(prefix, _)| value.starts_with(prefix))
        .map(|(_, what)| *what)
}

/// `scheme://user:password@host…`.
fn url_with_password(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.rsplit_once('@').is_some_and(|(user_info, _)| {
        user_info
            .split_once(':')
            .is_some_and(|(_, pw)| !pw.is_empty())
    })
}

/// Three base64url parts, the first a JSON header (`eyJ` is `{"`).
fn is_jwt(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 3
        && value.starts_with("eyJ")
        && parts.iter().all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_known_formats_are_flagged() {
        for (name, value) in [
            ("GITHUB_TOKEN", "x"),
            ("db_password", "hunter2"),
            ("API_KEY", "abc"),
            ("CLIENT_SECRET", "abc"),
            ("GH", "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            ("AWS_ID", "AKIAIOSFODNN7EXAMPLE"),
            ("OPENAI", "sk-proj-0123456789abcdef0123"),
            ("DATABASE_URL", "postgres://app:s3cret@db:5432/app"),
            (
                "PEM",
                "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
            ),
            ("ID", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"),
        ] {
            assert!(looks_secret(name, value).is_some(), "{name}={value}");
        }
    }

    #[test]
    fn plain_configuration_is_not_flagged() {
        for (name, value) in [
            ("PATH", "/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
            ("API_KEY", ""),
            ("DATABASE_URL", "postgres://app@db:5432/app"),
            ("HOME_URL", "https://example.com/a:b@c"),
            ("MODE", "sk-"),
            ("HF_HOME", "/cache/huggingface"),
            ("NOTE", "ask-me later"),
        ] {
            assert_eq!(looks_secret(name, value), None, "{name}={value}");
        }
    }
}
