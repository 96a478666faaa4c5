//! A string that must never reach a log, an error message or `Debug` output.

use std::fmt;

/// Holds a token or API key. `Debug` and `Display` print a redaction marker;
/// the value is reachable only through [`Secret::expose`], which makes every
/// use greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `rnrt_…9f3a`: the prefix and the last four characters, for messages.
    pub fn hint(&self) -> String {
        let prefix = self.0.split_once('_').map(|(p, _)| p).unwrap_or("");
        let tail: String = self
            .0
            .chars()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if self.0.chars().count() < 12 {
            return "…".to_owned();
        }
        format!("{prefix}_…{tail}")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let secret = Secret::new("rnrt_supersecretvalue1234");
        for shown in [
            format!("{secret:?}"),
            format!("{secret}"),
            format!("{:?}", Some(&secret)),
        ] {
            assert!(!shown.contains("supersecret"), "{shown}");
            assert!(!shown.contains("1234"), "{shown}");
        }
        assert_eq!(secret.hint(), "rnrt_…1234");
        assert_eq!(Secret::new("short").hint(), "…");
    }
}
