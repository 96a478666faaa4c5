//! Messages larger than one NATS message: cut into numbered parts on the
//! way out, put back together on the way in.
//!
//! NATS refuses a message over the server's `max_payload` (1 MiB by
//! default), and tool arguments (`file_write` content) and results
//! (`file_read`, `shell` output) are routinely larger. The sender encodes
//! the whole message once, cuts the bytes into parts of [`part_size`] (half
//! the connected server's limit, leaving room for headers), and sends them
//! in order on one subject from one connection, which NATS delivers in
//! order. Each part names its transfer (a fresh id per message), its place
//! and the total size in headers, and carries raw bytes: no JSON escaping,
//! so a part never grows past the limit whatever the text holds.
//!
//! The receiver ([`Reassembly`]) keeps one buffer per transfer id, so parts
//! of different calls never mix; refuses a transfer whose declared size is
//! over its cap, whose parts arrive out of order, or that sends more bytes
//! than it declared; and drops a transfer whose next part has not come
//! within [`PART_TIMEOUT`] (its sender died or NATS dropped a part).

use std::collections::HashMap;
use std::time::Duration;

use async_nats::HeaderMap;
use tokio::time::Instant;

/// Header naming the transfer a part belongs to.
pub const TRANSFER_HEADER: &str = "Runner-Transfer";
/// Header with the part's place: `<index>/<count>`, from 0.
pub const PART_HEADER: &str = "Runner-Part";
/// Header with the size in bytes of the whole message.
pub const SIZE_HEADER: &str = "Runner-Size";
/// A transfer whose next part has not arrived for this long is dropped.
pub const PART_TIMEOUT: Duration = Duration::from_secs(10);
/// Transfers one receiver assembles at once; more is a misbehaving peer.
pub const MAX_OPEN_TRANSFERS: usize = 64;

/// Size of one part for a server whose `max_payload` is this: half of it,
/// so headers and protocol framing always fit beside the bytes.
pub fn part_size(max_payload: usize) -> usize {
    (max_payload / 2).max(1)
}

/// One part of a message, ready to publish.
#[derive(Debug)]
pub struct Part {
    pub headers: HeaderMap,
    pub payload: Vec<u8>,
    /// The last part of its message.
    pub last: bool,
}

/// Cuts `bytes` into parts of at most `size` bytes under a new transfer id.
pub fn split(bytes: &[u8], size: usize) -> Vec<Part> {
    let transfer = uuid::Uuid::new_v4().simple().to_string();
    let size = size.max(1);
    let count = bytes.len().div_ceil(size).max(1);
    let total = bytes.len().to_string();
    let mut parts = Vec::with_capacity(count);
    for index in 0..count {
        let start = index * size;
        let end = (start + size).min(bytes.len());
        let mut headers = HeaderMap::new();
        headers.insert(TRANSFER_HEADER, transfer.as_str());
        headers.insert(PART_HEADER, format!("{index}/{count}"));
        headers.insert(SIZE_HEADER, total.as_str());
        parts.push(Part {
            headers,
            payload: bytes[start..end].to_vec(),
            last: index + 1 == count,
        });
    }
    parts
}

/// Where a received part belongs, read from its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    pub transfer: String,
    pub index: usize,
    pub count: usize,
    pub total: usize,
}

/// Why a part was refused; its transfer is dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartError {
    #[error("malformed part header {0:?}")]
    Malformed(String),
    #[error("transfer of {total} bytes is over the limit of {cap} bytes")]
    TooLarge { total: usize, cap: usize },
    #[error("part {got} of transfer {transfer:?} arrived where part {expected} was due")]
    OutOfOrder {
        transfer: String,
        expected: usize,
        got: usize,
    },
    #[error("transfer {0:?} sent more bytes than it declared")]
    Overflow(String),
    #[error("transfer {0:?} ended short of its declared size")]
    Short(String),
    #[error("too many transfers in progress ({0})")]
    Busy(usize),
}

/// The part headers of a message: `Ok(None)` for an ordinary (whole)
/// message.
pub fn info(headers: Option<&HeaderMap>) -> Result<Option<PartInfo>, PartError> {
    let Some(headers) = headers else {
        return Ok(None);
    };
    let Some(transfer) = headers.get(TRANSFER_HEADER) else {
        return Ok(None);
    };
    let transfer = transfer.as_str();
    if transfer.is_empty() || transfer.len() > 64 {
        return Err(PartError::Malformed(TRANSFER_HEADER.to_owned()));
    }
    let place = headers
        .get(PART_HEADER)
        .map(|value| value.as_str())
        .unwrap_or_default();
    let (index, count) = place
        .split_once('/')
        .and_then(|(index, count)| Some((index.parse().ok()?, count.parse().ok()?)))
        .filter(|&(index, count): &(usize, usize)| index < count)
        .ok_or_else(|| PartError::Malformed(PART_HEADER.to_owned()))?;
    let total = headers
        .get(SIZE_HEADER)
        .and_then(|value| value.as_str().parse().ok())
        .ok_or_else(|| PartError::Malformed(SIZE_HEADER.to_owned()))?;
    Ok(Some(PartInfo {
        transfer: transfer.to_owned(),
        index,
        count,
        total,
    }))
}

