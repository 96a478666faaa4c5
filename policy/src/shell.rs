//! Walking a bash script and turning every place a command can appear into
//! candidate texts for the rules.
//!
//! brush-parser produces the AST; words, arithmetic bodies and parameter
//! expansion operands are left as strings, which we parse again with its word
//! parser, recursing into every command substitution. Every AST node is
//! matched exhaustively, so a new node kind in a parser upgrade is a compile
//! error rather than a silent gap. Recursion is bounded by [`MAX_DEPTH`].

use crate::decision::{Candidate, CandidateKind};
use crate::rules::Action;
use crate::words::{self, Atom, Frag, Word};
use crate::wrappers;
use crate::PermissionSet;
use brush_parser::ast;
use brush_parser::word::{ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;
use std::collections::HashMap;

/// Maximum nesting of scripts, compound commands, substitutions and wrappers.
pub(crate) const MAX_DEPTH: usize = 48;
/// Up to this many candidates, duplicates are found by a scan.
const SCAN_LIMIT: usize = 16;

/// Where a command's standard input comes from (for shells reading a script).
#[derive(Debug, Clone)]
pub(crate) enum Stdin {
    /// Not visible statically: a pipe, a file, or inherited.
    Unknown,
    /// A here-document or here-string with this static text.
    Static(String),
    /// A here-document or here-string with run-time parts (source text).
    Dynamic(String),
}

pub(crate) struct Checker<'a> {
    pub(crate) set: &'a PermissionSet,
    pub(crate) candidates: Vec<Candidate>,
    /// Texts of `candidates` and their kinds, once there are more than
    /// [`SCAN_LIMIT`] (before that a scan of `candidates` is cheaper than
    /// hashing and cloning each text: callgrind put the set at 9 % of a
    /// 5-stage pipeline's check).
    seen: HashMap<String, Vec<CandidateKind>>,
    pub(crate) error: Option<String>,
    options: ParserOptions,
    /// > 0 while walking a code string: commands there are `CodeString`s.
    in_code: usize,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(set: &'a PermissionSet) -> Checker<'a> {
        Checker {
            set,
            candidates: Vec::new(),
            seen: HashMap::new(),
            error: None,
            options: ParserOptions::default(),
            in_code: 0,
        }
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
        if self.is_seen(&candidate.text, candidate.kind) {
            return;
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
        let display = words::display(text);
        if self.is_seen(&display, kind) {
            return;
        }
        let (verdict, rule, reason) = match words::static_text(text) {
            Some(s) => match self.set.first_match(&s) {
                Some(r) => (r.action(), Some(r.pattern().to_owned()), None),
                None => (Action::Deny, None, Some("no rule matches".to_owned())),
            },
            None => self.set.decide_shape(&words::shape(text)),
        };
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
        // for the worst case instead of risking an overflow (an abort). A
        // stack of its own on this thread (mapped, used, unmapped), not a
        // thread: starting one was a third of checking a 1 KiB script, and
        // its allocations went to a fresh malloc arena (bench/ROUNDS.md,
        // "Fifteenth round"). stacker switches stacks on every platform the
        // runner is built for (x86_64 and aarch64 Linux and macOS).
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
        // A code string that does not parse is an error inside the code; we
        // deny rather than guess what the shell would do.
        self.script(code, depth + 1);
        self.in_code -= 1;
    }

    fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        for ast::CompoundListItem(and_or, _separator) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for (stage, command) in pipeline.seq.iter().enumerate() {
            self.command(command, depth, stage > 0);
        }
    }

    fn command(&mut self, command: &ast::Command, depth: usize, piped: bool) {
        if self.too_deep(depth) {
            return;
        }
        match command {
            ast::Command::Simple(simple) => self.simple_command(simple, depth, piped),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth + 1);
                if let Some(list) = redirects {
                    for redirect in &list.0 {
                        self.redirect(redirect, depth);
                    }
                }
            }
            ast::Command::Function(function) => {
                let ast::FunctionBody(body, redirects) = &function.body;
                self.compound(body, depth + 1);
                if let Some(list) = redirects {
                    for redirect in &list.0 {
                        self.redirect(redirect, depth);
                    }
                }
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
                for part in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&part.value, depth);
                }
                self.compound_list(&clause.body.list, depth + 1);
            }
            ast::CompoundCommand::BraceGroup(group) => self.compound_list(&group.list, depth + 1),
            ast::CompoundCommand::Subshell(subshell) => {
                self.compound_list(&subshell.list, depth + 1)
            }
            ast::CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.scan_word(&value.value, depth);
                }
                self.compound_list(&clause.body.list, depth + 1);
            }
            ast::CompoundCommand::CaseClause(clause) => {
                self.scan_word(&clause.value.value, depth);
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.scan_word(&pattern.value, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, depth + 1);
                    }
                }
            }
            ast::CompoundCommand::IfClause(clause) => {
                self.compound_list(&clause.condition, depth + 1);
                self.compound_list(&clause.then, depth + 1);
                for else_clause in clause.elses.iter().flatten() {
                    if let Some(condition) = &else_clause.condition {
                        self.compound_list(condition, depth + 1);
                    }
                    self.compound_list(&else_clause.body, depth + 1);
                }
            }
            ast::CompoundCommand::WhileClause(clause)
            | ast::CompoundCommand::UntilClause(clause) => {
                let ast::WhileOrUntilClauseCommand(condition, body, _) = clause;
                self.compound_list(condition, depth + 1);
                self.compound_list(&body.list, depth + 1);
            }
            ast::CompoundCommand::Coprocess(coprocess) => {
                self.command(&coprocess.body, depth + 1, false);
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
                        self.variable_operand(&name, depth);
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
        let _ = piped;
        let mut stdin = Stdin::Unknown;
        for redirect in &redirects {
            if let Some(source) = self.redirect(redirect, depth) {
                stdin = source;
            }
        }
        if self.error.is_some() {
            return;
        }
        if argv.is_empty() {
            if !assignments.is_empty() {
                let text = words::join(&assignments);
                let kind = self.command_kind();
                self.decide(kind, &text);
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
                self.compound_list(&subshell.list, depth + 1);
                argv.push(words::dyn_word("<(...)"));
                vanishing.push(false);
            }
        }
    }

    /// Candidates for one command: full text, without assignments, with the
    /// basename of argv[0], plus what a wrapper or code runner runs.
    pub(crate) fn command_words(
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
        match wrappers::analyse(&base, &argv, stdin) {
            wrappers::Runs::Nothing => {}
            wrappers::Runs::Command(inner) => self.command_words(
                &[],
                inner,
                CandidateKind::WrappedCommand,
                &Stdin::Unknown,
                depth + 1,
            ),
            wrappers::Runs::Code(code) => {
                self.code_word(&code, depth, "the code string is only known at run time")
            }
            wrappers::Runs::Several(items) => {
                for item in items {
                    match item {
                        wrappers::Runs::Command(inner) => self.command_words(
                            &[],
                            inner,
                            CandidateKind::WrappedCommand,
                            &Stdin::Unknown,
                            depth + 1,
                        ),
                        wrappers::Runs::Code(code) => self.code_word(
                            &code,
                            depth,
                            "the code string is only known at run time",
                        ),
                        _ => {}
                    }
                }
            }
            wrappers::Runs::Unknown(reason) => {
                let text = words::display(&words::join(&argv));
                self.dynamic(CandidateKind::WrappedCommand, text, &reason);
            }
        }
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
                    self.variable_operand(word, depth);
                }
            }
            "printf" => {
                for word in after("-v") {
                    self.variable_operand(word, depth);
                }
            }
            "wait" => {
                for word in after("-p") {
                    self.variable_operand(word, depth);
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
                        _ => self.variable_operand(word, depth),
                    }
                }
            }
            "unset" | "export" | "readonly" => {
                for word in operands() {
                    self.variable_operand(word, depth);
                }
            }
            // `getopts OPTSTRING NAME [ARG…]`: the arguments are data.
            "getopts" => {
                if let Some(word) = args.get(1) {
                    self.variable_operand(word, depth);
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
                for word in operands() {
                    self.variable_operand(word, depth);
                    if flags.contains('n') {
                        // A name reference's value is a variable name.
                        if let Some((_, value)) =
                            text(word).as_deref().and_then(|t| t.split_once('='))
                        {
                            self.variable_operand(&words::lit(value), depth);
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
                    self.code_word(word, depth, "the callback is only known at run time");
                }
                if matches!(name, "mapfile" | "readarray") {
                    for word in operands() {
                        self.variable_operand(word, depth);
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
    fn variable_operand(&mut self, word: &Word, depth: usize) {
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
        match name {
            Some(name) => {
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
                        Some(text) if name == "PROMPT_COMMAND" => self.code(&text, depth + 1),
                        Some(text) => self.scan_word(&text, depth + 1),
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
        match target {
            Some(path) => {
                let normalized = words::normalize_path(&path);
                if normalized == "/dev/null" {
                    return;
                }
                if words::another_name_for_a_path(&normalized) {
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
            None => self.dynamic(
                CandidateKind::WriteRedirect,
                format!("> {raw}"),
                "the write target is only known at run time",
            ),
        }
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
        // expand to themselves. Parsing them as words and rebuilding them
        // a character at a time was 40 % of checking a 4 KiB script.
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
                self.script(code, depth + 1);
                self.in_code = saved;
                atoms.push(Atom::Dyn(source.to_owned()));
            }
            WordPiece::BackquotedCommandSubstitution(code) => {
                let code = unescape_backquoted(code);
                let saved = self.in_code;
                self.in_code = 0;
                self.script(&code, depth + 1);
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

    /// An arithmetic body. Substitutions in it are checked; a reference to a
    /// variable is dynamic code (bash evaluates the variable's value as an
    /// expression, and `a[$(cmd)]` in it runs cmd); a body that is not valid
    /// arithmetic is a parse error (brush reads `( (cmd) )` as arithmetic).
    fn arithmetic(&mut self, body: &str, depth: usize) {
        if self.too_deep(depth) {
            return;
        }
        let has_expansion = match brush_parser::word::parse(body, &self.options) {
            Ok(pieces) => {
                let atoms = self.pieces(body, &pieces, depth + 1, false);
                atoms.iter().any(|a| matches!(a, Atom::Dyn(_)))
            }
            Err(e) => {
                self.fail(format!("arithmetic {body:?} does not parse: {e}"));
                return;
            }
        };
        if has_expansion || has_identifier(body) {
            self.dynamic(
                CandidateKind::CodeString,
                format!("(( {} ))", body.trim()),
                "arithmetic on a variable evaluates its value as code",
            );
            return;
        }
        if let Err(e) = brush_parser::arithmetic::parse(body) {
            self.fail(format!("arithmetic {body:?} does not parse: {e}"));
        }
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
        let set = PermissionSet::from_yaml_str("permission:\n  '*': allow\n").expect("rules");
        let mut checker = Checker::new(&set);
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
