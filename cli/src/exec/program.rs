//! Finding a program as `execvp` would: on the PATH the process will have.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where `program` is: as given when it has a `/`, else the first
/// executable of that name on the PATH the child will have.
pub fn find_program(program: &std::ffi::OsStr, env: &HashMap<String, String>) -> Option<PathBuf> {
    let path = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        return Some(path.to_owned());
    }
    let search = match env.get("PATH") {
        Some(value) => OsString::from(value),
        None => std::env::var_os("PATH")?,
    };
    std::env::split_paths(&search)
        .map(|dir| dir.join(path))
        .find(|candidate| is_executable(candidate))
}

/// The first executable file called `name` in an absolute directory of the
/// runner's own PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file some user may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
