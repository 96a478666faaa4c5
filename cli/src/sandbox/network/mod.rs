//! A sandbox's way out when it has no network of its own (`none`,
//! `allowlist`): the host's [`proxy`] on a per-sandbox unix socket,
//! allowing only the relay (always) and, for `allowlist`, the listed
//! domains ([`allow`]); inside, the [`bridge`] makes it a TCP proxy on the
//! sandbox's loopback.

pub mod allow;
pub mod bridge;
pub mod proxy;
