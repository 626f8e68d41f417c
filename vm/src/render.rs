//! Template rendering (`workflow.md` §14, "Bindings at run time").
//!
//! One walk serves two purposes: *checking* a prompt before its call is issued (every
//! declared variable bound and validated, every placeholder path resolvable: the
//! `invalid_variable` errors are raised at the right time) without building any text,
//! and *rendering* it into a caller's buffer when a host asks for the system prompt.

use ir_spec::text_form::Sink;
use ir_spec::{PathSeg, Placeholder, PromptId, Segment, VarRoot, VarType, Variable};
use serde_json::{Map, Value};

use crate::error::{ErrorKind, RunError};
use crate::memory::Artifact;
use crate::program::Program;
use crate::value::{json_eq, write_text_form, BVal, Ty, VRef};

/// What a prompt renders against.
pub(crate) struct Env<'a> {
    pub prog: &'a Program,
    pub prompt: PromptId,
    pub input: BVal<'a>,
    pub artifacts: &'a [Option<Artifact>],
    pub host_vars: &'a Map<String, Value>,
}

fn invalid(message: String) -> RunError {
    RunError::new(ErrorKind::InvalidVariable, message)
}

impl<'a> Env<'a> {
    fn key(&self) -> &'a str {
        self.prog.prompt_key(self.prompt)
    }

    /// `p` does not resolve: the error names it as the template wrote it.
    #[cold]
    fn missing(&self, p: &Placeholder) -> RunError {
        invalid(format!(
            "prompt `{}`: `{{{{{}}}}}` does not resolve: the value has no such member or element",
            self.key(),
            self.placeholder(p)
        ))
    }

    /// The text of `p` inside its braces (`input.text`, `artifacts.log[0]`).
    fn placeholder(&self, p: &Placeholder) -> String {
        let m = &self.prog.m;
        let mut text = match &p.root {
            VarRoot::Input => "input".to_owned(),
            VarRoot::Artifacts => "artifacts".to_owned(),
            VarRoot::Artifact(id) => {
                let name = id
                    .and_then(|id| m.workflow.as_ref()?.artifacts.get(id.index()).copied())
                    .map_or("?", |n| m.str(n));
                format!("artifacts.{name}")
            }
            VarRoot::Declared(i) => m.prompts[self.prompt.index()].variables[*i as usize]
                .name
                .clone(),
            VarRoot::Undeclared(name) => name.clone(),
        };
        for seg in &p.path {
            match seg {
                PathSeg::Field(f) => {
                    text.push('.');
                    text.push_str(f);
                }
                PathSeg::Index(i) => text.push_str(&format!("[{i}]")),
            }
        }
        text
    }

    /// Binds declared variable `i`: the input's non-null member, else the default of an
    /// optional variable; `None`: unset (renders empty).
    fn bind(&self, i: usize) -> Result<Option<BVal<'a>>, RunError> {
        let var = &self.prog.m.prompts[self.prompt.index()].variables[i];
        let given = self.input.member(&var.name).filter(|v| v.ty() != Ty::Null);
        let value = match (given, &var.default) {
            (Some(v), _) => v,
            (None, Some(d)) if !var.required => BVal::V(VRef::Val(d)),
            (None, _) if var.required => {
                return Err(invalid(format!(
                    "prompt `{}`: required variable `{}` is missing: a declared variable is \
                     read from the member `{}` of the call's input object (host variables \
                     fill only names the prompt does not declare)",
                    self.key(),
                    var.name,
                    var.name
                )))
            }
            (None, _) => return Ok(None),
        };
        let pattern = self.prog.patterns[self.prompt.index()][i].as_ref();
        check(var, pattern, value).map_err(|why| {
            invalid(format!(
                "prompt `{}`: variable `{}` {why}",
                self.key(),
                var.name
            ))
        })?;
        Ok(Some(value))
    }

    /// Checks the prompt (`out == None`) or renders it into `out` (a string, or a meter
    /// that measures it). Every check is made whatever `out` is.
    pub fn run<S: Sink + ?Sized>(&self, mut out: Option<&mut S>) -> Result<(), RunError> {
        let prompt = &self.prog.m.prompts[self.prompt.index()];
        for i in 0..prompt.variables.len() {
            self.bind(i)?;
        }
        for seg in &prompt.system {
            // Past a meter's limit only the checks go on.
            if out.as_deref().is_some_and(|o| o.full()) {
                out = None;
            }
            let p = match seg {
                Segment::Text(t) => {
                    if let Some(out) = out.as_deref_mut() {
                        out.push_str(t);
                    }
                    continue;
                }
                Segment::Var(p) => p,
            };
            let missing = || self.missing(p);
            let v = match &p.root {
                VarRoot::Input => Some(self.input),
                VarRoot::Declared(i) => self.bind(*i as usize)?,
                VarRoot::Undeclared(name) => Some(
                    self.input
                        .member(name)
                        .filter(|v| v.ty() != Ty::Null)
                        .or_else(|| self.host_vars.get(name).map(|v| BVal::V(VRef::Val(v))))
                        .ok_or_else(|| {
                            invalid(format!(
                                "prompt `{}`: `{{{{{name}}}}}` is neither an input member nor a host variable",
                                self.key()
                            ))
                        })?,
                ),
                VarRoot::Artifact(id) => {
                    let a = id.and_then(|id| self.artifacts.get(id.index()));
                    self.artifact(a.and_then(Option::as_ref), p, &p.path, out.as_deref_mut())?;
                    continue;
                }
                VarRoot::Artifacts => {
                    match p.path.split_first() {
                        // Built only to be written: checking `{{artifacts}}` (always
                        // resolvable) copies nothing.
                        None => {
                            if let Some(out) = out.as_deref_mut() {
                                write_text_form(out, &self.all_artifacts());
                            }
                        }
                        // `{{artifacts.<name>...}}` as the compiler lowers it; only a
                        // hand-made artifact gets here. An unset one does not resolve.
                        Some((PathSeg::Field(name), rest)) => {
                            let a = self.named_artifact(name).ok_or_else(missing)?;
                            self.artifact(Some(a), p, rest, out.as_deref_mut())?;
                        }
                        Some((PathSeg::Index(_), _)) => return Err(missing()),
                    }
                    continue;
                }
            };
            let Some(mut v) = v else { continue };
            for s in &p.path {
                v = v.seg(s).ok_or_else(missing)?;
            }
            if let Some(out) = out.as_deref_mut() {
                v.write_text(out);
            }
        }
        Ok(())
    }

    /// `{{artifacts.<name><path>}}` of artifact `a` (`None`: unset, renders empty).
    fn artifact<S: Sink + ?Sized>(
        &self,
        a: Option<&Artifact>,
        p: &Placeholder,
        path: &[PathSeg],
        out: Option<&mut S>,
    ) -> Result<(), RunError> {
        let missing = || self.missing(p);
        let v = match a {
            None => return Ok(()),
            Some(Artifact::List(entries)) => {
                let Some((first, rest)) = path.split_first() else {
                    if let Some(out) = out {
                        for (i, e) in entries.iter().enumerate() {
                            if out.full() {
                                break;
                            }
                            if i > 0 {
                                out.push('\n');
                            }
                            write_text_form(out, e);
                        }
                    }
                    return Ok(());
                };
                // `{{artifacts.log[0]}}`: one entry.
                let PathSeg::Index(i) = first else {
                    return Err(missing());
                };
                let e = entries.get(*i as usize).ok_or_else(missing)?;
                let mut v = VRef::Val(e);
                for s in rest {
                    v = v.seg(s).ok_or_else(missing)?;
                }
                v
            }
            Some(Artifact::Value(v)) => {
                let mut v = VRef::Val(v);
                for s in path {
                    v = v.seg(s).ok_or_else(missing)?;
                }
                v
            }
        };
        if let Some(out) = out {
            v.write_text(out);
        }
        Ok(())
    }

    /// The set artifact named `name`.
    fn named_artifact(&self, name: &str) -> Option<&'a Artifact> {
        let w = self.prog.m.workflow.as_ref()?;
        let i = w
            .artifacts
            .iter()
            .position(|n| self.prog.m.str(*n) == name)?;
        self.artifacts.get(i)?.as_ref()
    }

    /// `{{artifacts}}`: the object of every set artifact.
    fn all_artifacts(&self) -> Value {
        let mut all = Map::new();
        if let Some(w) = &self.prog.m.workflow {
            for (i, name) in w.artifacts.iter().enumerate() {
                if let Some(Some(a)) = self.artifacts.get(i) {
                    all.insert(self.prog.m.str(*name).to_owned(), a.to_json());
                }
            }
        }
        Value::Object(all)
    }
}

