//! Bounded capture of a process's output: keeps the head and the tail.
//!
//! Errors are usually at the end of a long output, so when the output
//! exceeds the limit we keep its first half-limit and its last half-limit and
//! say how many bytes were dropped in between. Memory stays at `limit` bytes
//! however much the process writes.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

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

    /// Every byte pushed so far, when nothing was dropped yet.
    fn whole(&self) -> Option<Vec<u8>> {
        if self.truncated() {
            return None;
        }
        let mut bytes = self.head.clone();
        bytes.extend(self.tail.iter());
        Some(bytes)
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

/// A [`Capture`] that also keeps the *complete* output in a file once it
/// outgrows the inline limit, so a truncated result loses nothing.
///
/// The file is created only when needed: until then the capture holds every
/// byte, and those are written first when the limit is crossed. Memory stays
/// at the capture's limit whatever the process writes.
#[derive(Debug)]
pub struct Spool {
    capture: Capture,
    limit: u64,
    /// `None`: no file (the output was streamed to the caller whole).
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    file_error: Option<String>,
}

/// What a [`Spool`] kept.
#[derive(Debug)]
pub struct Spooled {
    /// Head and tail, with a marker where bytes were dropped.
    pub text: String,
    /// Bytes written in all.
    pub total: u64,
    pub truncated: bool,
    /// The file holding every byte, when the output outgrew the limit.
    pub file: Option<PathBuf>,
    /// Why the file could not be written, when it could not.
    pub file_error: Option<String>,
}

impl Spool {
    /// `limit` bytes inline; past that the output goes to `path` too.
    pub fn new(limit: usize, path: PathBuf) -> Spool {
        Spool::with_file(limit, Some(path))
    }

    /// `limit` bytes inline and no file: for output the caller receives
    /// whole as it is produced (a streamed call), where writing it to disk
    /// as well would only cost time (at 1 GB the page cache's writeback
    /// halved the stream's rate).
    pub fn without_file(limit: usize) -> Spool {
        Spool::with_file(limit, None)
    }

    fn with_file(limit: usize, path: Option<PathBuf>) -> Spool {
        let limit = limit - limit % 2;
        Spool {
            capture: Capture::new(limit),
            limit: limit as u64,
            path,
            file: None,
            file_error: None,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let crossing = self.path.is_some()
            && self.file.is_none()
            && self.file_error.is_none()
            && self.capture.total() + bytes.len() as u64 > self.limit;
        if crossing {
            if let Err(error) = self.open_file() {
                self.file_error = Some(format!("{}: {error}", self.path_text()));
            }
        }
        if let Some(file) = &mut self.file {
            if let Err(error) = file.write_all(bytes) {
                self.file_error = Some(format!("{}: {error}", self.path_text()));
                self.file = None;
            }
        }
        self.capture.push(bytes);
    }

    fn path_text(&self) -> String {
        self.path
            .as_deref()
            .map(|path| path.display().to_string())
            .unwrap_or_default()
    }

    fn open_file(&mut self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // The runner's user only: a command's output may hold anything it
        // printed (tokens, keys); O_NOFOLLOW, since the workspace is the
        // command's to change.
        let mut file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
                .open(path)?
        };
        if let Some(bytes) = self.capture.whole() {
            file.write_all(&bytes)?;
        }
        self.file = Some(file);
        Ok(())
    }

    pub fn total(&self) -> u64 {
        self.capture.total()
    }

    /// Like [`Spool::finish`], plus the exact bytes when nothing was cut.
    pub fn finish_with_bytes(self) -> (Spooled, Option<Vec<u8>>) {
        let bytes = self.capture.whole();
        (self.finish(), bytes)
    }

    pub fn finish(mut self) -> Spooled {
        let file = self.file.take().and_then(|file| {
            drop(file);
            self.path.clone()
        });
        Spooled {
            truncated: self.capture.truncated(),
            total: self.capture.total(),
            text: self.capture.into_text(),
            file,
            file_error: self.file_error,
        }
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

    #[test]
    fn a_spool_keeps_everything_in_its_file_past_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out/c1.stdout");
        let mut small = Spool::new(8, dir.path().join("never"));
        small.push(b"abc");
        let kept = small.finish();
        assert_eq!((kept.text.as_str(), kept.file), ("abc", None));

        let mut spool = Spool::new(8, path.clone());
        let mut all = Vec::new();
        for chunk in [&b"abcde"[..], b"fgh", b"ijklmnopqrstuvwxyz"] {
            spool.push(chunk);
            all.extend_from_slice(chunk);
        }
        let kept = spool.finish();
        assert!(kept.truncated);
        assert_eq!(kept.file.as_deref(), Some(path.as_path()));
        assert_eq!(std::fs::read(&path).expect("kept file"), all);
        assert!(
            kept.text.starts_with("abcd") && kept.text.ends_with("wxyz"),
            "{}",
            kept.text
        );
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
