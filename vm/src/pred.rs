//! Branch predicates (`compositions.md` §7), compiled once per module into a flat
//! program with short-circuit jumps and pre-typed constants.
//!
//! `any_of: [a, b, c]` becomes `a; jump-if-true end; b; jump-if-true end; c; end:` over
//! one boolean accumulator; `all_of` the same with jump-if-false; `not` a negation. A
//! member that is jumped over is never evaluated, so it cannot raise `type_error`.

use ir_spec::{Compare, Ordering, Pred, Ref};
use serde_json::Value;

use crate::error::{ErrorKind, RunError};
use crate::value::{eq_str, json_eq, Scope, Ty, VRef};

/// A constant of an `equals` / `in` test, typed once.
#[derive(Clone, Debug)]
enum Const {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    /// `[]`.
    EmptyArray,
    /// `{}`.
    EmptyObject,
    /// An array or object, compared with JSON equality.
    Other(Value),
}

impl Const {
    fn new(v: &Value) -> Const {
        match v {
            Value::Null => Const::Null,
            Value::Bool(b) => Const::Bool(*b),
            Value::Number(n) => n
                .as_f64()
                .map_or_else(|| Const::Other(v.clone()), Const::Num),
            Value::String(s) => Const::Str(s.clone()),
            Value::Array(a) if a.is_empty() => Const::EmptyArray,
            Value::Object(o) if o.is_empty() => Const::EmptyObject,
            other => Const::Other(other.clone()),
        }
    }

    /// Equality with a real value (`None`: the path does not resolve, compared as
    /// `null`).
    #[inline]
    fn eq_real(&self, actual: Option<&Value>) -> bool {
        let Some(actual) = actual else {
            return matches!(self, Const::Null);
        };
        match (self, actual) {
            (Const::Null, Value::Null) => true,
            (Const::Bool(b), Value::Bool(a)) => a == b,
            (Const::Num(b), Value::Number(a)) => a.as_f64() == Some(*b),
            (Const::Str(b), Value::String(a)) => eq_str(a, b),
            (Const::EmptyArray, Value::Array(a)) => a.is_empty(),
            (Const::EmptyObject, Value::Object(o)) => o.is_empty(),
            (Const::Other(b), a @ (Value::Array(_) | Value::Object(_))) => json_eq(a, b),
            _ => false,
        }
    }

