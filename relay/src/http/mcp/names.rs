//! MCP tool names of environment tools: `<environment>__<tool>`.
//!
//! A model tells tools apart by name, and MCP clients accept only
//! `[A-Za-z0-9_.-]`, at most 128 characters. So each environment gets a
//! *slug*:
//!
//! * a name that is already fit (those characters, no `__`, at most
//!   [`MAX_SLUG`]) is its own slug, and wins any clash;
//! * any other name is lowered, every run of other characters becomes one
//!   `-`, and it is cut to fit; when that clashes with another slug in the
//!   same listing, or leaves nothing, the first characters of the
//!   environment's id are added.
//!
//! A slug never contains `__`, so the first `__` of a tool's MCP name ends
//! the environment's part: relayed MCP tools (`server__tool`) keep theirs.

use runner_proto::tools::MCP_SEPARATOR;

/// Longest slug: leaves room for the tool's own name within 128.
pub const MAX_SLUG: usize = 48;
/// Characters of an environment id added to a slug that clashed.
const ID_CHARS: usize = 8;

/// Whether `name` can be used as its own slug.
pub fn is_fit(name: &str) -> bool {
    (1..=MAX_SLUG).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && !name.contains(MCP_SEPARATOR)
        && !name.starts_with('_')
        && !name.ends_with('_')
}

/// `name` made fit: lowered, other characters as `-`, cut to [`MAX_SLUG`].
fn sanitised(name: &str) -> String {
    let mut slug = String::with_capacity(name.len().min(MAX_SLUG));
    for c in name.chars().flat_map(char::to_lowercase) {
        let fit = c.is_ascii_alphanumeric() || c == '.' || c == '-';
        let c = if fit { c } else { '-' };
        if c == '-' && (slug.is_empty() || slug.ends_with('-')) {
            continue;
        }
        slug.push(c);
    }
    let mut slug: String = slug.chars().take(MAX_SLUG).collect();
    while slug.ends_with('-') {
        slug.pop();
    }
    slug
}

/// The slug of each `(id, name)`, in the same order: see the module
/// documentation. Unique within the list.
pub fn slugs<'a>(environments: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let environments: Vec<(&str, &str)> = environments.into_iter().collect();
    let mut taken: std::collections::HashSet<String> = environments
        .iter()
        .filter(|(_, name)| is_fit(name))
        .map(|(_, name)| (*name).to_owned())
        .collect();
    environments
        .iter()
        .map(|(id, name)| {
            if is_fit(name) {
                return (*name).to_owned();
            }
            let base = sanitised(name);
            if !base.is_empty() && taken.insert(base.clone()) {
                return base;
            }
            let id: String = id
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(ID_CHARS)
                .collect();
            let room = MAX_SLUG.saturating_sub(id.len() + 1);
            let base: String = base.chars().take(room).collect();
            let slug = if base.is_empty() {
                format!("env-{id}")
            } else {
                format!("{base}-{id}")
            };
            taken.insert(slug.clone());
            slug
        })
        .collect()
}

/// The MCP name of `tool` in the environment with `slug`.
pub fn tool_name(slug: &str, tool: &str) -> String {
    format!("{slug}{MCP_SEPARATOR}{tool}")
}

/// An MCP tool name split into its environment slug and tool.
pub fn split(name: &str) -> Option<(&str, &str)> {
    name.split_once(MCP_SEPARATOR)
        .filter(|(slug, tool)| !slug.is_empty() && !tool.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_names_are_their_own_slug_and_win_clashes() {
        let slugs = slugs([("id-1", "web box"), ("id-2", "web-box"), ("id-3", "ci")]);
        assert_eq!(slugs[1], "web-box");
        assert_eq!(slugs[2], "ci");
        assert_eq!(slugs[0], "web-box-id1");
    }

    #[test]
    fn unfit_names_are_sanitised_and_never_hold_the_separator() {
        let slugs = slugs([
            ("env_0123456789", "Büro Rechner #2"),
            ("abc", "a__b"),
            ("xyz", "!!!"),
            ("long", &"x".repeat(200)),
        ]);
        assert_eq!(slugs[0], "b-ro-rechner-2");
        assert_eq!(slugs[1], "a-b");
        assert_eq!(slugs[2], "env-xyz");
        assert_eq!(slugs[3].len(), MAX_SLUG);
        for slug in &slugs {
            assert!(is_fit(slug), "{slug}");
        }
    }

    #[test]
    fn names_split_at_the_first_separator() {
        assert_eq!(split("build__shell"), Some(("build", "shell")));
        assert_eq!(
            split("build__github__create_issue"),
            Some(("build", "github__create_issue"))
        );
        assert_eq!(split("shell"), None);
        assert_eq!(split("__shell"), None);
        assert_eq!(split("build__"), None);
        assert_eq!(tool_name("build", "shell"), "build__shell");
    }
}
