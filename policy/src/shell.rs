//! Walking a bash script and turning every place a command can appear into
//! candidate texts for the rules.
//!
//! brush-parser produces the AST; words, arithmetic bodies and parameter
//! expansion operands are left as strings, which we parse again with its word
//! parser, recursing into every command substitution. Every AST node is
//! matched exhaustively, so a new node kind in a parser upgrade is a compile
//! error rather than a silent gap. Recursion is bounded by [`MAX_DEPTH`].

use crate::arith::{self, Bound};
use crate::cwd::{self, Cwd, Dir};
use crate::decision::{Candidate, CandidateKind};
use crate::rules::{Action, RuleSet};
use crate::variables;
use crate::words::{self, Atom, Frag, Word};
use crate::wrappers::{self, Runs, Stdin};
use brush_parser::ast;
use brush_parser::word::{ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;
use std::collections::HashMap;

/// Command substitutions and code strings (`$(...)`, `` `...` ``, `bash -c`,
/// `eval`) nested deeper than this are denied: each level re-parses the
/// text inside it, so the cost grows with the square of the depth
/// (docs/permission-file.md says how the limit was measured).
pub const MAX_SUBSTITUTION_NESTING: usize = 32;

/// Maximum nesting of compound commands, substitutions, wrappers and
/// expansions together: a guard for the walk's recursion, above what
/// [`MAX_SUBSTITUTION_NESTING`] substitutions need (a few levels each).
pub(crate) const MAX_DEPTH: usize = 4 * MAX_SUBSTITUTION_NESTING + 32;
/// Maximum chain of wrappers (`sudo env nice …`): each level copies the
/// words after it, so the chain is bounded on its own.
const MAX_WRAPPERS: usize = 48;
/// Up to this many candidates, duplicates are found by a scan.
const SCAN_LIMIT: usize = 16;

pub(crate) struct Checker<'a> {
    pub(crate) set: &'a RuleSet,
    pub(crate) candidates: Vec<Candidate>,
    /// Texts of `candidates` and their kinds, once there are more than
    /// [`SCAN_LIMIT`] (before that a scan of `candidates` is cheaper than
    /// hashing and cloning each text, which most scripts never need).
    seen: HashMap<String, Vec<CandidateKind>>,
    pub(crate) error: Option<String>,
    options: ParserOptions,
    /// > 0 while walking a code string: commands there are `CodeString`s.
    in_code: usize,
    /// What is known at the current point of the walk.
    flow: Flow,
    /// The `cd` of the command just walked: the directories after it
    /// succeeded and after it failed (for a following `&&` or `||`).
    last_cd: Option<(Cwd, Cwd)>,
    /// Above zero while walking code that runs later, at a point we do not
    /// know: function bodies, traps, aliases, prompt and callback code.
    deferred: usize,
    /// Facts about the whole script, settled once the walk is over.
    settle: Settle,
    /// The script being walked has `(` and `(` apart (`( (x) )`), which
    /// bash runs as subshells but brush reads as arithmetic: its
    /// arithmetic reads are not trusted.
    loose_parens: bool,
    /// Substitutions and code strings around the script being walked.
    nesting: usize,
    /// Wrappers around the command being walked.
    wrappers: usize,
}

/// What holds at one point of the walk, saved and restored around
/// subshells, branches and code that runs elsewhere.
#[derive(Debug, Clone, Default)]
struct Flow {
    /// Variables that hold a number the script assigned.
    bound: Bound,
    /// The directories the shell may be in.
    cwd: Cwd,
}

/// Checks that need the whole script: recorded during the walk, decided
/// by [`Checker::settle`].
#[derive(Debug, Default)]
struct Settle {
    /// Arithmetic reads of bound variables: (name, the arithmetic's text).
    reads: Vec<(String, String)>,
    /// Variables some assignment may give text (not a number).
    tainted: Vec<String>,
    /// A name reference exists: an assignment may set any variable.
    nameref: bool,
    /// Relative write targets: (target, runs later, reached by a bare `cd`).
    writes: Vec<(String, bool, bool)>,
    /// Some `cd`, `pushd` or `popd` appears.
    cd_seen: bool,
    /// A `cd` runs at a point the walk cannot place (in a loop, a function,
    /// deferred code): any relative write may land anywhere.
    cwd_lost: bool,
    /// The script names `CDPATH`, which redirects `cd name`.
    cdpath: bool,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(set: &'a RuleSet) -> Checker<'a> {
        Checker {
            set,
            candidates: Vec::new(),
            seen: HashMap::new(),
            error: None,
            options: ParserOptions::default(),
            in_code: 0,
            flow: Flow::default(),
            last_cd: None,
            deferred: 0,
            settle: Settle::default(),
            loose_parens: false,
            nesting: 0,
            wrappers: 0,
        }
    }

    /// Decide what needed the whole script: arithmetic reads of variables
    /// another assignment can give text, and relative writes whose
    /// directory a `cd` elsewhere in the script makes unknown.
    pub(crate) fn settle(&mut self) {
        let settle = std::mem::take(&mut self.settle);
        for (name, text) in &settle.reads {
            if settle.nameref || settle.tainted.contains(name) {
                self.dynamic(
                    CandidateKind::CodeString,
                    text.clone(),
                    &format!("arithmetic reads {name}, which the script can also set to text: bash evaluates that text as code"),
                );
            }
        }
        for (target, later, bare) in &settle.writes {
            if settle.cwd_lost || (*later && settle.cd_seen) || (*bare && settle.cdpath) {
                self.write_from_unknown_dir(target);
            }
        }
    }

    fn taint(&mut self, name: &str) {
        if !self.settle.tainted.iter().any(|t| t == name) {
            self.settle.tainted.push(name.to_owned());
        }
    }

    /// Walk `walk` in a subshell or other process: nothing it binds or
    /// changes directory to is seen after it.
    fn isolated(&mut self, walk: impl FnOnce(&mut Self)) {
        let saved = self.flow.clone();
        walk(self);
        self.flow = saved;
        self.last_cd = None;
    }

    /// Walk code that runs later, at a point we do not know.
    fn later(&mut self, walk: impl FnOnce(&mut Self)) {
        let saved = self.flow.clone();
        self.flow.bound = Bound::default();
        self.deferred += 1;
        walk(self);
        self.deferred -= 1;
        if self.flow.cwd != saved.cwd {
            self.settle.cwd_lost = true;
        }
        self.flow = saved;
        self.last_cd = None;
    }

    /// Walk a part that may not run (`branch`) or may run many times
    /// (`repeats`): names it binds are not bound after it, and the
    /// directory after it is either the one before or the one it leaves.
    fn maybe(&mut self, repeats: bool, walk: impl FnOnce(&mut Self)) {
        let saved = self.flow.clone();
        walk(self);
        if repeats && self.flow.cwd != saved.cwd {
            // A later pass runs the earlier part of the loop elsewhere.
            self.settle.cwd_lost = true;
        }
        let mut cwd = saved.cwd;
        cwd.union(&self.flow.cwd);
        self.flow = Flow {
            bound: saved.bound,
            cwd,
        };
        self.last_cd = None;
    }

    fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
    }

