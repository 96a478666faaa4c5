//! The version of the relay-to-relay messages, so that relays of two
//! builds exchange calls during a rolling upgrade.
//!
//! * **1**: what builds before versions spoke. Messages carry no version,
//!   announcements name none, and a holder drops a request it cannot read
//!   (the caller gives up after [`super::ACK_TIMEOUT`]).
//! * **2**: every message carries [`HEADER`]; a holder stores the version
//!   it speaks in its session announcement, and a caller speaks the lower
//!   of its own and the holder's, so a newer relay never sends an older
//!   one what it cannot read. A holder answers a request of a version it
//!   does not speak with `refused` at once. A call without streamed
//!   output that ends within [`super::QUICK_ANSWER`] is answered with its
//!   result (`done`) instead of an acknowledgement and a second message
//!   to the caller's inbox.
//!
//! A version changes when a message changes meaning or shape in a way an
//! older relay would misread; a field an older relay ignores needs none.

use async_nats::HeaderMap;

/// The newest version this build speaks.
pub const RELAY_PROTOCOL: u32 = 2;
/// The oldest version this build still speaks (to relays of older builds).
pub const OLDEST_RELAY_PROTOCOL: u32 = 1;
/// The header that carries a message's version (absent: 1).
pub const HEADER: &str = "Runner-Relay-Protocol";

/// The version a message was sent in.
pub fn of(headers: Option<&HeaderMap>) -> Result<u32, String> {
    let Some(value) = headers.and_then(|headers| headers.get(HEADER)) else {
        return Ok(OLDEST_RELAY_PROTOCOL);
    };
    value
        .as_str()
        .parse::<u32>()
        .ok()
        .filter(|version| *version >= OLDEST_RELAY_PROTOCOL)
        .ok_or_else(|| format!("unreadable {HEADER} header {:?}", value.as_str()))
}

/// `headers` with the version of a message in `version` (version 1
/// messages carry none, as the builds that spoke it sent them).
pub fn stamp(headers: Option<HeaderMap>, version: u32) -> Option<HeaderMap> {
    if version <= OLDEST_RELAY_PROTOCOL {
        return headers;
    }
    let mut headers = headers.unwrap_or_default();
    headers.insert(HEADER, version.to_string().as_str());
    Some(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_without_the_header_is_version_1_and_stamps_round_trip() {
        assert_eq!(of(None), Ok(1));
        assert_eq!(of(Some(&HeaderMap::new())), Ok(1));
        assert!(stamp(None, 1).is_none(), "version 1 carries no header");
        let stamped = stamp(None, 2);
        assert_eq!(of(stamped.as_ref()), Ok(2));
        let mut bad = HeaderMap::new();
        bad.insert(HEADER, "two");
        assert!(of(Some(&bad)).is_err());
        let mut zero = HeaderMap::new();
        zero.insert(HEADER, "0");
        assert!(of(Some(&zero)).is_err());
    }
}
