//! Where a request came from, for the audit log: the API key that
//! authenticated it (as a non-secret id), the client's name and the peer
//! address.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use runner_proto::audit::AuditActor;

use crate::audit::{client_name, PendingAudit, Text};
use crate::peer::PeerAddr;
use crate::store::Member;

/// Hex digits of a key's stored SHA-256 that name it in the audit log:
/// enough to tell a member's keys apart, and only a digest of a 256-bit
/// random key (nothing to guess from).
pub const KEY_ID_HEX: usize = 12;

/// The authenticated key's id, left in the request by
/// [`super::auth::Caller`].
#[derive(Debug, Clone)]
pub struct KeyId(pub Arc<str>);

/// The id of the key whose stored hash is `hash`.
pub fn key_id(hash: &str) -> Arc<str> {
    Arc::from(hash.get(..KEY_ID_HEX).unwrap_or(hash))
}

/// An address as text, as `Display` writes it.
fn ip_text(ip: IpAddr) -> String {
    let mut text = String::with_capacity(15);
    push_ip(&mut text, ip);
    text
}

/// Appends an address as `Display` writes it. An IPv4 address, the usual
/// peer, is written without the formatting machinery, which costs more
/// than the rest of its audit entry's origin.
fn push_ip(text: &mut String, ip: IpAddr) {
    let IpAddr::V4(v4) = ip else {
        use std::fmt::Write;
        // Writing into a `String` cannot fail.
        let _ = write!(text, "{ip}");
        return;
    };
    let mut digits = itoa::Buffer::new();
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            text.push('.');
        }
        text.push_str(digits.format(octet));
    }
}

/// Extractor: see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub key_id: Option<Arc<str>>,
    pub client: Option<String>,
    /// The peer's address (written as text into the entry).
    pub source: Option<IpAddr>,
}

impl Origin {
    /// What a request's parts say.
    pub fn of(parts: &Parts) -> Self {
        let peer = parts
            .extensions
            .get::<ConnectInfo<PeerAddr>>()
            .map(|ConnectInfo(PeerAddr(addr))| *addr);
        Self {
            // Left by the `Caller` extractor, which handlers take first.
            key_id: parts.extensions.get::<KeyId>().map(|KeyId(id)| id.clone()),
            ..Self::unauthenticated(&parts.headers, peer)
        }
    }

    /// What a request's headers and peer address say, before (or without)
    /// an API key: a runner's connect, a failed authentication.
    pub fn unauthenticated(headers: &HeaderMap, peer: Option<std::net::SocketAddr>) -> Self {
        Self {
            key_id: None,
            client: headers
                .get(header::USER_AGENT)
                // Borrowed when it is UTF-8; cleaned by `client_name` either way.
                .and_then(|value| client_name(&String::from_utf8_lossy(value.as_bytes()))),
            source: peer.map(|addr| addr.ip()),
        }
    }

    /// `member` acting from here. Takes the origin: its texts move into
    /// the actor instead of being copied, once for every call.
    pub fn actor(self, member: &Member) -> AuditActor {
        AuditActor {
            member_id: Some(member.id.clone()),
            name: Some(member.name.clone()),
            kind: Some(member.kind.as_str().to_owned()),
            key_id: self.key_id.as_deref().map(str::to_owned),
            client: self.client,
            source: self.source.map(ip_text),
        }
    }

    /// `member` acting from here, written into a call's entry.
    pub fn write_actor(&self, member: &Member, record: &mut PendingAudit) {
        record.set(Text::MemberId, &member.id);
        record.set(Text::Name, &member.name);
        record.set(Text::Kind, member.kind.as_str());
        record.set_optional(Text::KeyId, self.key_id.as_deref());
        record.set_optional(Text::Client, self.client.as_deref());
        if let Some(ip) = self.source {
            record.write(Text::Source, |text| push_ip(text, ip));
        }
    }

    /// Somebody not authenticated, from here (no key id: a key that did
    /// not authenticate may be anything, even a pasted password).
    pub fn anonymous(self) -> AuditActor {
        AuditActor {
            client: self.client,
            source: self.source.map(ip_text),
            ..AuditActor::default()
        }
    }
}

impl FromRequestParts<crate::state::AppState> for Origin {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &crate::state::AppState,
    ) -> Result<Self, Infallible> {
        // Read only for the audit log: with it off, nothing would use it.
        if !state.audit.enabled() {
            return Ok(Self::default());
        }
        Ok(Self::of(parts))
    }
}

/// An allowed `action` by `caller` from `origin`, now.
pub fn entry(
    state: &crate::state::AppState,
    origin: &Origin,
    caller: &Member,
    action: runner_proto::audit::AuditAction,
) -> crate::audit::AuditRecord {
    crate::audit::AuditRecord::new(state.clock.now(), origin.clone().actor(caller), action)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn addresses_read_as_display_writes_them() {
        for ip in [
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(0, 0, 0, 0)),
            IpAddr::V4(Ipv4Addr::new(255, 255, 255, 255)),
            IpAddr::V4(Ipv4Addr::new(10, 200, 3, 45)),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        ] {
            assert_eq!(ip_text(ip), ip.to_string());
        }
    }

    /// A call's entry (`write_actor`) and every other action's
    /// (`actor`) name the same actor.
    #[test]
    fn both_ways_of_writing_the_actor_agree() {
        let member = Member {
            id: "mem_1".to_owned(),
            name: "Ada".to_owned(),
            is_admin: false,
            teams: Vec::new(),
            kind: crate::store::MemberKind::Agent,
            default_environment: None,
        };
        for origin in [
            Origin {
                key_id: Some(Arc::from("0123456789ab")),
                client: Some("curl/8".to_owned()),
                source: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7))),
            },
            Origin {
                source: Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
                ..Origin::default()
            },
            Origin::default(),
        ] {
            let mut pending = PendingAudit::new(
                time::OffsetDateTime::UNIX_EPOCH,
                runner_proto::audit::AuditAction::ToolInvoke,
            );
            origin.write_actor(&member, &mut pending);
            let view = pending.view();
            let written = AuditActor {
                member_id: view.member_id.map(str::to_owned),
                name: view.name.map(str::to_owned),
                kind: view.kind.map(str::to_owned),
                key_id: view.key_id.map(str::to_owned),
                client: view.client.map(str::to_owned),
                source: view.source.map(str::to_owned),
            };
            assert_eq!(written, origin.actor(&member));
        }
    }
}
