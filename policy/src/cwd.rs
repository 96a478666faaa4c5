//! Where a relative write target lands: the directories the shell may be in
//! at one point of a command line, after the `cd`s before it.
//!
//! A `cd` to a literal directory moves the shell there if it succeeds and
//! leaves it where it was if it fails, so the state is a small set of
//! possible directories. A directory only known at run time (`cd "$d"`,
//! `cd` alone, `cd -`) is [`Dir::Unknown`], and a target relative to it can
//! be anywhere: it is matched as `> *TARGET`, so any deny rule for writes
//! that some directory could trigger denies it.

use crate::words;

/// One directory the shell may be in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Where the command line started (the workspace): relative targets
    /// are matched as written.
    Start,
    /// A literal directory (absolute, or relative to the start), and
    /// whether reaching it depended on a bare relative name (`cd build`),
    /// which `CDPATH` can send elsewhere.
    Path { path: String, bare: bool },
    /// A directory only known at run time.
    Unknown,
}

/// More possible directories than this are merged into [`Dir::Unknown`].
const MAX_POSSIBLE: usize = 4;

/// The directories the shell may be in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cwd(Vec<Dir>);

impl Default for Cwd {
    fn default() -> Cwd {
        Cwd(vec![Dir::Start])
    }
}

impl Cwd {
    pub(crate) fn unknown() -> Cwd {
        Cwd(vec![Dir::Unknown])
    }

    pub(crate) fn dirs(&self) -> &[Dir] {
        &self.0
    }

    /// Either this state or `other`.
    pub(crate) fn union(&mut self, other: &Cwd) {
        for dir in &other.0 {
            if !self.0.contains(dir) {
                self.0.push(dir.clone());
            }
        }
        if self.0.contains(&Dir::Unknown) || self.0.len() > MAX_POSSIBLE {
            *self = Cwd::unknown();
        }
    }

    /// The state after `cd TARGET` succeeds (`None`: a run-time target).
    pub(crate) fn entered(&self, target: Option<&str>) -> Cwd {
        let Some(target) = target.filter(|t| !t.is_empty() && *t != "-") else {
            return Cwd::unknown();
        };
        if target.starts_with('/') {
            return Cwd(vec![Dir::Path {
                path: words::normalize_path(target),
                bare: false,
            }]);
        }
        // `cd name` searches CDPATH first; `cd ./name`, `cd ..` do not.
        let bare = !(target == "."
            || target == ".."
            || target.starts_with("./")
            || target.starts_with("../"));
        let mut next = Cwd(Vec::new());
        for dir in &self.0 {
            let entered = match dir {
                Dir::Start => Dir::Path {
                    path: words::normalize_path(target),
                    bare,
                },
                Dir::Path { path, bare: before } => Dir::Path {
                    path: words::normalize_path(&format!("{path}/{target}")),
                    bare: bare || *before,
                },
                Dir::Unknown => Dir::Unknown,
            };
            next.union(&Cwd(vec![entered]));
        }
        next
    }
}

/// The text a relative write target `rel` is matched as from `dir`
/// (`None` for an unknown directory).
pub(crate) fn resolve(dir: &Dir, rel: &str) -> Option<String> {
    match dir {
        Dir::Start => Some(words::normalize_path(rel)),
        Dir::Path { path, .. } => Some(words::normalize_path(&format!("{path}/{rel}"))),
        Dir::Unknown => None,
    }
}

/// The directory operand of `cd`/`pushd` after its options (`-L`, `-P`,
/// `-e`, `-@`, `--`): `Some(None)` when there is none (home, or the top of
/// the stack for `pushd`), `None` when the words are not understood.
pub(crate) fn operand(args: &[Option<String>]) -> Option<Option<&Option<String>>> {
    let mut i = 0;
    while let Some(Some(word)) = args.get(i) {
        if word == "--" {
            i += 1;
            break;
        }
        if word.len() > 1
            && word.starts_with('-')
            && word[1..]
                .bytes()
                .all(|b| matches!(b, b'L' | b'P' | b'e' | b'@'))
        {
            i += 1;
            continue;
        }
        break;
    }
    match args.len() - i.min(args.len()) {
        0 => Some(None),
        1 => Some(args.get(i)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_cd_moves_or_stays() {
        let start = Cwd::default();
        let mut after = start.entered(Some("/etc"));
        assert_eq!(
            resolve(&after.dirs()[0], "passwd").as_deref(),
            Some("/etc/passwd")
        );
        after.union(&start);
        assert_eq!(after.dirs().len(), 2);
        let deeper = after.entered(Some("../tmp"));
        let texts: Vec<_> = deeper
            .dirs()
            .iter()
            .filter_map(|d| resolve(d, "x"))
            .collect();
        assert_eq!(texts, ["/tmp/x", "../tmp/x"]);
        assert_eq!(start.entered(None), Cwd::unknown());
        assert_eq!(start.entered(Some("-")), Cwd::unknown());
        assert!(matches!(
            &start.entered(Some("build")).dirs()[0],
            Dir::Path { bare: true, .. }
        ));
    }

    #[test]
    fn options_before_the_directory_are_skipped() {
        let words = |list: &[&str]| -> Vec<Option<String>> {
            list.iter().map(|w| Some((*w).to_owned())).collect()
        };
        let args = words(&["-P", "--", "/x"]);
        assert_eq!(operand(&args), Some(Some(&Some("/x".to_owned()))));
        assert_eq!(operand(&words(&[])), Some(None));
        assert_eq!(operand(&words(&["a", "b"])), None);
    }
}