#[derive(Debug)]
struct Assembly {
    count: usize,
    total: usize,
    next: usize,
    bytes: Vec<u8>,
    last_part_at: Instant,
}

/// Messages being put back together on one receiver.
#[derive(Debug)]
pub struct Reassembly {
    cap: usize,
    open: HashMap<String, Assembly>,
}

impl Reassembly {
    /// Accepts whole messages of at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            open: HashMap::new(),
        }
    }

    /// Adds a part; returns the whole message once its last part is in.
    /// On error the transfer is forgotten (later parts of it are refused
    /// as out of order).
    pub fn accept(
        &mut self,
        part: &PartInfo,
        payload: &[u8],
        now: Instant,
    ) -> Result<Option<Vec<u8>>, PartError> {
        let result = self.add(part, payload, now);
        if result.is_err() {
            self.open.remove(&part.transfer);
        }
        result
    }

    fn add(
        &mut self,
        part: &PartInfo,
        payload: &[u8],
        now: Instant,
    ) -> Result<Option<Vec<u8>>, PartError> {
        if part.total > self.cap {
            return Err(PartError::TooLarge {
                total: part.total,
                cap: self.cap,
            });
        }
        if part.index == 0 && !self.open.contains_key(&part.transfer) {
            if self.open.len() >= MAX_OPEN_TRANSFERS {
                return Err(PartError::Busy(self.open.len()));
            }
            self.open.insert(
                part.transfer.clone(),
                Assembly {
                    count: part.count,
                    total: part.total,
                    next: 0,
                    // Grows with what arrives, never past `total` (checked
                    // below), so a peer cannot make us reserve the cap.
                    bytes: Vec::new(),
                    last_part_at: now,
                },
            );
        }
        let Some(assembly) = self.open.get_mut(&part.transfer) else {
            return Err(PartError::OutOfOrder {
                transfer: part.transfer.clone(),
                expected: 0,
                got: part.index,
            });
        };
        if part.index != assembly.next || part.count != assembly.count {
            return Err(PartError::OutOfOrder {
                transfer: part.transfer.clone(),
                expected: assembly.next,
                got: part.index,
            });
        }
        if part.total != assembly.total || assembly.bytes.len() + payload.len() > assembly.total {
            return Err(PartError::Overflow(part.transfer.clone()));
        }
        assembly.bytes.extend_from_slice(payload);
        assembly.next += 1;
        assembly.last_part_at = now;
        if assembly.next < assembly.count {
            return Ok(None);
        }
        if assembly.bytes.len() != assembly.total {
            return Err(PartError::Short(part.transfer.clone()));
        }
        Ok(self
            .open
            .remove(&part.transfer)
            .map(|assembly| assembly.bytes))
    }

    /// Drops transfers whose next part is overdue; returns their ids.
    pub fn expire(&mut self, now: Instant) -> Vec<String> {
        let overdue: Vec<String> = self
            .open
            .iter()
            .filter(|(_, assembly)| now.duration_since(assembly.last_part_at) >= PART_TIMEOUT)
            .map(|(transfer, _)| transfer.clone())
            .collect();
        for transfer in &overdue {
            self.open.remove(transfer);
        }
        overdue
    }

    /// Transfers in progress.
    pub fn in_progress(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infos(parts: &[Part]) -> Vec<PartInfo> {
        parts
            .iter()
            .map(|part| {
                info(Some(&part.headers))
                    .expect("valid headers")
                    .expect("part headers present")
            })
            .collect()
    }

    #[test]
    fn parts_fit_and_rejoin() {
        let bytes: Vec<u8> = (0..10_000u32).map(|n| (n % 251) as u8).collect();
        let parts = split(&bytes, 4096);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|part| part.payload.len() <= 4096));
        assert!(parts[2].last && !parts[1].last);
        let mut reassembly = Reassembly::new(10_000);
        let now = Instant::now();
        let mut whole = None;
        for (part, info) in parts.iter().zip(infos(&parts)) {
            assert!(whole.is_none());
            whole = reassembly
                .accept(&info, &part.payload, now)
                .expect("accepted");
        }
        assert_eq!(whole.as_deref(), Some(bytes.as_slice()));
        assert_eq!(reassembly.in_progress(), 0);
    }

    #[test]
    fn an_empty_message_is_one_part() {
        let parts = split(b"", 4096);
        assert_eq!(parts.len(), 1);
        let info = &infos(&parts)[0];
        let mut reassembly = Reassembly::new(10);
        assert_eq!(
            reassembly.accept(info, b"", Instant::now()),
            Ok(Some(Vec::new()))
        );
    }

    #[test]
    fn interleaved_transfers_do_not_mix() {
        let one = vec![1u8; 9000];
        let two = vec![2u8; 9000];
        let (a, b) = (split(&one, 4096), split(&two, 4096));
        let (ia, ib) = (infos(&a), infos(&b));
        let mut reassembly = Reassembly::new(9000);
        let now = Instant::now();
        let mut done = Vec::new();
        for index in 0..3 {
            for (parts, infos) in [(&a, &ia), (&b, &ib)] {
                if let Some(whole) = reassembly
                    .accept(&infos[index], &parts[index].payload, now)
                    .expect("accepted")
                {
                    done.push(whole);
                }
            }
        }
        assert_eq!(done, vec![one, two]);
    }

    #[test]
    fn over_the_cap_is_refused_before_anything_is_kept() {
        let parts = split(&[0u8; 5000], 4096);
        let info = &infos(&parts)[0];
        let mut reassembly = Reassembly::new(4999);
        assert_eq!(
            reassembly.accept(info, &parts[0].payload, Instant::now()),
            Err(PartError::TooLarge {
                total: 5000,
                cap: 4999
            })
        );
        assert_eq!(reassembly.in_progress(), 0);
    }

    #[test]
    fn lies_and_gaps_drop_the_transfer() {
        let parts = split(&[7u8; 9000], 4096);
        let all = infos(&parts);
        let now = Instant::now();

        // A missing part.
        let mut reassembly = Reassembly::new(9000);
        assert_eq!(reassembly.accept(&all[0], &parts[0].payload, now), Ok(None));
        assert!(matches!(
            reassembly.accept(&all[2], &parts[2].payload, now),
            Err(PartError::OutOfOrder {
                expected: 1,
                got: 2,
                ..
            })
        ));
        assert_eq!(reassembly.in_progress(), 0);

        // More bytes than declared.
        let mut reassembly = Reassembly::new(9000);
        assert_eq!(reassembly.accept(&all[0], &parts[0].payload, now), Ok(None));
        assert!(matches!(
            reassembly.accept(&all[1], &[0u8; 8000], now),
            Err(PartError::Overflow(_))
        ));

        // Fewer bytes than declared.
        let mut reassembly = Reassembly::new(9000);
        assert_eq!(reassembly.accept(&all[0], &parts[0].payload, now), Ok(None));
        assert_eq!(reassembly.accept(&all[1], &parts[1].payload, now), Ok(None));
        assert!(matches!(
            reassembly.accept(&all[2], b"x", now),
            Err(PartError::Short(_))
        ));

        // A later part without its start.
        let mut reassembly = Reassembly::new(9000);
        assert!(reassembly.accept(&all[1], &parts[1].payload, now).is_err());
    }

    #[test]
    fn a_stalled_transfer_expires() {
        let parts = split(&[7u8; 9000], 4096);
        let all = infos(&parts);
        let start = Instant::now();
        let mut reassembly = Reassembly::new(9000);
        assert_eq!(
            reassembly.accept(&all[0], &parts[0].payload, start),
            Ok(None)
        );
        assert!(reassembly
            .expire(start + PART_TIMEOUT - Duration::from_millis(1))
            .is_empty());
        assert_eq!(
            reassembly.expire(start + PART_TIMEOUT),
            vec![all[0].transfer.clone()]
        );
        assert!(reassembly
            .accept(&all[1], &parts[1].payload, start + PART_TIMEOUT)
            .is_err());
    }

    #[test]
    fn too_many_open_transfers_are_refused() {
        let mut reassembly = Reassembly::new(9000);
        let now = Instant::now();
        for _ in 0..MAX_OPEN_TRANSFERS {
            let parts = split(&[1u8; 5000], 4096);
            let info = &infos(&parts)[0];
            assert_eq!(reassembly.accept(info, &parts[0].payload, now), Ok(None));
        }
        let parts = split(&[1u8; 5000], 4096);
        let info = &infos(&parts)[0];
        assert_eq!(
            reassembly.accept(info, &parts[0].payload, now),
            Err(PartError::Busy(MAX_OPEN_TRANSFERS))
        );
    }

    #[test]
    fn malformed_headers_are_errors_and_plain_messages_are_not_parts() {
        assert_eq!(info(None), Ok(None));
        assert_eq!(info(Some(&HeaderMap::new())), Ok(None));
        let mut headers = HeaderMap::new();
        headers.insert(TRANSFER_HEADER, "t");
        headers.insert(PART_HEADER, "3/3");
        headers.insert(SIZE_HEADER, "10");
        assert!(info(Some(&headers)).is_err());
        let mut headers = HeaderMap::new();
        headers.insert(TRANSFER_HEADER, "t");
        headers.insert(PART_HEADER, "0/1");
        headers.insert(SIZE_HEADER, "ten");
        assert!(info(Some(&headers)).is_err());
    }

    #[test]
    fn part_size_halves_the_limit() {
        assert_eq!(part_size(1024 * 1024), 512 * 1024);
        assert_eq!(part_size(0), 1);
    }
}
