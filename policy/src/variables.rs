//! Variables whose value decides what code runs.

/// Environment variables that make bash, the dynamic loader or a common
/// tool run code or load configuration of the caller's choosing: start-up
/// files and functions (`BASH_ENV`, `ENV`, `BASH_FUNC_*`), trace and prompt
/// hooks, option sets, word splitting, program lookup (`PATH`, `CDPATH`),
/// preloaded libraries (`LD_*`), git's configuration and helpers (`GIT_*`),
/// kubectl's exec plugins (`KUBECONFIG`), and the editors, pagers and
/// askpass programs tools start.
pub fn code_bearing(name: &str) -> bool {
    code_family(name).is_some()
}

/// The name, or the prefix of the family (`GIT_`), that makes `name`
/// [`code_bearing`]: what an allow rule must start with to allow it.
pub(crate) fn code_family(name: &str) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "IFS",
        "PATH",
        "CDPATH",
        "GLOBIGNORE",
        "BASH_XTRACEFD",
        "KUBECONFIG",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "SSH_ASKPASS",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PERL5OPT",
        "PERL5LIB",
        "RUBYOPT",
        "NODE_OPTIONS",
        "EXECIGNORE",
        "BASH_LOADABLES_PATH",
    ];
    const PREFIXES: &[&str] = &[
        "BASH_FUNC_",
        "LD_",
        "GIT_",
        "DYLD_",
        "HELM_",
        "DOCKER_",
        "TF_CLI_",
    ];
    NAMES
        .iter()
        .find(|known| **known == name)
        .or_else(|| PREFIXES.iter().find(|prefix| name.starts_with(**prefix)))
        .copied()
}
