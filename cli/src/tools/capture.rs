//! Bounded capture of a process's output: keeps the head and the tail.
//!
//! Errors are usually at the end of a long output, so when the output
//! exceeds the limit we keep its first half-limit and its last half-limit and
//! say how many bytes were dropped in between. Memory stays at `limit` bytes
//! however much the process writes.

use std::collections::VecDeque;

/// Head + tail buffer of at most `limit` bytes.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: u64,
}

impl Capture {
    pub fn new(limit: usize) -> Capture {
        let half = limit / 2;
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            half,
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.half {
            let take = (self.half - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// Bytes the process wrote in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text, lossily decoded, with a marker where bytes were dropped.
    pub fn into_text(self) -> String {
        let dropped = self.total - (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[… {dropped} bytes truncated …]\n"));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut capture = Capture::new(16);
        capture.push(b"hello ");
        capture.push(b"world");
        assert!(!capture.truncated());
        assert_eq!(capture.into_text(), "hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail() {
        let mut capture = Capture::new(8);
        for chunk in [&b"abcdef"[..], b"ghijkl", b"mnopqrstuvwxyz"] {
            capture.push(chunk);
        }
        assert!(capture.truncated());
        assert_eq!(capture.total(), 26);
        let text = capture.into_text();
        assert!(text.starts_with("abcd"), "{text}");
        assert!(text.ends_with("wxyz"), "{text}");
        assert!(text.contains("18 bytes truncated"), "{text}");
    }

    proptest::proptest! {
        #[test]
        fn memory_is_bounded_and_ends_are_exact(chunks in proptest::collection::vec(proptest::collection::vec(0u8..=255, 0..50), 0..40)) {
            let limit = 32;
            let mut capture = Capture::new(limit);
            let mut all = Vec::new();
            for chunk in &chunks {
                capture.push(chunk);
                all.extend_from_slice(chunk);
                proptest::prop_assert!(capture.head.len() + capture.tail.len() <= limit);
            }
            let head_len = capture.head.len();
            proptest::prop_assert_eq!(&capture.head[..], &all[..head_len]);
            let tail: Vec<u8> = capture.tail.iter().copied().collect();
            proptest::prop_assert_eq!(&tail[..], &all[all.len() - tail.len()..]);
            if all.len() <= limit {
                proptest::prop_assert!(!capture.truncated());
            }
        }
    }
}
