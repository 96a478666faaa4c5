//! `file_read` and `file_write`, inside the boundary of [`super::workspace`].

use std::io::{Read, Seek, SeekFrom};

use base64::Engine as _;
use serde_json::{json, Value};

use super::{optional_string_arg, optional_u64_arg, string_arg, ToolContext, ToolOutcome};

/// Default and largest number of bytes one `file_read` returns; read a large
/// file in pages with `offset`.
pub const READ_LIMIT: u64 = 4 * 1024 * 1024;
/// Largest content one `file_write` accepts (after base64 decoding).
pub const WRITE_LIMIT: usize = 8 * 1024 * 1024;

pub async fn read(args: Value, context: &ToolContext) -> ToolOutcome {
    let context = context.clone();
    blocking(move || read_blocking(&args, &context)).await
}

pub async fn write(args: Value, context: &ToolContext) -> ToolOutcome {
    let context = context.clone();
    blocking(move || write_blocking(&args, &context)).await
}

/// File I/O blocks; keep it off the runtime's worker threads.
async fn blocking(work: impl FnOnce() -> Result<Value, String> + Send + 'static) -> ToolOutcome {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(result)) => ToolOutcome::ok(result),
        Ok(Err(message)) => ToolOutcome::error(message),
        Err(error) => ToolOutcome::error(format!("file tool failed: {error}")),
    }
}

fn read_blocking(args: &Value, context: &ToolContext) -> Result<Value, String> {
    let raw = string_arg(args, "path")?;
    let offset = optional_u64_arg(args, "offset")?.unwrap_or(0);
    let limit = optional_u64_arg(args, "limit")?
        .unwrap_or(READ_LIMIT)
        .min(READ_LIMIT);
    let path = context
        .boundary
        .resolve_existing(raw)
        .map_err(|error| error.to_string())?;
    let mut file = std::fs::File::open(&path).map_err(|error| format!("{raw}: {error}"))?;
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

fn write_blocking(args: &Value, context: &ToolContext) -> Result<Value, String> {
    let raw = string_arg(args, "path")?;
    let content = string_arg(args, "content")?;
    let bytes = match optional_string_arg(args, "encoding")?.unwrap_or("utf-8") {
        "utf-8" => content.as_bytes().to_vec(),
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(content)
            .map_err(|error| format!("content is not valid base64: {error}"))?,
        other => return Err(format!("encoding {other:?} is not utf-8 or base64")),
    };
    if bytes.len() > WRITE_LIMIT {
        return Err(format!(
            "content is {} bytes; the limit is {WRITE_LIMIT}",
            bytes.len()
        ));
    }
    let mode = optional_string_arg(args, "mode")?.unwrap_or("overwrite");
    let path = context
        .boundary
        .resolve_for_write(raw)
        .map_err(|error| error.to_string())?;
    if path.is_dir() {
        return Err(format!("{raw} is a directory"));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| format!("{raw}: {error}"))?;
    }
    match mode {
        "overwrite" => replace_atomically(&path, &bytes).map_err(|error| format!("{raw}: {error}"))?,
        "create" => {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|error| format!("{raw}: {error}"))?;
            file.write_all(&bytes).map_err(|error| format!("{raw}: {error}"))?;
        }
        "append" => {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .map_err(|error| format!("{raw}: {error}"))?;
            file.write_all(&bytes).map_err(|error| format!("{raw}: {error}"))?;
        }
        other => return Err(format!("mode {other:?} is not overwrite, create or append")),
    }
    Ok(json!({
        "path": path.display().to_string(),
        "bytes_written": bytes.len(),
        "mode": mode,
    }))
}

/// Writes to a temp file beside `path` and renames it over `path`: readers
/// see the old or the new content, never a mix. Keeps the old file's mode.
fn replace_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(temp.path(), meta.permissions())?;
    }
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}