    /// Equality with any value, a parallel step's merged output included.
    #[cold]
    fn eq(&self, actual: Option<VRef<'_>>) -> bool {
        match actual {
            None => self.eq_real(None),
            Some(VRef::Val(v)) => self.eq_real(Some(v)),
            Some(a) => match self {
                Const::Other(b) => json_eq(&a.as_cow(), b),
                Const::EmptyArray => json_eq(&a.as_cow(), &Value::Array(Vec::new())),
                Const::EmptyObject => json_eq(&a.as_cow(), &Value::Object(serde_json::Map::new())),
                _ => false,
            },
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// `equals` / `not_equals` a string constant (the common case, tested inline).
    EqStr {
        path: Ref,
        value: String,
        negate: bool,
    },
    Equals {
        path: Ref,
        value: Const,
        negate: bool,
    },
    In {
        path: Ref,
        list: Option<Vec<Const>>,
        negate: bool,
    },
    Ordered {
        path: Ref,
        op: Ordering,
        bound: Option<f64>,
    },
    Exists {
        path: Ref,
        expect: bool,
    },
    Not,
    /// Jump to the index when the accumulator is false (`all_of`).
    JumpIfFalse(u32),
    /// Jump to the index when the accumulator is true (`any_of`).
    JumpIfTrue(u32),
}

/// A compiled predicate.
#[derive(Clone, Debug)]
pub struct Compiled {
    ops: Vec<Op>,
}

impl Compiled {
    /// Compiles a predicate tree.
    pub fn new(p: &Pred) -> Compiled {
        let mut ops = Vec::new();
        emit(p, &mut ops);
        Compiled { ops }
    }

    /// Evaluates a predicate whose paths are all rooted at `${input}` against `input`
    /// (a path rooted at a step is missing). For benchmarks and tools.
    pub fn eval_input(&self, input: &Value) -> Result<bool, RunError> {
        static EMPTY: std::sync::OnceLock<ir_spec::Module> = std::sync::OnceLock::new();
        let m = EMPTY.get_or_init(ir_spec::Module::default);
        self.eval(&Scope {
            m,
            comp: None,
            input,
            slots: &[],
        })
    }

    /// Evaluates against `scope`.
    #[inline]
    pub(crate) fn eval(&self, scope: &Scope<'_>) -> Result<bool, RunError> {
        let mut acc = false;
        let mut pc = 0;
        while let Some(op) = self.ops.get(pc) {
            pc += 1;
            acc = match op {
                Op::EqStr {
                    path,
                    value,
                    negate,
                } => {
                    let eq = match scope.get_real(path) {
                        Ok(Some(Value::String(a))) => eq_str(a, value),
                        Ok(_) => false,
                        Err(()) => matches!(
                            scope.get(path),
                            Some(VRef::Val(Value::String(a))) if eq_str(a, value)
                        ),
                    };
                    eq != *negate
                }
                Op::Equals {
                    path,
                    value,
                    negate,
                } => {
                    let eq = match scope.get_real(path) {
                        Ok(v) => value.eq_real(v),
                        Err(()) => value.eq(scope.get(path)),
                    };
                    eq != *negate
                }
                Op::In { path, list, negate } => {
                    let Some(list) = list else {
                        return Err(type_error("`in` / `not_in` needs a list value"));
                    };
                    let any = match scope.get_real(path) {
                        Ok(v) => list.iter().any(|c| c.eq_real(v)),
                        Err(()) => {
                            let actual = scope.get(path);
                            list.iter().any(|c| c.eq(actual))
                        }
                    };
                    any != *negate
                }
                Op::Ordered { path, op, bound } => {
                    let real = scope
                        .get_real(path)
                        .unwrap_or_else(|()| match scope.get(path) {
                            Some(VRef::Val(v)) => Some(v),
                            _ => None,
                        });
                    let a = match real {
                        Some(Value::Number(n)) => n.as_f64(),
                        _ => None,
                    };
                    let (Some(a), Some(b)) = (a, *bound) else {
                        return Err(ordered_error(scope, path, *op, real));
                    };
                    match op {
                        Ordering::Lt => a < b,
                        Ordering::Le => a <= b,
                        Ordering::Gt => a > b,
                        Ordering::Ge => a >= b,
                    }
                }
                Op::Exists { path, expect } => scope.resolves(path) == *expect,
                Op::Not => !acc,
                Op::JumpIfFalse(to) => {
                    if !acc {
                        pc = *to as usize;
                    }
                    acc
                }
                Op::JumpIfTrue(to) => {
                    if acc {
                        pc = *to as usize;
                    }
                    acc
                }
            };
        }
        Ok(acc)
    }
}

fn type_error(m: &str) -> RunError {
    RunError::new(ErrorKind::TypeError, m)
}

/// The `type_error` of an ordered comparison whose value at `path` (`real`) or whose
/// bound is not a number: which comparison, the reference, and what it found there.
#[cold]
fn ordered_error(scope: &Scope<'_>, path: &Ref, op: Ordering, real: Option<&Value>) -> RunError {
    let op = op.as_str();
    let at = scope.ref_text(path);
    let found = match real {
        Some(Value::Number(_)) => None,
        Some(v) => {
            let mut text = match v {
                // A long array or object is not written out whole only to be cut.
                Value::Array(a) if a.len() > 8 => format!("[… {} items]", a.len()),
                Value::Object(o) if o.len() > 8 => format!("{{… {} members}}", o.len()),
                _ => serde_json::to_string(v).unwrap_or_default(),
            };
            if text.len() > 40 {
                let cut = (0..=37)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text.truncate(cut);
                text.push_str("...");
            }
            let what = Ty::of(v).described();
            Some(format!("`{at}` is {what} ({text}), not a number"))
        }
        None if scope.resolves(path) => Some(format!("`{at}` is not a number")),
        None => Some(format!("`{at}` does not resolve")),
    };
    let message = match found {
        Some(found) => format!("an ordered comparison (`{op}`) needs a number: {found}"),
        None => format!(
            "an ordered comparison (`{op}`) needs a number to compare `{at}` with, and the predicate's `value` is not one"
        ),
    };
    type_error(&message)
}

fn emit(p: &Pred, ops: &mut Vec<Op>) {
    match p {
        Pred::Compare { path, test } => ops.push(match test {
            Compare::Equals {
                value: Value::String(value),
                negate,
            } => Op::EqStr {
                path: path.clone(),
                value: value.clone(),
                negate: *negate,
            },
            Compare::Equals { value, negate } => Op::Equals {
                path: path.clone(),
                value: Const::new(value),
                negate: *negate,
            },
            Compare::In { list, negate } => Op::In {
                path: path.clone(),
                list: list.as_ref().map(|l| l.iter().map(Const::new).collect()),
                negate: *negate,
            },
            Compare::Ordered { op, bound } => Op::Ordered {
                path: path.clone(),
                op: *op,
                bound: *bound,
            },
        }),
        Pred::Exists { path, expect } => ops.push(Op::Exists {
            path: path.clone(),
            expect: *expect,
        }),
        Pred::Not(p) => {
            emit(p, ops);
            ops.push(Op::Not);
        }
        Pred::All(ps) | Pred::Any(ps) => {
            let all = matches!(p, Pred::All(_));
            if ps.is_empty() {
                // Never produced by the compiler (`invalid_predicate`); all_of [] is
                // true, any_of [] false.
                ops.push(Op::Exists {
                    path: Ref {
                        root: ir_spec::Root::Input,
                        path: ir_spec::Path::default(),
                    },
                    expect: all,
                });
                return;
            }
            let mut jumps = Vec::new();
            for (i, q) in ps.iter().enumerate() {
                emit(q, ops);
                if i + 1 < ps.len() {
                    jumps.push(ops.len());
                    ops.push(if all {
                        Op::JumpIfFalse(0)
                    } else {
                        Op::JumpIfTrue(0)
                    });
                }
            }
            let end = u32::try_from(ops.len()).unwrap_or(u32::MAX);
            for j in jumps {
                ops[j] = if all {
                    Op::JumpIfFalse(end)
                } else {
                    Op::JumpIfTrue(end)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir_spec::{Module, Root};
    use serde_json::json;

    fn path(p: &[&str]) -> Ref {
        Ref {
            root: Root::Input,
            path: p.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn cmp(p: &[&str], test: Compare) -> Pred {
        Pred::Compare {
            path: path(p),
            test,
        }
    }

    /// `pred` evaluated against `input` alone.
    fn eval(input: Value, pred: &Pred) -> Result<bool, RunError> {
        let m = Module::default();
        let scope = Scope {
            m: &m,
            comp: None,
            input: &input,
            slots: &[],
        };
        Compiled::new(pred).eval(&scope)
    }

    fn check(input: Value, pred: &Pred) -> Result<bool, ErrorKind> {
        eval(input, pred).map_err(|e| e.kind)
    }

    #[test]
    fn missing_paths_compare_as_null_and_exist_not() {
        let input = json!({"a": {"b": null}, "s": "text"});
        let eq = |v| Compare::Equals {
            value: v,
            negate: false,
        };
        assert_eq!(
            check(input.clone(), &cmp(&["zz"], eq(json!(null)))),
            Ok(true)
        );
        assert_eq!(
            check(input.clone(), &cmp(&["s", "x"], eq(json!(null)))),
            Ok(true)
        );
        let exists = Pred::Exists {
            path: path(&["a", "b"]),
            expect: true,
        };
        assert_eq!(check(input.clone(), &exists), Ok(true));
        let not_in = Compare::In {
            list: Some(vec![json!("x")]),
            negate: true,
        };
        assert_eq!(check(input, &cmp(&["zz"], not_in)), Ok(true));
    }

    /// The message of an ordered comparison's `type_error`: the comparison, the
    /// reference and what it found there.
    fn message(input: Value, pred: &Pred) -> String {
        eval(input, pred).unwrap_err().message
    }

    #[test]
    fn an_ordered_type_error_says_what_it_found() {
        let input = json!({"tier": "gold", "long": "x".repeat(60), "n": 2});
        let ge = |b| Compare::Ordered {
            op: Ordering::Ge,
            bound: b,
        };
        assert_eq!(
            message(input.clone(), &cmp(&["tier"], ge(Some(3.0)))),
            "an ordered comparison (`greater_than_or_equals`) needs a number: `${input.tier}` is a string (\"gold\"), not a number"
        );
        let long = message(input.clone(), &cmp(&["long"], ge(Some(3.0))));
        assert!(long.ends_with("xxx...), not a number"), "{long}");
        assert_eq!(
            message(input.clone(), &cmp(&["zz"], ge(Some(3.0)))),
            "an ordered comparison (`greater_than_or_equals`) needs a number: `${input.zz}` does not resolve"
        );
        assert_eq!(
            message(input, &cmp(&["n"], ge(None))),
            "an ordered comparison (`greater_than_or_equals`) needs a number to compare `${input.n}` with, and the predicate's `value` is not one"
        );
    }

    #[test]
    fn type_errors_and_short_circuits() {
        let input = json!({"tier": "gold", "n": 2.0});
        let lt = |b| Compare::Ordered {
            op: Ordering::Lt,
            bound: b,
        };
        assert_eq!(
            check(input.clone(), &cmp(&["tier"], lt(Some(3.0)))),
            Err(ErrorKind::TypeError)
        );
        let gold = cmp(
            &["tier"],
            Compare::Equals {
                value: json!("gold"),
                negate: false,
            },
        );
        let bad = cmp(&["tier"], lt(Some(3.0)));
        assert_eq!(
            check(input.clone(), &Pred::Any(vec![gold.clone(), bad.clone()])),
            Ok(true)
        );
        let not_gold = Pred::Not(Box::new(gold.clone()));
        assert_eq!(
            check(
                input.clone(),
                &Pred::All(vec![not_gold.clone(), bad.clone()])
            ),
            Ok(false)
        );
        // Nested: any_of [all_of [not gold, bad], gold] is true without an error.
        let nested = Pred::Any(vec![Pred::All(vec![not_gold, bad]), gold]);
        assert_eq!(check(input.clone(), &nested), Ok(true));
        let in_list = Compare::In {
            list: Some(vec![json!(1), json!(2)]),
            negate: false,
        };
        assert_eq!(check(input, &cmp(&["n"], in_list)), Ok(true));
    }
}
