//! Which variables an arithmetic expression reads, and whether each holds
//! a number the script itself put there.
//!
//! bash evaluates the value of a variable named in arithmetic as an
//! expression of its own, and a subscript in that value runs command
//! substitutions (`x='a[$(id)]'; (( x ))` runs `id`). A read is harmless
//! only when the variable holds a number: here, when the script assigned it
//! a number earlier on every path to the read (an arithmetic assignment,
//! whose result is always a number, or `name=123`). The walker keeps the
//! names so bound ([`Bound`]) as it follows the script, and checks at the
//! end that no other assignment anywhere can give them text.

use brush_parser::ast::{ArithmeticExpr as Expr, ArithmeticTarget as Target, BinaryOperator as Op};

/// Names that hold a number the script assigned, at one point of the walk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Bound(Vec<String>);

impl Bound {
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|bound| bound == name)
    }

    pub(crate) fn insert(&mut self, name: &str) {
        if bindable(name) && !self.contains(name) {
            self.0.push(name.to_owned());
        }
    }
}

/// bash assigns only upper-case variables itself (`REPLY`, `OPTARG`,
/// `BASH_REMATCH`, ...): a name with a lower-case letter holds what the
/// script put there and nothing else.
pub(crate) fn bindable(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_lowercase())
}

/// `name=VALUE` where VALUE is a decimal number: binds a number.
pub(crate) fn is_number(value: &str) -> bool {
    let digits = value.strip_prefix('-').unwrap_or(value);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Follow `expr` in evaluation order: every variable it reads must be in
/// `bound` at that point (returned in `reads`), and every variable it
/// assigns is bound from there on. `Err(name)` names the first read of a
/// variable not bound, or an array element (whose value may be text).
pub(crate) fn follow(
    expr: &Expr,
    bound: &mut Bound,
    reads: &mut Vec<String>,
) -> Result<(), String> {
    match expr {
        Expr::Literal(_) => Ok(()),
        Expr::Reference(target) => read(target, bound, reads),
        Expr::UnaryOp(_, operand) => follow(operand, bound, reads),
        Expr::BinaryOp(Op::Comma, left, right) => {
            follow(left, bound, reads)?;
            follow(right, bound, reads)
        }
        // The right side may not run: what it assigns is not bound after.
        Expr::BinaryOp(Op::LogicalAnd | Op::LogicalOr, left, right) => {
            follow(left, bound, reads)?;
            follow(right, &mut bound.clone(), reads)
        }
        Expr::BinaryOp(_, left, right) => {
            follow(left, bound, reads)?;
            follow(right, bound, reads)
        }
        Expr::Conditional(condition, then, otherwise) => {
            follow(condition, bound, reads)?;
            follow(then, &mut bound.clone(), reads)?;
            follow(otherwise, &mut bound.clone(), reads)
        }
        Expr::Assignment(target, value) => {
            follow(value, bound, reads)?;
            assign(target, bound)
        }
        Expr::BinaryAssignment(_, target, value) => {
            read(target, bound, reads)?;
            follow(value, bound, reads)?;
            assign(target, bound)
        }
        Expr::UnaryAssignment(_, target) => read(target, bound, reads),
    }
}

fn read(target: &Target, bound: &Bound, reads: &mut Vec<String>) -> Result<(), String> {
    match target {
        Target::Variable(name) if bound.contains(name) => {
            if !reads.contains(name) {
                reads.push(name.clone());
            }
            Ok(())
        }
        Target::Variable(name) => Err(name.clone()),
        Target::ArrayElement(name, _) => Err(format!("{name}[...]")),
    }
}

fn assign(target: &Target, bound: &mut Bound) -> Result<(), String> {
    match target {
        Target::Variable(name) => {
            bound.insert(name);
            Ok(())
        }
        Target::ArrayElement(name, _) => Err(format!("{name}[...]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, bound: &mut Bound) -> Result<Vec<String>, String> {
        let expr = brush_parser::arithmetic::parse(text).map_err(|e| e.to_string())?;
        let mut reads = Vec::new();
        follow(&expr, bound, &mut reads)?;
        Ok(reads)
    }

    #[test]
    fn a_read_needs_an_earlier_assignment() {
        let mut bound = Bound::default();
        assert_eq!(run("x", &mut bound), Err("x".to_owned()));
        assert_eq!(run("x = 1, x + 1", &mut bound), Ok(vec!["x".to_owned()]));
        assert!(bound.contains("x"));
        assert_eq!(run("x++", &mut bound), Ok(vec!["x".to_owned()]));
        assert_eq!(run("y += 1", &mut bound), Err("y".to_owned()));
    }

    #[test]
    fn a_branch_that_may_not_run_binds_nothing() {
        let mut bound = Bound::default();
        assert!(run("0 && (y = 1)", &mut bound).is_ok());
        assert!(!bound.contains("y"));
        assert!(run("1 ? (z = 1) : 2", &mut bound).is_ok());
        assert!(!bound.contains("z"));
    }

    #[test]
    fn arrays_and_names_bash_sets_are_never_bound() {
        let mut bound = Bound::default();
        assert!(run("a[1] = 2", &mut bound).is_err());
        assert!(run("REPLY = 2", &mut bound).is_ok());
        assert_eq!(run("REPLY", &mut bound), Err("REPLY".to_owned()));
        assert!(is_number("-12") && !is_number("1a") && !is_number(""));
    }
}