    fn too_deep(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            self.fail(format!("nesting deeper than {MAX_DEPTH} levels"));
            return true;
        }
        self.error.is_some()
    }

    // ----- candidates -------------------------------------------------------

    fn push(&mut self, candidate: Candidate) {
        // A denial is kept even when the same text was allowed as a
        // concrete text: a wrapper's unknown form must not be hidden by it.
        if self.is_seen(&candidate.text, candidate.kind)
            && (candidate.verdict == Action::Allow
                || !self.candidates.iter().any(|seen| {
                    seen.verdict == Action::Allow
                        && seen.kind == candidate.kind
                        && seen.text == candidate.text
                }))
        {
            return;
        }
        if candidate.text.contains("CDPATH") {
            self.settle.cdpath = true;
        }
        if self.candidates.len() == SCAN_LIMIT {
            for seen in &self.candidates {
                self.seen
                    .entry(seen.text.clone())
                    .or_default()
                    .push(seen.kind);
            }
        }
        if self.candidates.len() >= SCAN_LIMIT {
            self.seen
                .entry(candidate.text.clone())
                .or_default()
                .push(candidate.kind);
        }
        self.candidates.push(candidate);
    }

    /// Whether a candidate of this text and kind is already recorded.
    fn is_seen(&self, text: &str, kind: CandidateKind) -> bool {
        if self.candidates.len() <= SCAN_LIMIT {
            return self
                .candidates
                .iter()
                .any(|seen| seen.kind == kind && seen.text == text);
        }
        self.seen
            .get(text)
            .is_some_and(|kinds| kinds.contains(&kind))
    }

    /// Match a (possibly dynamic) text against the rules.
    pub(crate) fn decide(&mut self, kind: CandidateKind, text: &Word) {
        self.decide_unless(kind, text, false);
    }

    /// [`Self::decide`]; with `only_named`, a text that only the catch-all
    /// (or no rule) would deny is no candidate: for texts that run nothing,
    /// which a rule written for them may still deny (`AWS_*: deny`).
    fn decide_unless(&mut self, kind: CandidateKind, text: &Word, only_named: bool) {
        let display = words::display(text);
        if self.is_seen(&display, kind) {
            return;
        }
        let (verdict, rule, reason) = match words::static_text(text) {
            Some(s) => self.set.decide_text(&s),
            None => self.set.decide_shape(&words::shape(text)),
        };
        let by_catch_all = rule
            .as_deref()
            .is_none_or(|pattern| pattern.bytes().all(|b| b == b'*'));
        if only_named && verdict == Action::Deny && by_catch_all {
            return;
        }
        let dynamic = !words::is_static(text);
        self.push(Candidate {
            text: display,
            kind,
            dynamic,
            rule,
            verdict,
            reason,
        });
    }

    /// A part that cannot be checked statically: denied unless no rule can deny.
    pub(crate) fn dynamic(&mut self, kind: CandidateKind, text: String, reason: &str) {
        let verdict = if self.set.never_denies() {
            Action::Allow
        } else {
            Action::Deny
        };
        let rule = self.set.never_denies().then(|| "*".to_owned());
        self.push(Candidate {
            text,
            kind,
            dynamic: true,
            rule,
            verdict,
            reason: Some(reason.to_owned()),
        });
    }

    fn command_kind(&self) -> CandidateKind {
        if self.in_code > 0 {
            CandidateKind::CodeString
        } else {
            CandidateKind::Command
        }
    }

    // ----- scripts ----------------------------------------------------------

    /// Parse and walk a script (top level or a substitution / code string).
    pub(crate) fn script(&mut self, text: &str, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        if self.nesting > MAX_SUBSTITUTION_NESTING {
            self.fail(format!(
                "substitutions and code strings nested more than {MAX_SUBSTITUTION_NESTING} deep: \
                 the checker stops there to bound its cost (docs/permission-file.md)"
            ));
            return;
        }
        self.nesting += 1;
        self.nested_script(text, depth);
        self.nesting -= 1;
    }

    fn nested_script(&mut self, text: &str, depth: usize) {
        if text.contains("CDPATH") {
            self.settle.cdpath = true;
        }
        let estimate = nesting_estimate(text);
        if estimate > MAX_NESTING_ESTIMATE {
            self.fail(format!(
                "script too deeply nested or complex ({estimate} brackets and keywords, limit {MAX_NESTING_ESTIMATE})"
            ));
            return;
        }
        if estimate <= INLINE_NESTING {
            self.parse_and_walk(text, depth);
            return;
        }
        // The parser recurses once per nesting level; give it a stack sized
        // for the worst case instead of risking an overflow (an abort). The
        // stack is switched to on this thread (mapped, used, unmapped)
        // rather than a new thread, so the check neither pays for a thread
        // start nor allocates in another malloc arena. stacker switches
        // stacks on every platform the runner is built for (x86_64 and
        // aarch64 Linux and macOS).
        let stack = 16 * 1024 * 1024 + estimate * 48 * 1024;
        let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            stacker::grow(stack, || self.parse_and_walk(text, depth));
        }));
        if walked.is_err() {
            // A bug in the parser or the walk: what was found so far is
            // incomplete, so the command is refused.
            self.fail("could not analyse the script (the parser failed)".to_owned());
        }
    }

    fn parse_and_walk(&mut self, text: &str, depth: usize) {
        let loose = std::mem::replace(&mut self.loose_parens, loose_parens(text));
        self.parse(text, depth);
        self.loose_parens = loose;
    }

    fn parse(&mut self, text: &str, depth: usize) {
        let mut parser =
            brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), &self.options);
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.compound_list(list, depth + 1);
                }
            }
            Err(e) => self.fail(format!("does not parse as bash: {e}")),
        }
    }

    /// A code string run by a shell, eval, trap, alias, ...
    pub(crate) fn code(&mut self, code: &str, depth: usize) {
        if code.trim().is_empty() {
            return;
        }
        if code.contains('\0') {
            self.fail("code string contains a NUL byte".to_owned());
            return;
        }
        self.in_code += 1;
        // A code string may run in this shell (`eval`) or another (`bash
        // -c`): it binds nothing for what follows, and a `cd` in it leaves
        // either directory. A code string that does not parse is an error
        // inside the code; we deny rather than guess what the shell would do.
        self.maybe(false, |this| {
            this.flow.bound = Bound::default();
            this.script(code, depth + 1);
        });
        self.in_code -= 1;
    }

    fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            if matches!(separator, ast::SeparatorOperator::Async) {
                // `&` runs the list in a subshell.
                self.isolated(|this| this.and_or(and_or, depth));
            } else {
                self.and_or(and_or, depth);
            }
        }
    }

    /// `a && b || c`: only `a` surely runs; `b` runs where `a` succeeded
    /// (after `cd DIR`: in DIR) and `c` where it failed.
    fn and_or(&mut self, and_or: &ast::AndOrList, depth: usize) {
        self.last_cd = None;
        self.pipeline(&and_or.first, depth);
        if and_or.additional.is_empty() {
            return;
        }
        let sure = self.flow.bound.clone();
        let mut ends = self.flow.cwd.clone();
        for next in &and_or.additional {
            let (succeeded, failed) = self
                .last_cd
                .take()
                .unwrap_or_else(|| (self.flow.cwd.clone(), self.flow.cwd.clone()));
            let pipeline = match next {
                ast::AndOr::And(p) => {
                    self.flow.cwd = succeeded;
                    p
                }
                ast::AndOr::Or(p) => {
                    self.flow.cwd = failed;
                    p
                }
            };
            self.pipeline(pipeline, depth);
            ends.union(&self.flow.cwd);
        }
        self.flow = Flow {
            bound: sure,
            cwd: ends,
        };
        self.last_cd = None;
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        if let [command] = pipeline.seq.as_slice() {
            self.command(command, depth, false);
            return;
        }
        // Each stage runs in a subshell, but the last one may run in this
        // shell (`shopt -s lastpipe`): a `cd` there leaves either directory.
        for (stage, command) in pipeline.seq.iter().enumerate() {
            self.maybe(false, |this| this.command(command, depth, stage > 0));
        }
    }

    fn command(&mut self, command: &ast::Command, depth: usize, piped: bool) {
        if self.too_deep(depth) {
            return;
        }
        match command {
            ast::Command::Simple(simple) => self.simple_command(simple, depth, piped),
            ast::Command::Compound(compound, redirects) => {
                // The redirects are opened before the body runs (and moves
                // to another directory).
                if let Some(list) = redirects {
                    for redirect in &list.0 {
                        self.redirect(redirect, depth);
                    }
                }
                self.compound(compound, depth + 1);
            }
            ast::Command::Function(function) => {
                let ast::FunctionBody(body, redirects) = &function.body;
                // The body and its redirects run when it is called.
                self.later(|this| {
                    this.compound(body, depth + 1);
                    if let Some(list) = redirects {
                        for redirect in &list.0 {
                            this.redirect(redirect, depth);
                        }
                    }
                });
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.extended_test(&test.expr, depth + 1);
                if let Some(list) = redirects {
                    for redirect in &list.0 {
                        self.redirect(redirect, depth);
                    }
                }
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        match compound {
            ast::CompoundCommand::Arithmetic(arith) => self.arithmetic(&arith.expr.value, depth),
            ast::CompoundCommand::ArithmeticForClause(clause) => {
                // The initializer and the first test always run; the
                // update runs after a pass of the body that may have
                // ended early, so it sees only what the test left.
                for part in [&clause.initializer, &clause.condition]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&part.value, depth);
                }
                self.maybe(true, |this| {
                    if let Some(updater) = &clause.updater {
                        this.arithmetic(&updater.value, depth);
                    }
                    this.compound_list(&clause.body.list, depth + 1);
                });
            }
            ast::CompoundCommand::BraceGroup(group) => self.compound_list(&group.list, depth + 1),
            ast::CompoundCommand::Subshell(subshell) => {
                self.isolated(|this| this.compound_list(&subshell.list, depth + 1))
            }
            ast::CompoundCommand::ForClause(clause) => {
                self.taint(&clause.variable_name);
                for value in clause.values.iter().flatten() {
                    self.scan_word(&value.value, depth);
                }
                self.maybe(true, |this| {
                    this.compound_list(&clause.body.list, depth + 1)
                });
            }
            ast::CompoundCommand::CaseClause(clause) => {
                self.scan_word(&clause.value.value, depth);
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.scan_word(&pattern.value, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.maybe(false, |this| this.compound_list(list, depth + 1));
                    }
                }
            }
            ast::CompoundCommand::IfClause(clause) => {
                self.compound_list(&clause.condition, depth + 1);
                self.maybe(false, |this| this.compound_list(&clause.then, depth + 1));
                for else_clause in clause.elses.iter().flatten() {
                    self.maybe(false, |this| {
                        if let Some(condition) = &else_clause.condition {
                            this.compound_list(condition, depth + 1);
                        }
                        this.compound_list(&else_clause.body, depth + 1);
                    });
                }
            }
            ast::CompoundCommand::WhileClause(clause)
            | ast::CompoundCommand::UntilClause(clause) => {
                let ast::WhileOrUntilClauseCommand(condition, body, _) = clause;
                self.maybe(true, |this| {
                    this.compound_list(condition, depth + 1);
                    this.compound_list(&body.list, depth + 1);
                });
            }
            ast::CompoundCommand::Coprocess(coprocess) => {
                if let Some(name) = &coprocess.name {
                    self.taint(&name.value);
                }
                self.isolated(|this| this.command(&coprocess.body, depth + 1, false));
            }
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        match expr {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.extended_test(a, depth + 1);
                self.extended_test(b, depth + 1);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.extended_test(a, depth + 1)
            }
            ast::ExtendedTestExpr::UnaryTest(predicate, word) => {
                self.scan_word(&word.value, depth);
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    // `[[ -v 'a[$(cmd)]' ]]` evaluates the subscript.
                    for name in self.expand_word(&word.value, depth, false) {
                        self.variable_operand(&name, depth, false);
                    }
                }
            }
            ast::ExtendedTestExpr::BinaryTest(predicate, left, right) => {
                use ast::BinaryPredicate as P;
                let arithmetic = matches!(
                    predicate,
                    P::ArithmeticEqualTo
                        | P::ArithmeticNotEqualTo
                        | P::ArithmeticLessThan
                        | P::ArithmeticLessThanOrEqualTo
                        | P::ArithmeticGreaterThan
                        | P::ArithmeticGreaterThanOrEqualTo
                );
                for operand in [left, right] {
                    if arithmetic {
                        // [[ a -eq b ]] evaluates both sides as arithmetic.
                        self.arithmetic(&operand.value, depth);
                    } else {
                        self.scan_word(&operand.value, depth);
                    }
                }
            }
        }
    }

    // ----- simple commands --------------------------------------------------

    fn simple_command(&mut self, command: &ast::SimpleCommand, depth: usize, piped: bool) {
        let mut assignments: Vec<Word> = Vec::new();
        let mut argv: Vec<Word> = Vec::new();
        let mut vanishing: Vec<bool> = Vec::new();
        let mut redirects: Vec<&ast::IoRedirect> = Vec::new();
        for item in command.prefix.iter().flat_map(|p| p.0.iter()) {
            self.command_item(
                item,
                true,
                depth,
                &mut assignments,
                &mut argv,
                &mut vanishing,
                &mut redirects,
            );
        }
        if let Some(name) = &command.word_or_name {
            for (word, vanishes) in self.expand_word_flagged(&name.value, depth, true) {
                argv.push(word);
                vanishing.push(vanishes);
            }
        }
        for item in command.suffix.iter().flat_map(|s| s.0.iter()) {
            self.command_item(
                item,
                false,
                depth,
                &mut assignments,
                &mut argv,
                &mut vanishing,
                &mut redirects,
            );
        }
        // A pipe, a file or an inherited stdin are all invisible to us; only
        // a here-document or here-string on fd 0 gives a static script.
        let mut stdin = if piped { Stdin::Pipe } else { Stdin::Unknown };
        for redirect in &redirects {
            if let Some(source) = self.redirect(redirect, depth) {
                stdin = source;
            }
        }
        if self.error.is_some() {
            return;
        }
        if argv.is_empty() {
            // Assignments alone run no command (their substitutions were
            // checked above): the catch-all does not deny them, but a rule
            // written for them does, and a variable that decides what code
            // runs later (`PATH`, `IFS`, `BASH_ENV`, ...) needs a rule that
            // allows it. `n=0` sets n to a number for what follows.
            let mut code_bearing = false;
            for item in command.prefix.iter().flat_map(|p| p.0.iter()) {
                if let ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) = item {
                    let (ast::AssignmentName::VariableName(name)
                    | ast::AssignmentName::ArrayElementName(name, _)) = &assignment.name;
                    code_bearing |= variables::code_bearing(name);
                    if let Some(name) = number_assignment(assignment) {
                        self.flow.bound.insert(name);
                    }
                }
            }
            if !assignments.is_empty() {
                let text = words::join(&assignments);
                let kind = self.command_kind();
                self.decide_unless(kind, &text, !code_bearing);
            }
            return;
        }
        let kind = self.command_kind();
        // An unquoted `$F` may expand to no word at all: the command without
        // such words must be allowed too (`head $(cat a)` may run `head`).
        if vanishing.iter().skip(1).any(|&v| v) && !vanishing.first().copied().unwrap_or(false) {
            let reduced: Vec<Word> = argv
                .iter()
                .zip(&vanishing)
                .enumerate()
                .filter(|(i, (_, &v))| *i == 0 || !v)
                .map(|(_, (w, _))| w.clone())
                .collect();
            let mut full = assignments.clone();
            full.extend(reduced.iter().cloned());
            self.decide(kind, &words::join(&full));
            if !assignments.is_empty() {
                self.decide(kind, &words::join(&reduced));
            }
        }
        self.command_words(&assignments, argv, kind, &stdin, depth);
    }

    // The accumulators are the simple command's parts; bundling them in a
    // struct would only rename the same arguments.
    #[allow(clippy::too_many_arguments)]
    fn command_item<'b>(
        &mut self,
        item: &'b ast::CommandPrefixOrSuffixItem,
        in_prefix: bool,
        depth: usize,
        assignments: &mut Vec<Word>,
        argv: &mut Vec<Word>,
        vanishing: &mut Vec<bool>,
        redirects: &mut Vec<&'b ast::IoRedirect>,
    ) {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
            ast::CommandPrefixOrSuffixItem::Word(word) => {
                for (word, vanishes) in self.expand_word_flagged(&word.value, depth, true) {
                    argv.push(word);
                    vanishing.push(vanishes);
                }
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                self.assignment(assignment, depth);
                // Assignments are not brace-expanded.
                let expanded = self.expand_word(&word.value, depth, false);
                if in_prefix && argv.is_empty() {
                    assignments.extend(expanded);
                } else {
                    vanishing.extend(expanded.iter().map(|_| false));
                    argv.extend(expanded);
                }
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.isolated(|this| this.compound_list(&subshell.list, depth + 1));
                argv.push(words::dyn_word("<(...)"));
                vanishing.push(false);
            }
        }
    }

    /// One command of static or dynamic words run without a shell in
    /// front of it (an argv, or a command of the lexical fast path).
    pub(crate) fn argv(&mut self, argv: Vec<Word>) {
        self.command_words(&[], argv, CandidateKind::Command, &Stdin::Unknown, 0);
    }

    /// Candidates for one command: full text, without assignments, with the
    /// basename of argv[0], plus what a wrapper or code runner runs.
    fn command_words(
        &mut self,
        assignments: &[Word],
        argv: Vec<Word>,
        kind: CandidateKind,
        stdin: &Stdin,
        depth: usize,
    ) {
        if self.too_deep(depth) || argv.is_empty() {
            return;
        }
        // Leading assignments and the command, as one text (most commands
        // have none: no copy of the words then).
        let full = if assignments.is_empty() {
            words::join(&argv)
        } else {
            let mut full: Vec<Word> = assignments.to_vec();
            full.extend(argv.iter().cloned());
            words::join(&full)
        };
        let Some(name) = words::static_text(&argv[0]) else {
            let text = words::display(&full);
            self.dynamic(kind, text, "the command name is only known at run time");
            return;
        };
        self.decide(kind, &full);
        if !assignments.is_empty() {
            self.decide(kind, &words::join(&argv));
        }
        let base = name.rsplit('/').next().unwrap_or(&name).to_owned();
        if base != name && !base.is_empty() {
            let mut reduced = argv.clone();
            reduced[0] = words::lit(&base);
            self.decide(kind, &words::join(&reduced));
        }
        self.evaluated_operands(&base, &argv, depth);
        if matches!(base.as_str(), "cd" | "pushd" | "popd") {
            self.change_dir(&base, &argv, kind);
        }
        let runs = wrappers::analyse(&base, &argv, stdin);
        if matches!(base.as_str(), "trap" | "alias") {
            // Trap and alias code runs later, where it is triggered.
            self.later(|this| this.runs(runs, &argv, depth));
        } else {
            self.runs(runs, &argv, depth);
        }
    }

    /// `cd DIR`, `pushd DIR`, `popd`: where relative writes land after it.
    fn change_dir(&mut self, name: &str, argv: &[Word], kind: CandidateKind) {
        self.settle.cd_seen = true;
        if self.deferred > 0 {
            self.settle.cwd_lost = true;
        }
        let args: Vec<Option<String>> = argv[1..].iter().map(words::static_text).collect();
        let entered = match cwd::operand(&args) {
            // A `cd` a wrapper runs (`env cd`) is another program's, but
            // `builtin cd` and `command cd` are this shell's: unknown.
            _ if kind == CandidateKind::WrappedCommand => Cwd::unknown(),
            // `popd`, `pushd` alone or `pushd +N` rotate the stack.
            _ if name == "popd" => Cwd::unknown(),
            Some(Some(Some(dir))) if name == "pushd" && dir.starts_with(['+', '-']) => {
                Cwd::unknown()
            }
            Some(None) if name == "pushd" => Cwd::unknown(),
            Some(Some(dir)) => self.flow.cwd.entered(dir.as_deref()),
            Some(None) => self.flow.cwd.entered(None),
            None => Cwd::unknown(),
        };
        let before = self.flow.cwd.clone();
        // The `cd` may fail and leave the shell where it was.
        self.flow.cwd.union(&entered);
        self.last_cd = Some((entered, before));
    }

    /// Check what a wrapper or code runner runs: the walker's only use of
    /// the wrapper analysis, which in turn knows nothing of the walker.
    fn runs(&mut self, runs: Runs, argv: &[Word], depth: usize) {
        match runs {
            Runs::Nothing => {}
            Runs::Command(_) if self.wrappers >= MAX_WRAPPERS => {
                self.fail(format!("wrappers nested more than {MAX_WRAPPERS} deep"));
            }
            Runs::Command(inner) => {
                self.wrappers += 1;
                self.command_words(
                    &[],
                    inner,
                    CandidateKind::WrappedCommand,
                    &Stdin::Unknown,
                    depth + 1,
                );
                self.wrappers -= 1;
            }
            Runs::Code(code) => {
                self.code_word(&code, depth, "the code string is only known at run time")
            }
            Runs::Several(items) => {
                for item in items {
                    self.runs(item, argv, depth);
                }
            }
            Runs::Unknown(reason) => {
                let text = words::display(&words::join(argv));
                self.dynamic(CandidateKind::WrappedCommand, text, &reason);
            }
            Runs::Shell(input) => {
                self.interactive_shell(argv);
                self.runs(*input, argv, depth);
            }
        }
    }

    /// A shell started to read commands (`sudo -i`, `su -`, `bash -l`):
    /// only an allow rule naming this very form (the pattern starts with
    /// its whole text, `argv[0]` as a basename) allows it.
    fn interactive_shell(&mut self, argv: &[Word]) {
        let mut reduced = argv.to_vec();
        if let Some(name) = argv.first().and_then(words::static_text) {
            reduced[0] = words::lit(name.rsplit('/').next().unwrap_or(&name));
        }
        let text = words::join(&reduced);
        let display = words::display(&text);
        let Some(form) = words::static_text(&text) else {
            self.dynamic(
                CandidateKind::InteractiveShell,
                display,
                "an interactive or login shell with parts only known at run time",
            );
            return;
        };
        let (verdict, rule, reason) = self.set.decide_named(
            &form,
            |rule| rule.pattern().starts_with(form.as_str()),
            "starts an interactive or login shell, which runs start-up files and reads commands the script does not show: only a rule naming this form allows it",
        );
        self.push(Candidate {
            text: display,
            kind: CandidateKind::InteractiveShell,
            dynamic: false,
            rule,
            verdict,
            reason,
        });
    }

    /// Operands that builtins evaluate as code although they are not
    /// commands: variable names with a subscript (bash evaluates
    /// `NAME[SUBSCRIPT]`'s subscript as arithmetic, command substitutions
    /// included: `printf -v 'a[$(id)]' x` runs `id`), `let`'s expressions,
    /// the callbacks of `mapfile -C` and `compgen`/`complete -C`, and the
    /// integer and name-reference attributes of `declare`, which make later
    /// values evaluated too. `hash -p` binds a name to any program.
    fn evaluated_operands(&mut self, name: &str, argv: &[Word], depth: usize) {
        let args = &argv[1..];
        let text = |word: &Word| words::static_text(word);
        let after = |flag: &str| -> Vec<&Word> {
            args.windows(2)
                .filter(|pair| text(&pair[0]).as_deref() == Some(flag))
                .map(|pair| &pair[1])
                .collect()
        };
        let operands = || {
            args.iter()
                .filter(|word| !text(word).is_some_and(|t| t.starts_with('-')))
        };
        match name {
            "test" | "[" => {
                for word in after("-v").into_iter().chain(after("-R")) {
                    self.variable_operand(word, depth, false);
                }
            }
            "printf" => {
                for word in after("-v") {
                    self.variable_operand(word, depth, true);
                }
                // `-vNAME`: the name attached to the option.
                for word in args {
                    if let Some(Frag::Lit(head)) = word.first() {
                        if let Some(name) = head.strip_prefix("-v").filter(|n| !n.is_empty()) {
                            let mut operand = words::lit(name);
                            operand.extend(word[1..].iter().cloned());
                            self.variable_operand(&operand, depth, true);
                        }
                    }
                }
            }
            "wait" => {
                for word in after("-p") {
                    self.variable_operand(word, depth, true);
                }
            }
            "read" => {
                // Options that take a value which is not a name (`-p
                // PROMPT`, `-d DELIM` …); `-a ARRAY` takes a name.
                let mut words = args.iter();
                while let Some(word) = words.next() {
                    match text(word) {
                        Some(option) if option.starts_with('-') && option != "-" => {
                            // As getopts reads it: in `-rp`, `r` is a flag
                            // and `p` takes the next word; in `-pX`, `X`.
                            let flags = &option[1..];
                            if let Some(at) = flags.find(|c| "dinNptu".contains(c)) {
                                if at + 1 == flags.len() {
                                    words.next();
                                }
                            }
                        }
                        _ => self.variable_operand(word, depth, true),
                    }
                }
            }
            "unset" | "export" | "readonly" => {
                for word in operands() {
                    self.variable_operand(word, depth, false);
                }
            }
            // `getopts OPTSTRING NAME [ARG…]`: the arguments are data.
            "getopts" => {
                if let Some(word) = args.get(1) {
                    self.variable_operand(word, depth, true);
                }
            }
            "declare" | "typeset" | "local" => {
                let flags: String = args
                    .iter()
                    .filter_map(text)
                    .filter(|t| t.starts_with('-') || t.starts_with('+'))
                    .collect();
                if flags.contains('i') {
                    self.dynamic(
                        CandidateKind::CodeString,
                        words::display(&words::join(argv)),
                        "an integer variable evaluates every value given to it as arithmetic",
                    );
                }
                if flags.contains('n') {
                    // Through a name reference any assignment can set any
                    // variable.
                    self.settle.nameref = true;
                }
                for word in operands() {
                    self.variable_operand(word, depth, false);
                    if flags.contains('n') {
                        // A name reference's value is a variable name.
                        if let Some((_, value)) =
                            text(word).as_deref().and_then(|t| t.split_once('='))
                        {
                            self.variable_operand(&words::lit(value), depth, false);
                        }
                    }
                }
            }
            "let" => {
                for word in args {
                    match text(word) {
                        Some(expression) => self.arithmetic(&expression, depth + 1),
                        None => self.dynamic(
                            CandidateKind::CodeString,
                            words::display(word),
                            "an arithmetic expression only known at run time",
                        ),
                    }
                }
            }
            "mapfile" | "readarray" | "compgen" | "complete" => {
                for word in after("-C") {
                    self.later(|this| {
                        this.code_word(word, depth, "the callback is only known at run time")
                    });
                }
                // `compgen -V NAME` stores its results in NAME.
                for word in after("-V") {
                    self.variable_operand(word, depth, true);
                }
                if matches!(name, "mapfile" | "readarray") {
                    for word in operands() {
                        self.variable_operand(word, depth, true);
                    }
                }
            }
            // `-p PATH NAME`, alone or among other flags (`-rp`).
            "hash"
                if args.iter().any(|word| {
                    text(word).is_some_and(|t| t.starts_with('-') && t.contains('p'))
                }) =>
            {
                self.dynamic(
                    CandidateKind::WrappedCommand,
                    words::display(&words::join(argv)),
                    "hash -p makes a command name run any program",
                );
            }
            _ => {}
        }
    }

    /// A word that is shell code: checked as a script when static, a
    /// dynamic code string (`why`) when not.
    fn code_word(&mut self, word: &Word, depth: usize, why: &str) {
        match words::static_text(word) {
            Some(code) => self.code(&code, depth + 1),
            None => self.dynamic(CandidateKind::CodeString, words::display(word), why),
        }
    }

    /// A variable name that bash resolves: `NAME[SUBSCRIPT]` (before any
    /// `=VALUE`) has its subscript checked as arithmetic; a name only known
    /// at run time could carry such a subscript.
    /// `text`: the builtin stores text of its own in the variable (`read`,
    /// `mapfile`, `printf -v`); otherwise only a `NAME=VALUE` operand sets
    /// it, to a number or to text.
    fn variable_operand(&mut self, word: &Word, depth: usize, text: bool) {
        // The name is what bash resolves; a value after `=` is only data
        // (`export PATH=$PATH:/x`), so the name may be static even when
        // the word is not.
        let name = match (words::static_text(word), word.first()) {
            (Some(text), _) => Some(
                text.split_once('=')
                    .map_or(text.clone(), |(name, _)| name.to_owned()),
            ),
            (None, Some(Frag::Lit(head))) => head.split_once('=').map(|(name, _)| name.to_owned()),
            (None, _) => None,
        };
        let value =
            words::static_text(word).and_then(|t| t.split_once('=').map(|(_, v)| v.to_owned()));
        let sets_text = text
            || match &value {
                Some(value) => !arith::is_number(value),
                None => words::display(word).contains('='),
            };
        match name {
            Some(name) => {
                if sets_text {
                    let base = name.split_once('[').map_or(name.as_str(), |(base, _)| base);
                    self.taint(base);
                }
                if let Some((_, rest)) = name.split_once('[') {
                    let subscript = rest.rsplit_once(']').map_or(rest, |(inside, _)| inside);
                    self.subscript(subscript, depth);
                }
            }
            None => self.dynamic(
                CandidateKind::CodeString,
                words::display(word),
                "a variable name only known at run time can carry a subscript, which bash evaluates as code",
            ),
        }
    }

    fn assignment(&mut self, assignment: &ast::Assignment, depth: usize) {
        if let ast::AssignmentName::ArrayElementName(_, index) = &assignment.name {
            self.subscript(index, depth);
        }
        if number_assignment(assignment).is_none() {
            let (ast::AssignmentName::VariableName(name)
            | ast::AssignmentName::ArrayElementName(name, _)) = &assignment.name;
            self.taint(name);
        }
        if let (ast::AssignmentName::VariableName(name), ast::AssignmentValue::Scalar(value)) =
            (&assignment.name, &assignment.value)
        {
            // Values bash expands again when it uses them (a trace line, a
            // prompt, a shell's start-up), or runs as a command: what they
            // hold runs later, so it is checked now.
            let later = matches!(
                name.as_str(),
                "PS0" | "PS1" | "PS2" | "PS3" | "PS4" | "BASH_ENV" | "ENV"
            );
            if later || name == "PROMPT_COMMAND" {
                for word in self.expand_word(&value.value, depth, false) {
                    match words::static_text(&word) {
                        Some(text) if name == "PROMPT_COMMAND" => {
                            self.later(|this| this.code(&text, depth + 1))
                        }
                        Some(text) => self.later(|this| this.scan_word(&text, depth + 1)),
                        None => self.dynamic(
                            CandidateKind::CodeString,
                            format!("{name}={}", words::display(&word)),
                            "the value is expanded again or run later, and is only known at run time",
                        ),
                    }
                }
            }
        }
        match &assignment.value {
            ast::AssignmentValue::Scalar(_) => {}
            ast::AssignmentValue::Array(elements) => {
                for (key, _value) in elements {
                    if let Some(key) = key {
                        self.subscript(&key.value, depth);
                    }
                }
            }
        }
    }

    // ----- redirects --------------------------------------------------------

    /// Check a redirect; returns the new standard input if it sets one.
    fn redirect(&mut self, redirect: &ast::IoRedirect, depth: usize) -> Option<Stdin> {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match redirect {
            ast::IoRedirect::File(fd, kind, target) => {
                let input = fd.is_none_or(|fd| fd == 0);
                match (kind, target) {
                    (_, T::ProcessSubstitution(_, subshell)) => {
                        self.compound_list(&subshell.list, depth + 1);
                        None
                    }
                    (K::Read, T::Filename(word)) => {
                        self.scan_word(&word.value, depth);
                        input.then_some(Stdin::Unknown)
                    }
                    (K::Write | K::Append | K::Clobber | K::ReadAndWrite, T::Filename(word)) => {
                        self.write_target(&word.value, depth);
                        (input && matches!(kind, K::ReadAndWrite)).then_some(Stdin::Unknown)
                    }
                    (K::DuplicateOutput, T::Duplicate(word)) => {
                        // `>&WORD`: a file unless WORD is a digit string or '-'.
                        let expanded = self.expand_word(&word.value, depth, false);
                        let is_fd = expanded.len() == 1
                            && words::static_text(&expanded[0]).is_some_and(|s| {
                                s == "-" || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                            });
                        if !is_fd {
                            self.write_target(&word.value, depth);
                        }
                        None
                    }
                    (K::DuplicateInput, T::Duplicate(word)) => {
                        self.scan_word(&word.value, depth);
                        input.then_some(Stdin::Unknown)
                    }
                    (_, T::Fd(_)) => input
                        .then_some(Stdin::Unknown)
                        .filter(|_| matches!(kind, K::DuplicateInput)),
                    (_, T::Filename(word) | T::Duplicate(word)) => {
                        // Any other combination: treat the target as written.
                        self.write_target(&word.value, depth);
                        None
                    }
                }
            }
            ast::IoRedirect::OutputAndError(word, _append) => {
                self.write_target(&word.value, depth);
                None
            }
            ast::IoRedirect::HereString(fd, word) => {
                let expanded = self.expand_word(&word.value, depth, false);
                let text = words::join(&expanded);
                let source = match words::static_text(&text) {
                    Some(s) => Stdin::Static(format!("{s}\n")),
                    None => Stdin::Dynamic(words::display(&text)),
                };
                fd.is_none_or(|fd| fd == 0).then_some(source)
            }
            ast::IoRedirect::HereDocument(fd, doc) => {
                let body = &doc.doc.value;
                let source = if doc.requires_expansion {
                    let body = remove_line_continuations(body);
                    match brush_parser::word::parse_heredoc(&body, &self.options) {
                        Ok(pieces) => {
                            let atoms = self.pieces(&body, &pieces, depth, true);
                            let mut text = String::new();
                            let mut dynamic = false;
                            for atom in atoms {
                                match atom {
                                    Atom::Char(c) => text.push(c),
                                    Atom::Quoted(s) => text.push_str(&s),
                                    Atom::Dyn(_) => dynamic = true,
                                }
                            }
                            if dynamic {
                                Stdin::Dynamic(body.clone())
                            } else {
                                Stdin::Static(text)
                            }
                        }
                        Err(e) => {
                            self.fail(format!("here-document body does not parse: {e}"));
                            Stdin::Unknown
                        }
                    }
                } else {
                    Stdin::Static(body.clone())
                };
                fd.is_none_or(|fd| fd == 0).then_some(source)
            }
        }
    }

    fn write_target(&mut self, raw: &str, depth: usize) {
        let expanded = self.expand_word(raw, depth, false);
        let target = if expanded.len() == 1 {
            words::static_text(&expanded[0])
        } else {
            None
        };
        let Some(path) = target else {
            self.dynamic(
                CandidateKind::WriteRedirect,
                format!("> {raw}"),
                "the write target is only known at run time",
            );
            return;
        };
        if path.starts_with('/') {
            self.write_to(&words::normalize_path(&path));
            return;
        }
        // Relative: from every directory the shell may be in here, and
        // recorded in case a `cd` elsewhere moves it (settled at the end).
        let dirs = self.flow.cwd.dirs().to_vec();
        let mut bare = false;
        for dir in &dirs {
            bare |= matches!(dir, Dir::Path { bare: true, .. });
            match cwd::resolve(dir, &path) {
                Some(resolved) => self.write_to(&resolved),
                None => self.write_from_unknown_dir(&path),
            }
        }
        self.settle.writes.push((path, self.deferred > 0, bare));
    }

    /// A write to a normalised path.
    fn write_to(&mut self, normalized: &str) {
        if normalized == "/dev/null" {
            return;
        }
        if words::another_name_for_a_path(normalized) {
            self.dynamic(
                CandidateKind::WriteRedirect,
                format!("> {normalized}"),
                "a path through /proc/PID/root or /proc/PID/cwd names a file elsewhere",
            );
            return;
        }
        self.decide(
            CandidateKind::WriteRedirect,
            &words::lit(&format!("> {normalized}")),
        );
    }

    /// A relative write from a directory only known at run time: matched as
    /// `> *TARGET`, so a deny rule for writes that some directory could
    /// reach denies it, and only an allow rule covering every directory
    /// allows it.
    fn write_from_unknown_dir(&mut self, rel: &str) {
        let mut word = words::lit("> ");
        word.push(Frag::Dyn("$PWD/".to_owned()));
        words::push_lit(&mut word, &words::normalize_path(rel));
        self.decide(CandidateKind::WriteRedirect, &word);
    }

    // ----- words ------------------------------------------------------------

    /// Expand one shell word statically, checking every substitution in it.
    pub(crate) fn expand_word(&mut self, raw: &str, depth: usize, braces: bool) -> Vec<Word> {
        self.expand_word_flagged(raw, depth, braces)
            .into_iter()
            .map(|(w, _)| w)
            .collect()
    }

    /// [`Self::expand_word`], with whether each word may vanish when empty.
    fn expand_word_flagged(&mut self, raw: &str, depth: usize, braces: bool) -> Vec<(Word, bool)> {
        if self.too_deep(depth) {
            return vec![(words::dyn_word(raw), false)];
        }
        // Most words of a script (`grep`, `-n`, `file.txt`, `/dev/null`)
        // expand to themselves: they skip the word parser, which would
        // rebuild them a character at a time.
        if words::is_plain(raw) {
            return vec![(words::lit(raw), false)];
        }
        self.expand_parsed_word(raw, depth, braces)
    }

    /// [`Self::expand_word_flagged`] by the word parser, whatever the word.
    fn expand_parsed_word(&mut self, raw: &str, depth: usize, braces: bool) -> Vec<(Word, bool)> {
        match brush_parser::word::parse(raw, &self.options) {
            Ok(pieces) => {
                let atoms = self.pieces(raw, &pieces, depth, false);
                match words::finish_flagged(atoms, raw, braces) {
                    Ok(expanded) => expanded,
                    Err(e) => {
                        self.fail(e);
                        vec![(words::dyn_word(raw), false)]
                    }
                }
            }
            Err(e) => {
                self.fail(format!("word {raw:?} does not parse: {e}"));
                vec![(words::dyn_word(raw), false)]
            }
        }
    }

    /// Check the substitutions of a word whose value does not matter.
    fn scan_word(&mut self, raw: &str, depth: usize) {
        if self.too_deep(depth) || words::is_plain(raw) {
            return;
        }
        match brush_parser::word::parse(raw, &self.options) {
            Ok(pieces) => {
                self.pieces(raw, &pieces, depth, false);
            }
            Err(e) => self.fail(format!("word {raw:?} does not parse: {e}")),
        }
    }

    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        depth: usize,
        quoted: bool,
    ) -> Vec<Atom> {
        let mut atoms = Vec::new();
        for piece in pieces {
            let source = raw
                .get(piece.start_index..piece.end_index)
                .unwrap_or("$...");
            self.piece(raw, source, &piece.piece, depth, quoted, &mut atoms);
        }
        atoms
    }

    fn piece(
        &mut self,
        raw: &str,
        source: &str,
        piece: &WordPiece,
        depth: usize,
        quoted: bool,
        atoms: &mut Vec<Atom>,
    ) {
        match piece {
            WordPiece::Text(text) => {
                if quoted {
                    atoms.push(Atom::Quoted(text.clone()));
                } else {
                    atoms.extend(text.chars().map(Atom::Char));
                }
            }
            WordPiece::SingleQuotedText(text) => atoms.push(Atom::Quoted(text.clone())),
            WordPiece::AnsiCQuotedText(text) => {
                atoms.push(Atom::Quoted(words::decode_ansi_c(text)))
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                atoms.push(Atom::Quoted(String::new()));
                for p in inner {
                    let inner_source = raw.get(p.start_index..p.end_index).unwrap_or("$...");
                    self.piece(raw, inner_source, &p.piece, depth, true, atoms);
                }
            }
            WordPiece::TildeExpansion(_) => atoms.push(Atom::Dyn(source.to_owned())),
            WordPiece::ParameterExpansion(expr) => {
                self.parameter(expr, source, depth);
                atoms.push(Atom::Dyn(source.to_owned()));
            }
            WordPiece::CommandSubstitution(code) => {
                let saved = self.in_code;
                self.in_code = 0;
                self.isolated(|this| this.script(code, depth + 1));
                self.in_code = saved;
                atoms.push(Atom::Dyn(source.to_owned()));
            }
            WordPiece::BackquotedCommandSubstitution(code) => {
                let code = unescape_backquoted(code);
                let saved = self.in_code;
                self.in_code = 0;
                self.isolated(|this| this.script(&code, depth + 1));
                self.in_code = saved;
                atoms.push(Atom::Dyn(source.to_owned()));
            }
            WordPiece::EscapeSequence(escape) => {
                let mut chars = escape.chars();
                chars.next();
                let rest: String = chars.collect();
                if rest != "\n" {
                    atoms.push(Atom::Quoted(rest));
                }
            }
            WordPiece::ArithmeticExpression(expr) => {
                self.arithmetic(&expr.value, depth);
                // Always expands to a number: never to no word at all.
                atoms.push(Atom::Quoted(String::new()));
                atoms.push(Atom::Dyn(source.to_owned()));
            }
        }
    }

    fn parameter(&mut self, expr: &ParameterExpr, source: &str, depth: usize) {
        use brush_parser::word::Parameter;
        let (parameter, indirect) = match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect,
            }
            | ParameterExpr::UseDefaultValues {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::AssignDefaultValues {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::UseAlternativeValue {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::ParameterLength {
                parameter,
                indirect,
            }
            | ParameterExpr::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::Substring {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::Transform {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::UppercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::UppercasePattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::LowercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::LowercasePattern {
                parameter,
                indirect,
                ..
            }
            | ParameterExpr::ReplaceSubstring {
                parameter,
                indirect,
                ..
            } => (Some(parameter), *indirect),
            ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => (None, false),
        };
        if indirect {
            // ${!name} expands the value of name as a parameter reference,
            // including array subscripts, which can run substitutions.
            self.dynamic(
                CandidateKind::CodeString,
                source.to_owned(),
                "indirect expansion evaluates a name stored in a variable",
            );
        }
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
            self.subscript(index, depth);
        }
        if let ParameterExpr::AssignDefaultValues {
            parameter: Parameter::Named(name) | Parameter::NamedWithIndex { name, .. },
            ..
        } = expr
        {
            // `${n:=TEXT}` assigns TEXT.
            self.taint(name);
        }
        let operands: Vec<&Option<String>> = match expr {
            ParameterExpr::UseDefaultValues {
                default_value: w, ..
            }
            | ParameterExpr::AssignDefaultValues {
                default_value: w, ..
            }
            | ParameterExpr::IndicateErrorIfNullOrUnset {
                error_message: w, ..
            }
            | ParameterExpr::UseAlternativeValue {
                alternative_value: w,
                ..
            }
            | ParameterExpr::RemoveSmallestSuffixPattern { pattern: w, .. }
            | ParameterExpr::RemoveLargestSuffixPattern { pattern: w, .. }
            | ParameterExpr::RemoveSmallestPrefixPattern { pattern: w, .. }
            | ParameterExpr::RemoveLargestPrefixPattern { pattern: w, .. }
            | ParameterExpr::UppercaseFirstChar { pattern: w, .. }
            | ParameterExpr::UppercasePattern { pattern: w, .. }
            | ParameterExpr::LowercaseFirstChar { pattern: w, .. }
            | ParameterExpr::LowercasePattern { pattern: w, .. } => vec![w],
            ParameterExpr::ReplaceSubstring { replacement, .. } => vec![replacement],
            _ => vec![],
        };
        for operand in operands.into_iter().flatten() {
            self.scan_word(operand, depth + 1);
        }
        match expr {
            ParameterExpr::ReplaceSubstring { pattern, .. } => self.scan_word(pattern, depth + 1),
            ParameterExpr::Substring { offset, length, .. } => {
                self.arithmetic(&offset.value, depth + 1);
                if let Some(length) = length {
                    self.arithmetic(&length.value, depth + 1);
                }
            }
            ParameterExpr::Transform {
                op: ParameterTransformOp::PromptExpand,
                ..
            } => self.dynamic(
                CandidateKind::CodeString,
                source.to_owned(),
                "prompt expansion (@P) runs substitutions stored in the variable",
            ),
            _ => {}
        }
    }

    /// An array subscript: arithmetic for indexed arrays.
    fn subscript(&mut self, index: &str, depth: usize) {
        if index == "@" || index == "*" {
            return;
        }
        self.arithmetic(index, depth + 1);
    }

    /// An arithmetic body. Substitutions in it are checked. It runs no
    /// command of its own, but bash evaluates the value of every variable
    /// it reads as arithmetic too, and `a[$(cmd)]` in that value runs cmd:
    /// a read is allowed only of a variable the script set to a number
    /// before ([`arith`]); any other read, an array element or a `$x` whose
    /// value is not such a number is dynamic code. A body that is not
    /// valid arithmetic is a parse error.
    fn arithmetic(&mut self, body: &str, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        let atoms = match brush_parser::word::parse(body, &self.options) {
            Ok(pieces) => self.pieces(body, &pieces, depth + 1, false),
            Err(e) => {
                self.fail(format!("arithmetic {body:?} does not parse: {e}"));
                return;
            }
        };
        let display = format!("(( {} ))", body.trim());
        if self.loose_parens && has_identifier(body) {
            self.dynamic(
                CandidateKind::CodeString,
                display,
                "`( (` may be subshells to bash: a name in it may be a command",
            );
            return;
        }
        // The expression as bash evaluates it, with `$n` of a bound `n`
        // read as `n` and a count (`$#`, `${#x}`) as a number.
        let mut text = String::with_capacity(body.len());
        for atom in &atoms {
            match atom {
                Atom::Char(c) => text.push(*c),
                Atom::Dyn(source) => match number_expansion(source) {
                    Some(Expansion::Number) => text.push('0'),
                    Some(Expansion::Variable(name)) if self.flow.bound.contains(name) => {
                        text.push_str(name)
                    }
                    _ => {
                        self.dynamic(
                            CandidateKind::CodeString,
                            display,
                            "arithmetic on a run-time value evaluates it as code",
                        );
                        return;
                    }
                },
                Atom::Quoted(quoted) if quoted.is_empty() => {}
                Atom::Quoted(_) => {
                    self.dynamic(
                        CandidateKind::CodeString,
                        display,
                        "quoted text in arithmetic is evaluated as code",
                    );
                    return;
                }
            }
        }
        let expr = match brush_parser::arithmetic::parse(&text) {
            Ok(expr) => expr,
            Err(e) => {
                self.fail(format!("arithmetic {body:?} does not parse: {e}"));
                return;
            }
        };
        let mut reads = Vec::new();
        match arith::follow(&expr, &mut self.flow.bound, &mut reads) {
            Ok(()) => self
                .settle
                .reads
                .extend(reads.into_iter().map(|name| (name, display.clone()))),
            Err(name) => self.dynamic(
                CandidateKind::CodeString,
                display,
                &format!("arithmetic reads {name}, which the script has not set to a number before: bash evaluates its value as code"),
            ),
        }
    }
}

/// What a `$` expansion inside arithmetic stands for.
enum Expansion<'s> {
    /// Always a number: `$#`, `$?`, `$$`, `$!`, `${#name}`.
    Number,
    /// The value of this variable: `$name`, `${name}`.
    Variable(&'s str),
}

fn number_expansion(source: &str) -> Option<Expansion<'_>> {
    if matches!(source, "$#" | "$?" | "$$" | "$!" | "${#}") {
        return Some(Expansion::Number);
    }
    if let Some(inner) = source.strip_prefix("${#").and_then(|s| s.strip_suffix('}')) {
        // A length; its subscript, if any, was checked with the word.
        if !inner.is_empty() {
            return Some(Expansion::Number);
        }
    }
    let name = source
        .strip_prefix("${")
        .and_then(|s| s.strip_suffix('}'))
        .or_else(|| source.strip_prefix('$'))?;
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(Expansion::Variable(name))
}

