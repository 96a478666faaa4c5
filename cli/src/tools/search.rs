//! `list`, `glob` and `grep`: walking and searching the file system with
//! ripgrep's crates (`ignore` for the walk with `.gitignore` rules and
//! overrides, `globset` for patterns, `grep-searcher`/`grep-regex` for the
//! search), inside the boundary of [`crate::gate::boundary`].
//!
//! The starting path goes through the boundary like any file path. The walk
//! never follows symlinked directories; a symlinked file is listed as a
//! symlink and only searched by `grep` when its target passes the boundary
//! too, so a link cannot carry a search out of the workspace.

use std::path::{Path, PathBuf};
use std::time::Instant;

use globset::{Glob as Pattern, GlobSet, GlobSetBuilder};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{sinks::Lossy, BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::{DirEntry, WalkBuilder};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;

use super::context::ToolContext;
use super::tool::{Running, Tool};
use crate::call::{CallScope, ToolOutcome};

/// Default number of entries or matches returned.
pub const DEFAULT_RESULTS: u64 = 1000;
/// Most entries or matches one call returns.
pub const MAX_RESULTS: u64 = 10_000;
/// A matching line longer than this is cut (minified files have megabyte lines).
pub const MAX_LINE_CHARS: usize = 500;

/// A walking tool: its type, its argument type with the arguments every
/// walk takes ([`Walk`]) and its own, its name, its description, and the
/// blocking work it does.
macro_rules! walking_tool {
    (
        $tool:ident, $name:expr, $description:expr, $work:ident,
        $(#[$meta:meta])* struct $args:ident { $($own:tt)* }
    ) => {
        pub struct $tool;

        $(#[$meta])*
        #[derive(Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $args {
            /// Where to start (default: the workspace root)
            pub path: Option<String>,
            /// Include hidden files (default false)
            pub hidden: Option<bool>,
            /// Do not apply .gitignore/.ignore rules (default false)
            pub no_ignore: Option<bool>,
            #[schemars(range(min = 1, max = MAX_RESULTS))]
            pub max_results: Option<u64>,
            $($own)*
        }

        impl $args {
            fn walk(&self) -> Walk<'_> {
                Walk {
                    path: self.path.as_deref(),
                    hidden: self.hidden.unwrap_or(false),
                    no_ignore: self.no_ignore.unwrap_or(false),
                    max_results: self.max_results,
                }
            }
        }

        impl Tool for $tool {
            type Args = $args;

            fn name(&self) -> &'static str {
                $name
            }

            fn description(&self) -> String {
                $description.into()
            }

            fn run<'a>(
                &'a self,
                args: $args,
                context: &'a ToolContext,
                scope: &'a CallScope,
            ) -> Running<'a> {
                Box::pin(blocking(args, context, scope, $work))
            }
        }
    };
}

walking_tool!(
    List,
    tools::LIST,
    "List a directory (optionally recursive), honouring .gitignore; ignore patterns exclude more.",
    list_blocking,
    /// The arguments of `list`.
    struct ListArgs {
        pub recursive: Option<bool>,
        #[schemars(range(min = 1))]
        pub max_depth: Option<u64>,
        /// Glob patterns to leave out, e.g. "target/" or "*.log"
        pub ignore: Option<Vec<String>>,
    }
);

walking_tool!(
    Glob,
    tools::GLOB,
    "Find files whose path (relative to `path`) matches a glob such as \"src/**/*.rs\".",
    glob_blocking,
    /// The arguments of `glob`.
    struct GlobArgs {
        pub pattern: String,
    }
);

walking_tool!(
    Grep,
    tools::GREP,
    "Search file contents for a regular expression (ripgrep's engine), honouring .gitignore; returns path, line number and line.",
    grep_blocking,
    /// The arguments of `grep`.
    struct GrepArgs {
        /// Regular expression (Rust regex syntax)
        pub pattern: String,
        /// Only files matching one of these globs, e.g. "*.rs"
        pub include: Option<Vec<String>>,
        pub case_insensitive: Option<bool>,
        /// Treat the pattern as literal text
        pub fixed_strings: Option<bool>,
    }
);

/// What every walk takes: where it starts, what it leaves out, how much
/// it returns.
struct Walk<'a> {
    path: Option<&'a str>,
    hidden: bool,
    no_ignore: bool,
    max_results: Option<u64>,
}

