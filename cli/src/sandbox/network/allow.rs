//! Which destinations a sandbox's proxy lets through.

use std::net::IpAddr;

/// The relay's `host:port` (always), and the allowed domains.
#[derive(Debug, Clone)]
pub struct Allow {
    relay_host: String,
    relay_port: u16,
    /// Lowercase, without a leading `*.` or `.`.
    domains: Vec<String>,
}

impl Allow {
    pub fn new(relay_host: &str, relay_port: u16, domains: &[String]) -> Allow {
        Allow {
            relay_host: normalise(relay_host),
            relay_port,
            domains: domains
                .iter()
                .map(|domain| normalise(domain.trim().trim_start_matches("*.")))
                .filter(|domain| !domain.is_empty())
                .collect(),
        }
    }

    /// Whether `host:port` may be reached: the relay exactly, or a name
    /// that is a listed domain or one of its subdomains (any port). An IP
    /// literal never matches a domain.
    pub fn permits(&self, host: &str, port: u16) -> bool {
        let host = normalise(host);
        if host == self.relay_host && port == self.relay_port {
            return true;
        }
        if is_ip_literal(&host) {
            return false;
        }
        self.domains
            .iter()
            .any(|domain| host == *domain || host.ends_with(&format!(".{domain}")))
    }
}

fn normalise(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

fn is_ip_literal(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_match_exactly_or_as_a_parent_and_ips_never() {
        let allow = Allow::new(
            "127.0.0.1",
            7700,
            &["Example.test".into(), "*.pkg.dev".into()],
        );
        assert!(allow.permits("127.0.0.1", 7700));
        assert!(!allow.permits("127.0.0.1", 7701));
        assert!(allow.permits("example.test", 443));
        assert!(allow.permits("a.b.EXAMPLE.test.", 80));
        assert!(allow.permits("x.pkg.dev", 1));
        assert!(!allow.permits("badexample.test", 443));
        assert!(!allow.permits("example.test.evil", 443));
        assert!(!allow.permits("93.184.216.34", 443));
        assert!(!allow.permits("[::1]", 7700));
        let none = Allow::new("relay.test", 443, &[]);
        assert!(none.permits("relay.test", 443));
        assert!(!none.permits("relay.test", 80));
    }
}