/// The name of `name=NUMBER` (a plain, not appending, assignment of a
/// decimal number), which leaves the variable holding a number.
fn number_assignment(assignment: &ast::Assignment) -> Option<&str> {
    match (&assignment.name, &assignment.value) {
        (ast::AssignmentName::VariableName(name), ast::AssignmentValue::Scalar(value))
            if !assignment.append && arith::is_number(&value.value) =>
        {
            Some(name)
        }
        _ => None,
    }
}

/// Scripts whose bracket-and-keyword count is at most this are parsed on the
/// caller's stack (enough even for unoptimised builds on 2 MiB test threads).
const INLINE_NESTING: usize = 40;
/// Above this count the script is refused rather than parsed.
const MAX_NESTING_ESTIMATE: usize = 4096;

/// An upper bound on how deeply the parser can recurse: every level of
/// nesting needs an opening bracket, backquote or keyword, so counting them
/// all (quoted or not, closed or not) can only overestimate.
pub(crate) fn nesting_estimate(text: &str) -> usize {
    let bytes = text.as_bytes();
    let brackets = bytes
        .iter()
        .filter(|b| matches!(b, b'(' | b'{' | b'[' | b'`'))
        .count();
    let mut keywords = 0;
    for keyword in [
        "then", "do", "else", "case", "coproc", "function", "time", "!",
    ] {
        keywords += text.matches(keyword).count();
    }
    brackets + keywords
}

