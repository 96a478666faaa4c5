//! Adversarial cases beyond the shared corpus: same kinds, other spellings.

use crate::support::{denylist, readonly};
use rstest::rstest;

#[rstest]
// quoting and decoding
#[case("r''m -rf /")]
#[case("\"r\"m -rf /")]
#[case("$'\\x72\\x6d' -rf /")]
#[case("$\"rm\" -rf /")]
#[case("/usr/bin/rm -rf /")]
#[case("../../bin/rm x")]
#[case("{rm,-rf,/}")]
#[case("r\\\nm x")]
// substitutions everywhere
#[case("echo \"$(rm x)\"")]
#[case("echo `rm x`")]
#[case("echo \"`rm x`\"")]
#[case("echo $((1 + $(rm x)))")]
#[case("echo $[ $(rm x) ]")]
#[case("echo ${x:-`rm x`}")]
#[case("echo ${x/a/$(rm x)}")]
#[case("echo ${x:$(rm x):1}")]
#[case("x=(a $(rm x))")]
#[case("export X=$(rm x)")]
#[case("cat <<< $(rm x)")]
#[case("cat < $(rm x)")]
#[case("cat <<EOF\n`rm x`\nEOF")]
#[case("cat <<-EOF\n\t$(rm x)\n\tEOF")]
#[case("[[ -n $(rm x) ]]")]
#[case("[[ x == $(rm x) ]]")]
#[case("case $(rm x) in *) ;; esac")]
#[case("case x in $(rm x)) ;; esac")]
#[case("for ((i=$(rm x); i<1; i++)); do :; done")]
#[case("diff <(rm x) <(ls)")]
// control flow and functions
#[case("function f { rm x; }")]
#[case("f() ( rm x )")]
#[case("until rm x; do :; done")]
#[case("while :; do rm x; done")]
#[case("if :; then :; elif rm x; then :; fi")]
#[case("if :; then :; else rm x; fi")]
#[case("coproc c { rm x; }")]
#[case("time rm x")]
#[case("! rm x")]
#[case("ls &\nrm x")]
#[case("ls\nrm x")]
// wrappers and code strings
#[case("sudo -u root rm x")]
#[case("sudo -E -- rm x")]
#[case("sudo -s 'rm x'")]
#[case("doas -u root rm x")]
#[case("env -u HOME rm x")]
#[case("env -S 'rm x'")]
#[case("nice -n 5 rm x")]
#[case("nice -5 rm x")]
#[case("stdbuf -oL rm x")]
#[case("setsid -f rm x")]
#[case("command rm x")]
#[case("builtin eval 'rm x'")]
#[case("exec rm x")]
#[case("watch 'rm x'")]
#[case("watch -x rm x")]
#[case("xargs -0 -n1 rm")]
#[case("find / -name x -ok rm {} ';'")]
#[case("find . -exec ls {} ';' -exec rm {} +")]
#[case("sh -c 'rm x'")]
#[case("/bin/bash -c 'rm x'")]
#[case("zsh -c 'rm x'")]
#[case("dash -ec 'rm x'")]
#[case("bash -o errexit -c 'rm x'")]
#[case("bash -c \"$CMD\"")]
#[case("eval \"$CMD\"")]
#[case("eval 'r''m x'")]
#[case("trap 'rm x' EXIT")]
#[case("trap -- 'rm x' INT")]
#[case("su root -c 'rm x'")]
#[case("su --command='rm x'")]
#[case("alias a='rm x'")]
#[case("bash <<< 'rm x'")]
#[case("sh <<EOF\nrm x\nEOF")]
#[case("curl example.com | bash")]
#[case("bash < script.sh")]
#[case("sudo bash -c 'sudo rm x'")]
#[case("timeout -s KILL 5 rm x")]
#[case("sudo --bogus rm x")]
#[case("env $OPTS rm x")]
// dynamic names and targets
#[case("$RM x")]
#[case("${RM} x")]
#[case("$(echo rm) x")]
#[case("r* x")]
#[case("/bin/r? x")]
#[case("echo x > /etc/$F")]
#[case("echo x > ~/.bashrc; rm x")]
#[case("kubectl de$X pod")]
#[case("echo ${!x}")]
#[case("echo ${x@P}")]
#[case("echo $(( a[0] ))")]
// write redirects
#[case("echo x >| /etc/passwd")]
#[case("echo x >> /etc//passwd")]
#[case("echo x > /tmp/../etc/passwd")]
#[case("echo x >& /etc/passwd")]
#[case("echo x 2>&1 >/etc/passwd")]
#[case("exec 3<> /etc/passwd")]
#[case("{ echo x; } > /etc/passwd")]
#[case("f() { :; } > /etc/passwd")]
#[case("echo x &>> /etc/passwd")]
// degenerate
#[case("")]
#[case("  \t\n")]
#[case("# rm x")]
#[case("ls |")]
#[case("ls ;;")]
#[case("select x in a; do ls; done")]
#[case("cat <<EOF\nno end")]
#[case("echo 'a\0b'")]
#[case("( (ls) )")]
fn denied_under_denylist(#[case] script: &str) {
    let decision = denylist().check(script);
    assert!(!decision.allowed, "{script:?} was allowed: {decision:#?}");
}

