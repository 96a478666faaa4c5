//! The destinations `http_local` refuses: link-local addresses, where cloud
//! instance metadata services answer (`169.254.169.254` hands out the
//! machine's cloud credentials), and the names of those services.
//!
//! A name is judged twice: by itself (`metadata.google.internal`), and by
//! every address it resolves to, in the resolver the HTTP client connects
//! with ([`GuardedResolver`]), so a name of anyone's choosing that resolves
//! to `169.254.169.254` is refused too, and the address checked is the one
//! connected to (no second lookup to race). Literal addresses in a URL
//! never reach a resolver, so [`check_url`] judges them before the request
//! and before each redirect is followed.
//!
//! `RUNNER_HTTP_ALLOW_LINK_LOCAL=true` in the runner's environment lifts
//! all of it, for a runner whose job is to talk to such services.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use crate::env_vars;

/// Host names of cloud metadata services (compared without a trailing dot,
/// case-insensitively).
const METADATA_NAMES: &[&str] = &[
    // Google Cloud.
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    // AWS.
    "instance-data",
    "instance-data.ec2.internal",
];

/// Metadata addresses outside the link-local ranges: AWS's IPv6 endpoint
/// and Alibaba Cloud's.
const METADATA_ADDRESSES: &[IpAddr] = &[
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
];

/// What `http_local` may reach.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// `RUNNER_HTTP_ALLOW_LINK_LOCAL=true`: nothing is refused.
    pub allow_link_local: bool,
    /// Tests only: names answered from this table instead of the system
    /// resolver (the answers are still judged).
    pub hosts: Option<Arc<HashMap<String, Vec<IpAddr>>>>,
}

impl Guard {
    /// The guard the runner's environment asks for.
    pub fn from_env() -> Guard {
        Guard {
            allow_link_local: allows(std::env::var(env_vars::HTTP_ALLOW_LINK_LOCAL).ok()),
            hosts: None,
        }
    }
}

/// Only an explicit yes lifts the guard; anything else keeps it.
fn allows(value: Option<String>) -> bool {
    matches!(
        value
            .as_deref()
            .map(str::trim)
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("true" | "1" | "yes")
    )
}

/// Why `address` is refused, or `None`.
pub fn refused_address(address: IpAddr) -> Option<&'static str> {
    if METADATA_ADDRESSES.contains(&address) {
        return Some("a cloud metadata address");
    }
    match address {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => {
            if (v6.segments()[0] & 0xffc0) == 0xfe80 {
                return Some("an IPv6 link-local address (fe80::/10)");
            }
            // IPv4 carried in IPv6 (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d,
            // NAT64 64:ff9b::a.b.c.d) reaches the IPv4 address.
            let segments = v6.segments();
            let embedded = if segments[..6] == [0, 0, 0, 0, 0, 0xffff]
                || segments[..6] == [0, 0, 0, 0, 0, 0]
                || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
            {
                let [.., a, b, c, d] = v6.octets();
                Some(Ipv4Addr::new(a, b, c, d))
            } else {
                None
            };
            embedded.and_then(|v4| {
                if METADATA_ADDRESSES.contains(&IpAddr::V4(v4)) {
                    Some("a cloud metadata address")
                } else {
                    refused_v4(v4)
                }
            })
        }
    }
}

fn refused_v4(address: Ipv4Addr) -> Option<&'static str> {
    if address == Ipv4Addr::new(169, 254, 169, 254) {
        Some("the cloud metadata address")
    } else if address.is_link_local() {
        Some("a link-local address (169.254.0.0/16)")
    } else {
        None
    }
}

/// True for the name of a cloud metadata service.
pub fn refused_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    METADATA_NAMES.contains(&host.as_str())
}

fn hint() -> String {
    format!(
        "set {}=true in the runner's environment to allow it",
        env_vars::HTTP_ALLOW_LINK_LOCAL
    )
}

/// Refuses `url` when its host is a metadata name or a refused literal
/// address. Names are judged again after resolution ([`GuardedResolver`]).
pub fn check_url(guard: &Guard, url: &reqwest::Url) -> Result<(), String> {
    if guard.allow_link_local {
        return Ok(());
    }
    // The URL parser has already normalised the host: IPv4 in any legacy
    // form (`http://2852039166/`) is dotted decimal, IPv6 is bracketed.
    let host = url.host_str().unwrap_or_default();
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>();
    let refusal = match literal {
        Ok(address) => refused_address(address).map(|why| format!("{address} is {why}")),
        Err(_) if refused_name(host) => Some(format!("{host:?} is a cloud metadata service name")),
        Err(_) => None,
    };
    match refusal {
        Some(refusal) => Err(format!("http_local refuses {url}: {refusal}; {}", hint())),
        None => Ok(()),
    }
}

/// The resolver of `http_local`'s client: the system's (or the test
/// table), and then a refusal when any answer is a refused address.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    guard: Guard,
}

impl GuardedResolver {
    pub fn new(guard: Guard) -> GuardedResolver {
        GuardedResolver { guard }
    }