/// `(` followed by blanks or line continuations and another `(` (or the
/// same with `)`): brush may read them as `((`/`))` where bash does not.
fn loose_parens(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| {
        matches!(b, b'(' | b')') && {
            let mut j = i + 1;
            while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\n' | b'\\' | b'\r') {
                j += 1;
            }
            j > i + 1 && bytes.get(j) == Some(b)
        }
    })
}

fn has_identifier(body: &str) -> bool {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_digit() {
            // A number, possibly 0x1f or 16#ff or 64#a@_.
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'#' | b'@' | b'_'))
            {
                i += 1;
            }
            continue;
        }
        if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 {
            return true;
        }
        i += 1;
    }
    false
}

/// Inside backquotes, `\$`, `` \` `` and `\\` lose their backslash.
fn unescape_backquoted(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if matches!(next, '$' | '`' | '\\') {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// Backslash-newline is removed in unquoted here-document bodies.
fn remove_line_continuations(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                    continue;
                }
                Some(&next) => {
                    out.push(c);
                    out.push(next);
                    chars.next();
                    continue;
                }
                None => {}
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(!has_identifier("1 + 2"));
        assert!(!has_identifier("0x1f * 16#ff"));
        assert!(has_identifier("x = 1"));
        assert!(has_identifier("ls"));
    }

    /// The plain-word shortcut gives what the word parser gives: for each
    /// character it lets through, alone, between letters and repeated, and
    /// for words of every character it allows.
    #[test]
    fn plain_words_expand_as_the_parser_expands_them() {
        let set =
            crate::PermissionSet::from_yaml_str("permission:\n  '*': allow\n").expect("rules");
        let mut checker = Checker::new(&set.rules);
        let allowed = "abcXYZ019-_./,:=+@%^";
        let mut samples: Vec<String> = Vec::new();
        for c in allowed.chars() {
            samples.extend([
                c.to_string(),
                format!("a{c}b"),
                format!("{c}{c}"),
                format!("{c}x"),
            ]);
        }
        samples.extend(
            [
                "--max-count=3",
                "a=b",
                "=",
                "/dev/null",
                "1.2.3",
                "user@host:/tmp",
                "%s",
                "x,y",
                "a^b",
            ]
            .map(str::to_owned),
        );
        for word in &samples {
            assert!(words::is_plain(word), "{word:?} should take the shortcut");
            for braces in [true, false] {
                assert_eq!(
                    checker.expand_word_flagged(word, 0, braces),
                    checker.expand_parsed_word(word, 0, braces),
                    "{word:?}"
                );
            }
        }
        assert!(checker.error.is_none(), "{:?}", checker.error);
        // Everything the parser treats specially stays on the parser's path.
        for special in [
            "", "~", "~/x", "$x", "`x`", "'x'", "\"x\"", "\\x", "a{b,c}", "*", "?", "[a]", "@(a)",
            "!x", "#x", "a b", "é",
        ] {
            assert!(!words::is_plain(special), "{special:?} must be parsed");
        }
    }

    #[test]
    fn continuations() {
        assert_eq!(remove_line_continuations("$\\\n(rm x)"), "$(rm x)");
        assert_eq!(remove_line_continuations("a\\\\\nb"), "a\\\\\nb");
    }
}
