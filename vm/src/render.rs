//! Template rendering (`workflow.md` §14, "Bindings at run time").

use ir_spec::{PathSeg, Prompt, Segment, VarRoot, VarType, Variable};
use serde_json::Value;

use crate::api::{ErrorKind, RunError};
use crate::exec::{Artifact, Core};
use crate::value::{json_eq, write_text_form};

fn invalid(message: String) -> RunError {
    RunError::new(ErrorKind::InvalidVariable, message)
}

/// Renders `prompt`'s `system_template` for a call whose input is `input`.
///
/// Every declared variable is bound and checked, used or not; a failure is
/// `invalid_variable` and the model is not called.
pub(crate) fn render(core: &Core, prompt: &Prompt, input: &Value) -> Result<String, RunError> {
    let key = core.m.str(prompt.key);
    let bound: Vec<Option<Value>> = prompt
        .variables
        .iter()
        .map(|v| bind(v, input, key))
        .collect::<Result<_, _>>()?;
    let wf = core.wf.borrow();
    let mut out = String::new();
    for seg in &prompt.system {
        let p = match seg {
            Segment::Text(t) => {
                out.push_str(t);
                continue;
            }
            Segment::Var(p) => p,
        };
        let missing = || {
            invalid(format!(
                "prompt `{key}`: a placeholder path does not resolve"
            ))
        };
        match &p.root {
            VarRoot::Input => write(&mut out, walk(input, &p.path).ok_or_else(missing)?),
            VarRoot::Declared(i) => {
                if let Some(Some(v)) = bound.get(*i as usize) {
                    write(&mut out, walk(v, &p.path).ok_or_else(missing)?);
                }
            }
            VarRoot::Undeclared(name) => {
                let v = input
                    .as_object()
                    .and_then(|o| o.get(name))
                    .filter(|v| !v.is_null())
                    .or_else(|| core.host_vars.get(name))
                    .ok_or_else(|| {
                        invalid(format!(
                            "prompt `{key}`: `{{{{{name}}}}}` is neither an input member nor a host variable"
                        ))
                    })?;
                write(&mut out, walk(v, &p.path).ok_or_else(missing)?);
            }
            VarRoot::Artifact(id) => {
                let set = id
                    .and_then(|id| wf.artifacts.get(id.index()))
                    .and_then(Option::as_ref);
                match set {
                    None => {}
                    Some(Artifact::List(entries)) if p.path.is_empty() => {
                        for (i, e) in entries.iter().enumerate() {
                            if i > 0 {
                                out.push('\n');
                            }
                            write_text_form(&mut out, e);
                        }
                    }
                    Some(a) => write(&mut out, walk(&a.to_json(), &p.path).ok_or_else(missing)?),
                }
            }
            VarRoot::Artifacts => {
                let all: serde_json::Map<String, Value> = core
                    .m
                    .workflow
                    .iter()
                    .flat_map(|w| w.artifacts.iter().enumerate())
                    .filter_map(|(i, name)| {
                        let a = wf.artifacts.get(i)?.as_ref()?;
                        Some((core.m.str(*name).to_owned(), a.to_json()))
                    })
                    .collect();
                write(
                    &mut out,
                    walk(&Value::Object(all), &p.path).ok_or_else(missing)?,
                );
            }
        }
    }
    Ok(out)
}

fn write(out: &mut String, v: Value) {
    write_text_form(out, &v);
}

/// Follows a placeholder path; `None` when a member or index is missing or a
/// non-container is met.
fn walk(root: &Value, path: &[PathSeg]) -> Option<Value> {
    let mut v = root;
    for seg in path {
        v = match seg {
            PathSeg::Field(f) => v.as_object()?.get(f)?,
            PathSeg::Index(i) => v.as_array()?.get(*i as usize)?,
        };
    }
    Some(v.clone())
}

/// Binds one declared variable: the input's non-null member, else the default of an
/// optional variable; a missing required one or a value failing its type or validation
/// is `invalid_variable`. `None`: unset (renders empty).
fn bind(var: &Variable, input: &Value, key: &str) -> Result<Option<Value>, RunError> {
    let given = input
        .as_object()
        .and_then(|o| o.get(&var.name))
        .filter(|v| !v.is_null());
    let value = match (given, &var.default) {
        (Some(v), _) => v.clone(),
        (None, Some(d)) if !var.required => d.clone(),
        (None, _) if var.required => {
            return Err(invalid(format!(
                "prompt `{key}`: required variable `{}` is missing",
                var.name
            )))
        }
        (None, _) => return Ok(None),
    };
    check(var, &value)
        .map_err(|why| invalid(format!("prompt `{key}`: variable `{}` {why}", var.name)))?;
    Ok(Some(value))
}

/// The type and validation rules of `workflow.md` §14.
fn check(var: &Variable, v: &Value) -> Result<(), String> {
    let type_ok = match var.ty {
        None => true,
        Some(VarType::String) => v.is_string(),
        Some(VarType::Number) => v.is_number(),
        Some(VarType::Boolean) => v.is_boolean(),
        Some(VarType::Object) => v.is_object(),
        Some(VarType::Array) => v.is_array(),
    };
    if !type_ok {
        return Err("has the wrong type".into());
    }
    let rules = &var.validation;
    if let Some(s) = v.as_str() {
        if let Some(pattern) = &rules.pattern {
            let matches = regex::Regex::new(pattern).is_ok_and(|re| re.is_match(s));
            if !matches {
                return Err(format!("does not match `{pattern}`"));
            }
        }
        let len = s.chars().count() as u64;
        if rules.min_length.is_some_and(|m| len < m) || rules.max_length.is_some_and(|m| len > m) {
            return Err("has the wrong length".into());
        }
    }
    if let Some(x) = v.as_f64() {
        if rules.minimum.is_some_and(|m| x < m) || rules.maximum.is_some_and(|m| x > m) {
            return Err("is out of range".into());
        }
    }
    if let Some(allowed) = &rules.allowed {
        if !allowed.iter().any(|a| json_eq(a, v)) {
            return Err("is not one of the allowed values".into());
        }
    }
    Ok(())
}
