//! `file_read` and `file_write`, inside the boundary of [`crate::gate::boundary`].

use std::io::{Read, Seek, SeekFrom};

use base64::Engine as _;
use nix::fcntl::OFlag;
use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::ToolContext;
use super::no_follow;
use super::tool::{Running, Tool};
use crate::call::{CallScope, ToolOutcome};

/// `"0755"` / `"755"` → 0o755.
fn parse_permissions(text: &str) -> Result<u32, String> {
    let digits = text
        .strip_prefix('0')
        .filter(|rest| rest.len() == 3)
        .unwrap_or(text);
    if digits.len() != 3 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return Err(format!(
            "permissions {text:?} must be three octal digits, e.g. \"0644\""
        ));
    }
    u32::from_str_radix(digits, 8).map_err(|error| format!("permissions {text:?}: {error}"))
}

/// Default and largest number of bytes one `file_read` returns; read a large
/// file in pages with `offset`.
pub const READ_LIMIT: u64 = 4 * 1024 * 1024;
/// Largest content one `file_write` accepts (after base64 decoding).
pub const WRITE_LIMIT: usize = 8 * 1024 * 1024;

pub struct FileRead;
pub struct FileWrite;

/// The arguments of `file_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Relative: inside the workspace; absolute: within the allowed file paths
    pub path: String,
    pub offset: Option<u64>,
    #[schemars(range(max = READ_LIMIT))]
    pub limit: Option<u64>,
}

/// The arguments of `file_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
    pub encoding: Option<Encoding>,
    /// How to write (default overwrite)
    pub mode: Option<WriteMode>,
    /// Permission bits in octal, e.g. "0755"
    #[schemars(regex(pattern = r"^0?[0-7]{3}$"))]
    pub permissions: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum Encoding {
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "base64")]
    Base64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    Overwrite,
    Create,
    Append,
}

impl WriteMode {
    fn name(self) -> &'static str {
        match self {
            WriteMode::Overwrite => "overwrite",
            WriteMode::Create => "create",
            WriteMode::Append => "append",
        }
    }
}

impl Tool for FileRead {
    type Args = ReadArgs;

    fn name(&self) -> &'static str {
        tools::FILE_READ
    }

    fn description(&self) -> String {
        "Read a file, in pages with offset/limit (binary-safe: non-UTF-8 content comes back base64-encoded).".into()
    }

    fn run<'a>(
        &'a self,
        args: ReadArgs,
        context: &'a ToolContext,
        _: &'a CallScope,
    ) -> Running<'a> {
        let context = context.clone();
        Box::pin(blocking(move || read_blocking(&args, &context)))
    }
}

impl Tool for FileWrite {
    type Args = WriteArgs;

    fn name(&self) -> &'static str {
        tools::FILE_WRITE
    }

    fn description(&self) -> String {
        "Write a file: overwrite (atomic replace), create (fails if it exists) or append; optional permission bits.".into()
    }

    fn run<'a>(
        &'a self,
        args: WriteArgs,
        context: &'a ToolContext,
        _: &'a CallScope,
    ) -> Running<'a> {
        let context = context.clone();
        Box::pin(blocking(move || write_blocking(&args, &context)))
    }
}

/// File I/O blocks; keep it off the runtime's worker threads.
async fn blocking(work: impl FnOnce() -> Result<Value, String> + Send + 'static) -> ToolOutcome {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(result)) => ToolOutcome::ok(result),
        Ok(Err(message)) => ToolOutcome::error(message),
        Err(error) => ToolOutcome::error(format!("file tool failed: {error}")),
    }
}

fn read_blocking(args: &ReadArgs, context: &ToolContext) -> Result<Value, String> {
    let raw = args.path.as_str();
    let offset = args.offset.unwrap_or(0);
    let limit = args.limit.unwrap_or(READ_LIMIT).min(READ_LIMIT);
    let path = context
        .boundary
        .resolve_existing(raw)
        .map_err(|error| error.to_string())?;
    // Opened along the checked path without following a symlink put in
    // its way since the check (`no_follow`).
    let mut file = no_follow::open_for_reading(&path).map_err(|error| format!("{raw}: {error}"))?;
    let meta = file.metadata().map_err(|error| format!("{raw}: {error}"))?;
    if meta.is_dir() {
        return Err(format!("{raw} is a directory"));
    }
    let size = meta.len();
    file.seek(SeekFrom::Start(offset))
        .map_err(|error| format!("{raw}: {error}"))?;
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("{raw}: {error}"))?;
    let read = bytes.len() as u64;
    let (content, encoding) = match String::from_utf8(bytes) {
        Ok(text) => (text, "utf-8"),
        Err(error) => (
            base64::engine::general_purpose::STANDARD.encode(error.into_bytes()),
            "base64",
        ),
    };
    Ok(json!({
        "path": path.display().to_string(),
        "content": content,
        "encoding": encoding,
        "offset": offset,
        "bytes_read": read,
        "size": size,
        "eof": offset.saturating_add(read) >= size,
    }))
}