/// Walks block; keep them off the runtime's worker threads. They watch the
/// call's cancellation and deadline between entries.
async fn blocking<A: Send + 'static>(
    args: A,
    context: &ToolContext,
    scope: &CallScope,
    work: fn(&A, &ToolContext, &Stop) -> Result<Value, String>,
) -> ToolOutcome {
    let context = context.clone();
    let stop = Stop {
        cancel: scope.cancel.clone(),
        deadline: Instant::now() + scope.timeout,
    };
    match tokio::task::spawn_blocking(move || work(&args, &context, &stop)).await {
        Ok(result) => ToolOutcome::from_result(result),
        Err(error) => ToolOutcome::error(format!("search failed: {error}")),
    }
}

struct Stop {
    cancel: CancellationToken,
    deadline: Instant,
}

impl Stop {
    fn check(&self) -> Result<(), String> {
        if self.cancel.is_cancelled() {
            return Err("cancelled".to_owned());
        }
        if Instant::now() >= self.deadline {
            return Err("timed out before the walk finished".to_owned());
        }
        Ok(())
    }
}

/// The starting point, resolved through the boundary, and how to show paths.
struct Root {
    raw: String,
    real: PathBuf,
    /// Relative starts show paths relative to the workspace.
    workspace: Option<PathBuf>,
}

impl Root {
    fn resolve(walk: &Walk<'_>, context: &ToolContext) -> Result<Root, String> {
        let raw = walk.path.unwrap_or(".").to_owned();
        let real = context
            .boundary
            .resolve_existing(&raw)
            .map_err(|error| error.to_string())?;
        let workspace = Path::new(&raw)
            .is_relative()
            .then(|| context.boundary.root().to_path_buf());
        Ok(Root {
            raw,
            real,
            workspace,
        })
    }

    fn show(&self, path: &Path) -> String {
        match &self.workspace {
            Some(workspace) => {
                let shown = crate::exec::kept::display_path(workspace, path);
                if shown.is_empty() {
                    ".".to_owned()
                } else {
                    shown
                }
            }
            None => path.display().to_string(),
        }
    }

    fn walker(&self, walk_args: &Walk<'_>) -> Result<WalkBuilder, String> {
        let (hidden, no_ignore) = (walk_args.hidden, walk_args.no_ignore);
        let mut walk = WalkBuilder::new(&self.real);
        walk.hidden(!hidden)
            .ignore(!no_ignore)
            .git_ignore(!no_ignore)
            .git_global(false)
            .git_exclude(!no_ignore)
            .parents(!no_ignore)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        Ok(walk)
    }
}

fn limit(walk: &Walk<'_>) -> usize {
    let wanted = walk.max_results.unwrap_or(DEFAULT_RESULTS);
    wanted.clamp(1, MAX_RESULTS) as usize
}

fn kind(entry: &DirEntry) -> &'static str {
    match entry.file_type() {
        Some(kind) if kind.is_symlink() => "symlink",
        Some(kind) if kind.is_dir() => "dir",
        Some(kind) if kind.is_file() => "file",
        _ => "other",
    }
}

fn list_blocking(args: &ListArgs, context: &ToolContext, stop: &Stop) -> Result<Value, String> {
    let common = args.walk();
    let root = Root::resolve(&common, context)?;
    let recursive = args.recursive.unwrap_or(false);
    let depth = args.max_depth;
    let max = limit(&common);
    let mut walk = root.walker(&common)?;
    walk.max_depth(Some(match (recursive, depth) {
        (false, _) => 1,
        (true, Some(depth)) => depth.max(1) as usize,
        (true, None) => usize::MAX,
    }));
    if let Some(patterns) = &args.ignore {
        let mut overrides = OverrideBuilder::new(&root.real);
        for pattern in patterns {
            overrides
                .add(&format!("!{pattern}"))
                .map_err(|error| format!("ignore pattern {pattern:?}: {error}"))?;
        }
        let overrides = overrides
            .build()
            .map_err(|error| format!("ignore patterns: {error}"))?;
        walk.overrides(overrides);
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in walk.build() {
        stop.check()?;
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= max {
            truncated = true;
            break;
        }
        let size = entry
            .metadata()
            .ok()
            .filter(|meta| meta.is_file())
            .map(|meta| meta.len());
        entries.push(json!({
            "path": root.show(entry.path()),
            "type": kind(&entry),
            "size": size,
        }));
    }
    Ok(json!({"path": root.raw, "entries": entries, "truncated": truncated}))
}

fn glob_blocking(args: &GlobArgs, context: &ToolContext, stop: &Stop) -> Result<Value, String> {
    let common = args.walk();
    let root = Root::resolve(&common, context)?;
    let pattern = args.pattern.as_str();
    let matcher = Pattern::new(pattern)
        .map_err(|error| error.to_string())?
        .compile_matcher();
    let max = limit(&common);
    let mut matches = Vec::new();
    let mut truncated = false;
    for entry in root.walker(&common)?.build() {
        stop.check()?;
        let Ok(entry) = entry else { continue };
        let Ok(relative) = entry.path().strip_prefix(&root.real) else {
            continue;
        };
        if entry.depth() == 0 || !matcher.is_match(relative) {
            continue;
        }
        if matches.len() >= max {
            truncated = true;
            break;
        }
        matches.push(json!({"path": root.show(entry.path()), "type": kind(&entry)}));
    }
    Ok(json!({"pattern": pattern, "matches": matches, "truncated": truncated}))
}

fn include_set(args: &GrepArgs) -> Result<Option<GlobSet>, String> {
    let Some(patterns) = &args.include else {
        return Ok(None);
    };
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Pattern::new(pattern).map_err(|error| error.to_string())?);
    }
    set.build().map(Some).map_err(|error| error.to_string())
}