/// "is a number, not a string" (cold: only a failing run builds it).
#[cold]
fn wrong_type(wanted: Ty, got: Ty) -> String {
    format!("is {}, not {}", got.described(), wanted.described())
}

/// "is 12 characters long, past the most (10)" / "is 3, below the least (5)".
#[cold]
fn out_of_bounds(x: f64, unit: &str, least: Option<f64>, most: Option<f64>) -> String {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    let n = |v: f64| {
        serde_json::Number::from_f64(v).map_or_else(
            || v.to_string(),
            |n| ir_spec::text_form::text_form(&serde_json::Value::Number(n)),
        )
    };
    match (least, most) {
        (Some(l), _) if x < l => format!("is {}{unit}, below the least ({})", n(x), n(l)),
        (_, Some(m)) => format!("is {}{unit}, past the most ({})", n(x), n(m)),
        _ => format!("is {}{unit}, out of range", n(x)),
    }
}

/// The type and validation rules of `workflow.md` §14.
fn check(
    var: &Variable,
    pattern: Option<&Option<regex::Regex>>,
    v: BVal<'_>,
) -> Result<(), String> {
    let ty = v.ty();
    let wanted = match var.ty {
        None => None,
        Some(VarType::String) => Some(Ty::String),
        Some(VarType::Number) => Some(Ty::Number),
        Some(VarType::Boolean) => Some(Ty::Bool),
        Some(VarType::Object) => Some(Ty::Object),
        Some(VarType::Array) => Some(Ty::Array),
    };
    if let Some(wanted) = wanted.filter(|w| *w != ty) {
        return Err(wrong_type(wanted, ty));
    }
    let rules = &var.validation;
    let no_rules = rules.pattern.is_none()
        && rules.min_length.is_none()
        && rules.max_length.is_none()
        && rules.minimum.is_none()
        && rules.maximum.is_none()
        && rules.allowed.is_none();
    if no_rules {
        return Ok(());
    }
    let v = v.as_cow();
    if let Some(s) = v.as_str() {
        if let (Some(text), Some(re)) = (&rules.pattern, pattern) {
            if !re.as_ref().is_some_and(|re| re.is_match(s)) {
                return Err(format!("does not match `{text}`"));
            }
        }
        let len = s.chars().count() as u64;
        if rules.min_length.is_some_and(|m| len < m) || rules.max_length.is_some_and(|m| len > m) {
            return Err(out_of_bounds(
                len as f64,
                "characters long",
                rules.min_length.map(|m| m as f64),
                rules.max_length.map(|m| m as f64),
            ));
        }
    }
    if let Some(x) = v.as_f64() {
        if rules.minimum.is_some_and(|m| x < m) || rules.maximum.is_some_and(|m| x > m) {
            return Err(out_of_bounds(x, "", rules.minimum, rules.maximum));
        }
    }
    if let Some(allowed) = &rules.allowed {
        if !allowed.iter().any(|a| json_eq(a, &v)) {
            return Err("is not one of the allowed values".into());
        }
    }
    Ok(())
}