fn write_blocking(args: &WriteArgs, context: &ToolContext) -> Result<Value, String> {
    let raw = args.path.as_str();
    let content = args.content.as_str();
    let bytes = match args.encoding.unwrap_or(Encoding::Utf8) {
        Encoding::Utf8 => content.as_bytes().to_vec(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(content)
            .map_err(|error| format!("content is not valid base64: {error}"))?,
    };
    if bytes.len() > WRITE_LIMIT {
        return Err(format!(
            "content is {} bytes; the limit is {WRITE_LIMIT}",
            bytes.len()
        ));
    }
    let flags = match args.mode.unwrap_or(WriteMode::Overwrite) {
        WriteMode::Overwrite => None,
        WriteMode::Create => Some(OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL),
        WriteMode::Append => Some(OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_APPEND),
    };
    let permissions = args
        .permissions
        .as_deref()
        .map(parse_permissions)
        .transpose()?;
    let path = context
        .boundary
        .resolve_for_write(raw)
        .map_err(|error| error.to_string())?;
    if path.is_dir() {
        return Err(format!("{raw} is a directory"));
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("{raw} names no file"));
    };
    // The path was resolved and checked; from here on it is walked without
    // following a symlink put in its way since (`no_follow`), and the mode
    // is set on the file opened, not on whatever the path names by then.
    let write = || -> std::io::Result<()> {
        let dir = no_follow::Dir::open(parent, true)?;
        match flags {
            None => replace_atomically(&dir, name, &bytes, permissions),
            Some(flags) => {
                use std::io::Write;
                use std::os::unix::fs::PermissionsExt;
                let mut file = dir.open_file(name, flags, NEW_FILE_MODE_BEFORE_UMASK)?;
                file.write_all(&bytes)?;
                if let Some(bits) = permissions {
                    file.set_permissions(std::fs::Permissions::from_mode(bits))?;
                }
                Ok(())
            }
        }
    };
    write().map_err(|error| format!("{raw}: {error}"))?;
    let mut result = json!({
        "path": path.display().to_string(),
        "bytes_written": bytes.len(),
        "mode": args.mode.unwrap_or(WriteMode::Overwrite).name(),
    });
    if let Some(bits) = permissions {
        result["permissions"] = json!(format!("{bits:04o}"));
    }
    Ok(result)
}

/// Permission bits of a file `overwrite` creates (the temp file it is made
/// from starts at 0600).
const NEW_FILE_MODE: u32 = 0o644;
/// Mode asked for a file `create` or `append` makes, before the umask (as
/// `std::fs::File::create` asks).
const NEW_FILE_MODE_BEFORE_UMASK: u32 = 0o666;

/// Writes to a temp file beside `name` and renames it over `name`: readers
/// see the old or the new content, never a mix. Keeps the old file's mode
/// unless `permissions` are given.
fn replace_atomically(
    dir: &no_follow::Dir,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    permissions: Option<u32>,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mode = permissions
        .or_else(|| dir.mode_of(name))
        .unwrap_or(NEW_FILE_MODE);
    let (mut temp, temp_name) = dir.create_temp()?;
    let temp_name = std::ffi::OsStr::new(&temp_name);
    let written = (|| {
        temp.write_all(bytes)?;
        temp.sync_all()?;
        temp.set_permissions(std::fs::Permissions::from_mode(mode))?;
        dir.rename(temp_name, name)
    })();
    if written.is_err() {
        dir.remove(temp_name);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::super::tool::parse;
    use super::*;

    /// The relay's schema refuses a bad mode first; the runner, which
    /// must not trust that, refuses it too, before making any directory.
    #[test]
    fn a_bad_mode_is_refused_before_anything_is_made() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut context = ToolContext::allowing_all(root.path());
        context.boundary = context.boundary.with_allowed(vec!["*".to_owned()]);
        let args = json!({"path": "made/on/the/way.txt", "content": "y", "mode": "truncate"});
        let error = parse::<WriteArgs>(args).expect_err("refused");
        assert!(
            error.contains("\"mode\"") && error.contains("truncate"),
            "{error}"
        );
        assert!(!root.path().join("made").exists());
        let args = json!({"path": "made/on/the/way.txt", "content": "y", "mode": "create"});
        let args = parse::<WriteArgs>(args).expect("a good mode");
        write_blocking(&args, &context).expect("a good mode writes");
        assert!(root.path().join("made/on/the/way.txt").is_file());
    }

    /// A name at the 255-byte limit can be overwritten: the temp file
    /// beside it must not need a longer one.
    #[test]
    fn a_file_with_the_longest_name_can_be_overwritten() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut context = ToolContext::allowing_all(root.path());
        context.boundary = context.boundary.with_allowed(vec!["*".to_owned()]);
        let name = "n".repeat(255);
        for content in ["first", "second"] {
            let args =
                parse::<WriteArgs>(json!({"path": name, "content": content})).expect("arguments");
            write_blocking(&args, &context).expect("overwrite");
        }
        assert_eq!(
            std::fs::read_to_string(root.path().join(&name)).expect("read"),
            "second"
        );
    }

    #[test]
    fn permissions_are_three_octal_digits() {
        assert_eq!(parse_permissions("0755"), Ok(0o755));
        assert_eq!(parse_permissions("644"), Ok(0o644));
        for bad in ["", "0", "888", "07555", "rwx", "0x1ff", "1234"] {
            assert!(parse_permissions(bad).is_err(), "{bad}");
        }
    }
}