fn grep_blocking(args: &GrepArgs, context: &ToolContext, stop: &Stop) -> Result<Value, String> {
    let common = args.walk();
    let root = Root::resolve(&common, context)?;
    let pattern = args.pattern.as_str();
    let fixed = args.fixed_strings.unwrap_or(false);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .fixed_strings(fixed)
        .build(pattern)
        .map_err(|error| format!("pattern {pattern:?}: {error}"))?;
    let include = include_set(args)?;
    let max = limit(&common);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut matches: Vec<Value> = Vec::new();
    let mut files_searched = 0u64;
    let mut skipped = Vec::new();
    let mut truncated = false;
    let mut reader = super::no_follow::Reader::default();
    'walk: for entry in root.walker(&common)?.build() {
        stop.check()?;
        let Ok(entry) = entry else { continue };
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        // Regular files and links to them only: opening a FIFO or a
        // device would wait on whatever is at its other end.
        if !file_type.is_file() && !file_type.is_symlink() {
            continue;
        }
        let path = entry.path();
        if let Some(include) = &include {
            let name_matches = path.file_name().is_some_and(|name| include.is_match(name));
            let relative = path.strip_prefix(&root.real).unwrap_or(path);
            if !name_matches && !include.is_match(relative) {
                continue;
            }
        }
        // What is opened: the walked path, or a link's checked target.
        let target = if file_type.is_symlink() {
            let allowed = path
                .canonicalize()
                .ok()
                .filter(|real| real.is_file())
                .filter(|real| context.boundary.check_resolved(&root.raw, real).is_ok());
            let Some(real) = allowed else {
                skipped.push(json!({"path": root.show(path), "reason": "symlink leads outside the allowed paths"}));
                continue;
            };
            std::borrow::Cow::Owned(real)
        } else {
            std::borrow::Cow::Borrowed(path)
        };
        files_searched += 1;
        let shown = root.show(path);
        // Opened along the walked (or checked) path without following a
        // symlink put in its way since (`no_follow`).
        let file = match reader.open(&target) {
            Ok(file) => file,
            Err(error) => {
                skipped.push(json!({"path": shown, "reason": error.to_string()}));
                continue;
            }
        };
        let result = searcher.search_file(
            &matcher,
            &file,
            Lossy(|line_number, line| {
                if matches.len() >= max {
                    truncated = true;
                    return Ok(false);
                }
                let line = line.trim_end_matches(['\n', '\r']);
                let text: String = line.chars().take(MAX_LINE_CHARS).collect();
                matches.push(json!({
                    "path": shown,
                    "line": line_number,
                    "text": text,
                    "line_truncated": text.len() < line.len(),
                }));
                Ok(true)
            }),
        );
        if let Err(error) = result {
            skipped.push(json!({"path": shown, "reason": error.to_string()}));
        }
        if truncated {
            break 'walk;
        }
    }
    Ok(json!({
        "pattern": pattern,
        "matches": matches,
        "files_searched": files_searched,
        "truncated": truncated,
        "skipped": skipped,
    }))
}