    /// The addresses `name` may be connected at; an error naming the
    /// refused address otherwise.
    pub async fn lookup(&self, name: &str) -> Result<Vec<SocketAddr>, String> {
        if !self.guard.allow_link_local && refused_name(name) {
            return Err(format!(
                "{name:?} is a cloud metadata service name; {}",
                hint()
            ));
        }
        let addresses: Vec<SocketAddr> = match &self.guard.hosts {
            Some(hosts) => hosts
                .get(&name.trim_end_matches('.').to_ascii_lowercase())
                .map(|list| list.iter().map(|ip| SocketAddr::new(*ip, 0)).collect())
                .ok_or_else(|| format!("{name:?} is not in the test hosts table"))?,
            None => tokio::net::lookup_host((name, 0))
                .await
                .map_err(|error| format!("resolving {name:?}: {error}"))?
                .collect(),
        };
        if !self.guard.allow_link_local {
            // One refused answer refuses the name: a name that mixes a
            // metadata address in is not an honest local service.
            if let Some((address, why)) = addresses
                .iter()
                .find_map(|address| refused_address(address.ip()).map(|why| (address.ip(), why)))
            {
                return Err(format!("{name:?} resolves to {address}, {why}; {}", hint()));
            }
        }
        Ok(addresses)
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let resolver = self.clone();
        Box::pin(async move {
            let addresses = resolver.lookup(name.as_str()).await.map_err(
                |refusal| -> Box<dyn std::error::Error + Send + Sync> { refusal.into() },
            )?;
            let addresses: reqwest::dns::Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn link_local_and_metadata_addresses_are_refused_and_others_are_not() {
        for refused in [
            "169.254.169.254",
            "169.254.0.1",
            "169.254.255.255",
            "fd00:ec2::254",
            "fe80::1",
            "febf::1",
            "::ffff:169.254.169.254",
            "::169.254.169.254",
            "64:ff9b::169.254.169.254",
            "100.100.100.200",
        ] {
            assert!(refused_address(ip(refused)).is_some(), "{refused}");
        }
        for allowed in [
            "127.0.0.1",
            "10.0.0.1",
            "192.168.1.1",
            "169.253.255.255",
            "169.255.0.0",
            "::1",
            "fec0::1",
            "fd00:ec2::253",
            "fd00::254",
            "::ffff:127.0.0.1",
            "2001:db8::1",
        ] {
            assert!(refused_address(ip(allowed)).is_none(), "{allowed}");
        }
    }

    #[test]
    fn metadata_names_are_refused_in_any_case_and_with_a_trailing_dot() {
        assert!(refused_name("metadata.google.internal"));
        assert!(refused_name("Metadata.Google.Internal."));
        assert!(refused_name("instance-data"));
        assert!(!refused_name("metadata.example.com"));
        assert!(!refused_name("localhost"));
    }

    #[test]
    fn urls_with_refused_hosts_are_refused_unless_allowed() {
        let guard = Guard::default();
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/latest/meta-data/",
            "http://[fe80::1]:8080/",
            "http://[::ffff:169.254.169.254]/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://METADATA.google.internal./",
            "http://2852039166/",
            "http://0xa9fea9fe/",
        ] {
            let parsed = reqwest::Url::parse(url).expect("url");
            let refusal = check_url(&guard, &parsed).expect_err(url);
            assert!(
                refusal.contains("RUNNER_HTTP_ALLOW_LINK_LOCAL"),
                "{refusal}"
            );
            let allowing = Guard {
                allow_link_local: true,
                hosts: None,
            };
            check_url(&allowing, &parsed).expect("allowed");
        }
        let local = reqwest::Url::parse("http://127.0.0.1:8080/").expect("url");
        check_url(&guard, &local).expect("loopback is fine");
    }

    #[test]
    fn only_an_explicit_yes_lifts_the_guard() {
        assert!(allows(Some("true".into())));
        assert!(allows(Some(" TRUE ".into())));
        assert!(allows(Some("1".into())));
        assert!(!allows(None));
        assert!(!allows(Some("".into())));
        assert!(!allows(Some("false".into())));
        assert!(!allows(Some("ture".into())));
    }

    fn hosts(pairs: &[(&str, &[&str])]) -> Option<Arc<HashMap<String, Vec<IpAddr>>>> {
        Some(Arc::new(
            pairs
                .iter()
                .map(|(name, list)| ((*name).to_owned(), list.iter().map(|a| ip(a)).collect()))
                .collect(),
        ))
    }

    #[tokio::test]
    async fn a_name_resolving_to_the_metadata_address_is_refused_after_resolution() {
        let table = hosts(&[
            ("innocent.test", &["169.254.169.254"]),
            ("mixed.test", &["127.0.0.1", "fd00:ec2::254"]),
            ("local.test", &["127.0.0.1"]),
        ]);
        let resolver = GuardedResolver::new(Guard {
            allow_link_local: false,
            hosts: table.clone(),
        });
        let refusal = resolver.lookup("innocent.test").await.expect_err("refused");
        assert!(refusal.contains("resolves to 169.254.169.254"), "{refusal}");
        let refusal = resolver.lookup("mixed.test").await.expect_err("refused");
        assert!(refusal.contains("fd00:ec2::254"), "{refusal}");
        assert_eq!(
            resolver.lookup("local.test").await.expect("allowed"),
            vec![SocketAddr::new(ip("127.0.0.1"), 0)]
        );
        let refusal = resolver
            .lookup("metadata.google.internal")
            .await
            .expect_err("refused by name, before any lookup");
        assert!(refusal.contains("metadata service name"), "{refusal}");

        let allowing = GuardedResolver::new(Guard {
            allow_link_local: true,
            hosts: table,
        });
        assert_eq!(
            allowing.lookup("innocent.test").await.expect("allowed"),
            vec![SocketAddr::new(ip("169.254.169.254"), 0)]
        );
    }
}