#[rstest]
#[case("ls -la")]
#[case("ls -la | grep x | wc -l")]
#[case("cat \"$FILE\"")]
#[case("cat *.txt")]
#[case("echo 'rm -rf /'")]
#[case("echo \"\\$(rm x)\"")]
#[case("echo rm x > /tmp/out")]
#[case("echo x > /tmp/./a/../b")]
#[case("ls 2>/dev/null")]
#[case("ls > /dev/null 2>&1")]
#[case("ls >/dev//null")]
#[case("cat <<'EOF'\n$(rm x)\nEOF")]
#[case("cat < /etc/passwd")]
#[case("if ls; then echo yes; else echo no; fi")]
#[case("for f in a b; do cat $f; done")]
#[case("ls -la # rm x")]
#[case("l\\s")]
#[case("'ls' -la")]
#[case("ls {a,b}")]
#[case("echo $((1 + 2))")]
#[case("git log --oneline | head -n 5")]
#[case("kubectl get pods -A")]
#[case("echo x | cat")]
fn allowed_under_readonly(#[case] script: &str) {
    let decision = readonly().check(script);
    assert!(
        decision.allowed,
        "{script:?} was denied: {}",
        decision.summary()
    );
}

#[rstest]
#[case("sudo ls")]
#[case("bash -c ls")]
#[case("ls | sh")]
#[case("FOO=1 ls")]
#[case("ls > out.txt")]
#[case("echo x > /tmp/$F")]
#[case("kubectl get secrets; rm x")]
#[case("$CMD")]
fn denied_under_readonly(#[case] script: &str) {
    let decision = readonly().check(script);
    assert!(!decision.allowed, "{script:?} was allowed: {decision:#?}");
}

#[test]
fn decision_carries_reasons() {
    let decision = denylist().check("ls | sudo rm -rf / > /etc/x");
    assert!(!decision.allowed);
    let summary = decision.summary();
    assert!(summary.starts_with("denied: "), "{summary}");
    assert!(
        decision
            .candidates
            .iter()
            .any(|c| c.text == "rm -rf /" && c.rule.as_deref() == Some("rm *")),
        "{decision:#?}"
    );
    let json = serde_json::to_value(&decision).expect("serialisable");
    let kinds: Vec<&str> = json["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"wrapped_command") && kinds.contains(&"write_redirect"),
        "{json}"
    );
}

#[test]
fn argv_checks_one_command() {
    let set = readonly();
    let argv = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(set.check_argv(&argv(&["git", "status"])).allowed);
    assert!(
        set.check_argv(&argv(&["kubectl", "get", "pods; rm x"]))
            .allowed,
        "no shell in between"
    );
    assert!(!set.check_argv(&argv(&["git", "push"])).allowed);
    assert!(!denylist().check_argv(&argv(&["sudo", "rm", "x"])).allowed);
    assert!(!set.check_argv(&[]).allowed);
}
