//! A compiled pack as a `.ppk` file: the [`container`](crate::container) holding one
//! postcard-encoded [`Module`].
//!
//! [`Artifact::decode`] is the door of STYLE.md item 5: it checks the container (size,
//! magic, version, checksum, section bounds), refuses unknown required sections, decodes
//! the `MODL` section, holds the module to the reader's [`DecodeLimits`] (counts of
//! steps, states, compositions…; [`Artifact::decode_with`] takes other ones) and runs
//! [`Module::validate`]. A module it returns may be indexed
//! without error paths. It never panics, whatever the bytes: postcard bounds every
//! allocation by the bytes present, and the recursive IR types ([`Pred`](crate::Pred),
//! [`Bind`](crate::Bind)) refuse nesting deeper than [`MAX_NESTING`].
//!
//! The checks run in the order of FORMAT.md §1 "Reading, in order", and the first that
//! fails names the error ([`ArtifactError::name`]): a file cut short is `truncated` before
//! its checksum is compared, a damaged one `corrupted`.

use crate::container::{Container, Tag};
pub use crate::error::ArtifactError;
use crate::limits::DecodeLimits;
pub use crate::nesting::MAX_NESTING;
use crate::Module;

/// The tag of the required section holding the postcard-encoded [`Module`].
pub const MODL: Tag = Tag(*b"MODL");

/// The tag of the required section holding every prompt's guards (validators), one list
/// per prompt in table order, written only when some prompt has one: a reader that does
/// not know it refuses the file rather than run without the pack's guardrails.
pub const GARD: Tag = Tag(*b"GARD");

/// The tag of the optional section holding the postcard-encoded [`SpecInfo`](crate::SpecInfo)
/// (format 1.1). A file without it is read as level 1.5 with no providers or governance.
pub const SPEC: Tag = Tag(*b"spec");

/// The tag of the optional section holding each agent member's `governance` (format
/// 1.2): one optional JSON text per member, in table order
/// ([`SpecInfo::agent_governance`](crate::SpecInfo::agent_governance)), written only when
/// some member has one. A file without it has no member governance.
pub const AGOV: Tag = Tag(*b"agov");

/// One member's `governance` in the `agov` section.
#[derive(serde::Serialize, serde::Deserialize)]
struct MemberGovernance(#[serde(with = "crate::json_text::option")] Option<serde_json::Value>);

/// A compiled pack: its provenance and its lowered module.
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    /// SHA-256 of the pack source bytes the artifact was built from.
    pub source_hash: [u8; 32],
    /// The compiler that built it, e.g. `packc 0.1.0` (at most 255 bytes are kept).
    pub compiler: String,
    /// The lowered module.
    pub module: Module,
}

impl Artifact {
    /// Encode as a `.ppk` file: header, the `MODL` section, CRC-32 trailer.
    ///
    /// The same artifact always gives the same bytes.
    pub fn encode(&self) -> Vec<u8> {
        // Serializing the IR into a Vec cannot fail: every sequence has a known length,
        // and JSON values (string keys only) always serialize to text.
        let modl = postcard::to_allocvec(&self.module).expect("the IR always serializes");
        let spec = postcard::to_allocvec(&self.module.spec).expect("the IR always serializes");
        let mut sections: Vec<(Tag, &[u8])> = vec![(MODL, &modl), (SPEC, &spec)];
        let gard;
        if self.module.prompts.iter().any(|p| !p.guards.is_empty()) {
            gard = postcard::to_allocvec(&self.module.guards()).expect("the IR always serializes");
            sections.push((GARD, &gard));
        }
        let agov;
        let members = &self.module.spec.agent_governance;
        if members.iter().any(Option::is_some) {
            let list: Vec<MemberGovernance> = members
                .iter()
                .map(|g| MemberGovernance(g.clone()))
                .collect();
            agov = postcard::to_allocvec(&list).expect("the IR always serializes");
            sections.push((AGOV, &agov));
        }
        Container::encode(self.source_hash, &self.compiler, &sections)
    }

    /// Decode and verify a `.ppk` file of at most `max_bytes` bytes
    /// ([`DEFAULT_MAX_ARTIFACT_BYTES`](crate::container::DEFAULT_MAX_ARTIFACT_BYTES) is the
    /// usual limit), under the default [`DecodeLimits`] otherwise. Optional sections this
    /// reader does not know are skipped.
    pub fn decode(bytes: &[u8], max_bytes: usize) -> Result<Artifact, ArtifactError> {
        let limits = DecodeLimits {
            max_artifact_bytes: max_bytes,
            ..DecodeLimits::default()
        };
        Artifact::decode_with(bytes, &limits)
    }

    /// Decode and verify a `.ppk` file within `limits`: the size before anything is read,
    /// the module's counts once it decoded, then [`Module::validate`].
    pub fn decode_with(bytes: &[u8], limits: &DecodeLimits) -> Result<Artifact, ArtifactError> {
        let container = Container::decode(bytes, limits.max_artifact_bytes)?;
        container.check_known(&[MODL, SPEC, GARD, AGOV])?;
        let payload = container.require(MODL)?;
        let mut module = decode_module(payload)?;
        if let Some(spec) = container.section(SPEC) {
            module.spec = decode_spec(spec)?;
        }
        if let Some(gard) = container.section(GARD) {
            decode_guards(gard, &mut module)?;
        }
        if let Some(agov) = container.section(AGOV) {
            module.spec.agent_governance = decode_member_governance(agov, &module)?;
        }
        limits.check(&module)?;
        module.validate()?;
        Ok(Artifact {
            source_hash: container.source_hash,
            compiler: container.compiler.to_owned(),
            module,
        })
    }
}

/// Decode a `spec` payload, which must be exactly one [`SpecInfo`](crate::SpecInfo).
fn decode_spec(payload: &[u8]) -> Result<crate::SpecInfo, ArtifactError> {
    let (spec, rest) = postcard::take_from_bytes::<crate::SpecInfo>(payload)
        .map_err(|e| ArtifactError::Decode(format!("section spec: {e}")))?;
    if !rest.is_empty() {
        return Err(ArtifactError::Decode(format!(
            "{} unexpected bytes after the spec section",
            rest.len()
        )));
    }
    Ok(spec)
}

/// Decode an `agov` payload: exactly one optional governance per agent member.
fn decode_member_governance(
    payload: &[u8],
    module: &Module,
) -> Result<Vec<Option<serde_json::Value>>, ArtifactError> {
    let (list, rest) = postcard::take_from_bytes::<Vec<MemberGovernance>>(payload)
        .map_err(|e| ArtifactError::Decode(format!("section agov: {e}")))?;
    if !rest.is_empty() || list.len() != module.agents.len() {
        return Err(ArtifactError::Decode(format!(
            "section agov holds {} governance entries for {} agent members",
            list.len(),
            module.agents.len()
        )));
    }
    Ok(list.into_iter().map(|g| g.0).collect())
}

/// Decode a `GARD` payload into `module`'s prompts: exactly one list of guards per prompt.
fn decode_guards(payload: &[u8], module: &mut Module) -> Result<(), ArtifactError> {
    let (guards, rest) = postcard::take_from_bytes::<Vec<Vec<crate::Guard>>>(payload)
        .map_err(|e| ArtifactError::Decode(format!("section GARD: {e}")))?;
    if !rest.is_empty() || guards.len() != module.prompts.len() {
        return Err(ArtifactError::Decode(format!(
            "section GARD holds {} guard lists for {} prompts",
            guards.len(),
            module.prompts.len()
        )));
    }
    for (p, g) in module.prompts.iter_mut().zip(guards) {
        p.guards = g;
    }
    Ok(())
}

/// Decode a `MODL` payload, which must be exactly one module.
fn decode_module(payload: &[u8]) -> Result<Module, ArtifactError> {
    crate::nesting::take_exceeded();
    let (module, rest) = postcard::take_from_bytes::<Module>(payload).map_err(|e| {
        if crate::nesting::take_exceeded() {
            ArtifactError::Decode(format!(
                "section MODL does not decode as a module: predicates or bindings nested deeper than {MAX_NESTING} levels"
            ))
        } else {
            ArtifactError::Decode(format!("section MODL does not decode as a module: {e}"))
        }
    })?;
    if !rest.is_empty() {
        return Err(ArtifactError::Decode(format!(
            "section MODL does not decode as a module: {} unexpected bytes after the module",
            rest.len()
        )));
    }
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{ContainerError, DEFAULT_MAX_ARTIFACT_BYTES};
    use crate::*;

    /// A small module touching every table, built by hand.
    fn sample() -> Artifact {
        let module = Module {
            id: "demo".into(),
            strings: vec!["p".into(), "t".into(), "s".into(), "c".into(), "a".into()],
            events: vec![StrId(0)],
            prompts: vec![Prompt {
                key: StrId(0),
                system: vec![Segment::Text("hi ".into())],
                variables: vec![],
                tools: vec![ToolRef::Tool(ToolId(0))],
                policy: ToolPolicy::default(),
                parameters: crate::JsonText::from_value(&serde_json::json!({"temperature": 0.2})),
                guards: vec![],
            }],
            tools: vec![Tool {
                key: StrId(1),
                name: "t".into(),
                description: String::new(),
                parameters: crate::JsonText::from_value(&serde_json::json!({"type": "object"})),
            }],
            workflow: Some(Workflow {
                entry: StateId(0),
                states: vec![State {
                    key: StrId(2),
                    body: StateBody::Prompt(PromptId(0)),
                    mode: Orchestration::Internal,
                    terminal: false,
                    on_event: vec![(EventId(0), StateId(0))],
                    max_visits: Some(3),
                    on_max_visits: None,
                    persistent: false,
                    artifacts: vec![],
                }],
                budget: Budget::default(),
                artifacts: vec![],
            }),
            agents: vec![],
            compositions: vec![Composition {
                key: StrId(3),
                steps: vec![
                    Step {
                        id: StrId(4),
                        kind: StepKind::Tool {
                            tool: ToolId(0),
                            args: Bind::Const(serde_json::json!({"q": 1})),
                        },
                        depends_on: vec![],
                        guarded_by: vec![],
                        max_attempts: 1,
                        evals: vec![],
                    },
                    Step {
                        id: StrId(0),
                        kind: StepKind::Branch {
                            predicate: Pred::Not(Box::new(Pred::Exists {
                                path: Ref {
                                    root: Root::Step(StepId(0)),
                                    path: ["x"].into_iter().collect(),
                                },
                                expect: true,
                            })),
                            then: StepId(2),
                            otherwise: None,
                        },
                        depends_on: vec![StepId(0)],
                        guarded_by: vec![],
                        max_attempts: 1,
                        evals: vec![],
                    },
                    Step {
                        id: StrId(2),
                        kind: StepKind::Tool {
                            tool: ToolId(0),
                            args: Bind::Const(serde_json::json!({})),
                        },
                        depends_on: vec![],
                        guarded_by: vec![StepId(1)],
                        max_attempts: 1,
                        evals: vec![],
                    },
                ],
                walk: vec![StepId(0), StepId(1), StepId(2)],
                output: Some(StepId(0)),
            }],
            spec: SpecInfo {
                level: SpecLevel::V1_9,
                holds_turn: vec![false],
                providers: vec![
                    Provider {
                        key: "default".into(),
                        role: "llm".into(),
                        required: true,
                    },
                    Provider {
                        key: "drafter".into(),
                        role: "llm".into(),
                        required: false,
                    },
                ],
                prompt_providers: vec![1],
                step_providers: vec![vec![0, 1, 0]],
                governance: Some(serde_json::json!({"approved_environments": ["prod"]})),
                agent_governance: vec![],
            },
        };
        Artifact {
            source_hash: [0xab; 32],
            compiler: "packc 0.1.0".into(),
            module,
        }
    }

    /// Rewrite the MODL payload of an encoded artifact, fixing up the length and CRC.
    fn with_modl(artifact: &Artifact, modl: &[u8]) -> Vec<u8> {
        Container::encode(artifact.source_hash, &artifact.compiler, &[(MODL, modl)])
    }

    #[test]
    fn round_trip_is_identity() {
        let a = sample();
        let bytes = a.encode();
        let back = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.encode(), bytes);
    }

    #[test]
    fn layout_is_modl_then_spec() {
        let a = sample();
        let bytes = a.encode();
        let c = Container::decode(&bytes, usize::MAX).unwrap();
        assert_eq!(c.minor, 2);
        assert_eq!(c.sections.len(), 2);
        assert_eq!(c.sections[1].0, SPEC);
        assert!(SPEC.is_optional());
        assert_eq!(
            c.sections[1].1,
            postcard::to_allocvec(&a.module.spec).unwrap().as_slice()
        );
        assert_eq!(c.sections[0].0, MODL);
        assert_eq!(
            c.sections[0].1,
            postcard::to_allocvec(&a.module).unwrap().as_slice()
        );
        // The module starts with its id: a postcard string, varint length then UTF-8.
        assert_eq!(&c.sections[0].1[..5], b"\x04demo");
    }

    /// Agent members' governance travels in the optional `agov` section, written only
    /// when some member has one, one entry per member; an older file has none, and an
    /// entry count that is not the member count is refused.
    #[test]
    fn member_governance_is_an_optional_section() {
        let mut a = sample();
        let key = a.module.prompts[0].key;
        for _ in 0..2 {
            a.module.agents.push(crate::Agent {
                key,
                start: crate::AgentStart::Plain(None),
            });
        }
        let plain = a.encode();
        let c = Container::decode(&plain, usize::MAX).unwrap();
        assert!(c.section(AGOV).is_none());
        let gov = serde_json::json!({"approved_environments": ["staging"]});
        a.module.spec.agent_governance = vec![None, Some(gov.clone())];
        let bytes = a.encode();
        let c = Container::decode(&bytes, usize::MAX).unwrap();
        assert!(AGOV.is_optional() && c.section(AGOV).is_some());
        let back = Artifact::decode(&bytes, usize::MAX).unwrap();
        assert_eq!(
            back.module.spec.agent_governance(crate::AgentId(1)),
            Some(&gov)
        );
        assert_eq!(back.module.spec.agent_governance(crate::AgentId(0)), None);
        assert_eq!(back, a);
        // One entry for two members.
        let modl = postcard::to_allocvec(&a.module).unwrap();
        let one = postcard::to_allocvec(&vec![MemberGovernance(Some(gov))]).unwrap();
        let short = Container::encode(a.source_hash, &a.compiler, &[(MODL, &modl), (AGOV, &one)]);
        let e = Artifact::decode(&short, usize::MAX).unwrap_err();
        assert_eq!(
            e.to_string(),
            "malformed .ppk file: section agov holds 1 governance entries for 2 agent members"
        );
    }

    #[test]
    fn every_cut_and_flip_is_rejected() {
        crate::container::tests::assert_every_cut_and_flip_fails(&sample().encode(), |b| {
            Artifact::decode(b, usize::MAX).is_err()
        });
    }

    #[test]
    fn without_a_spec_section_the_module_is_level_1_5() {
        let a = sample();
        let modl = postcard::to_allocvec(&a.module).unwrap();
        let back = Artifact::decode(&with_modl(&a, &modl), usize::MAX).unwrap();
        assert_eq!(back.module.spec, SpecInfo::default());
        assert_eq!(back.module.spec.level, SpecLevel::V1_5);
    }

    #[test]
    fn spec_indices_out_of_range_are_refused() {
        let mut a = sample();
        a.module.spec.prompt_providers = vec![2];
        let e = Artifact::decode(&a.encode(), usize::MAX).unwrap_err();
        assert!(e.to_string().contains("provider index"), "{e}");
        let mut a = sample();
        a.module.spec.holds_turn = vec![true, true];
        assert!(Artifact::decode(&a.encode(), usize::MAX).is_err());
    }

    #[test]
    fn modl_errors_are_named() {
        let a = sample();
        let modl = postcard::to_allocvec(&a.module).unwrap();

        // Garbage that checksums fine.
        let err = Artifact::decode(&with_modl(&a, &modl[..modl.len() / 2]), usize::MAX);
        assert!(matches!(err, Err(ArtifactError::Decode(_))), "{err:?}");

        let mut long = modl.clone();
        long.push(0);
        let err = Artifact::decode(&with_modl(&a, &long), usize::MAX).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed .ppk file: section MODL does not decode as a module: \
             1 unexpected bytes after the module"
        );

        // A module that decodes but points outside its tables.
        let mut bad = a.clone();
        bad.module.events = vec![StrId(99)];
        let err = Artifact::decode(&bad.encode(), usize::MAX).unwrap_err();
        assert!(matches!(err, ArtifactError::Invalid(_)), "{err:?}");

        // No MODL, or an unknown required section.
        let none = Container::encode([0; 32], "x", &[(Tag(*b"note"), b"")]);
        assert_eq!(
            Artifact::decode(&none, usize::MAX),
            Err(ArtifactError::Container(ContainerError::MissingSection(
                MODL
            )))
        );
        let extra = Container::encode([0; 32], "x", &[(MODL, &modl), (Tag(*b"CODE"), b"")]);
        assert_eq!(
            Artifact::decode(&extra, usize::MAX),
            Err(ArtifactError::Container(
                ContainerError::UnknownRequiredSection(Tag(*b"CODE"))
            ))
        );
        // An unknown optional section is skipped.
        let optional = Container::encode(
            a.source_hash,
            &a.compiler,
            &[(MODL, &modl), (Tag(*b"note"), b"hi")],
        );
        // (without a `spec` section, the module reads as level 1.5)
        let mut a = a;
        a.module.spec = SpecInfo::default();
        assert_eq!(Artifact::decode(&optional, usize::MAX), Ok(a));
    }

    #[test]
    fn schedule_violations_are_refused() {
        let refused = |edit: &dyn Fn(&mut Module)| {
            let mut a = sample();
            edit(&mut a.module);
            matches!(
                Artifact::decode(&a.encode(), usize::MAX),
                Err(ArtifactError::Invalid(_))
            )
        };
        assert!(!refused(&|_| {}), "the sample is valid");
        assert!(refused(
            &|m| m.compositions[0].walk = vec![StepId(1), StepId(0), StepId(2)]
        ));
        assert!(refused(
            &|m| m.compositions[0].walk = vec![StepId(0), StepId(0), StepId(2)]
        ));
        assert!(refused(
            &|m| m.compositions[0].steps[0].depends_on = vec![StepId(1)]
        ));
        assert!(refused(
            &|m| m.compositions[0].steps[0].guarded_by = vec![StepId(0)]
        ));
        assert!(refused(&|m| {
            if let StepKind::Branch { then, .. } = &mut m.compositions[0].steps[1].kind {
                *then = StepId(0);
            }
        }));
        assert!(refused(&|m| m.compositions[0].output = Some(StepId(9))));
    }

    #[test]
    fn hostile_lengths_do_not_allocate() {
        let a = sample();
        // A module whose id claims 2^63 bytes.
        let modl = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        assert!(matches!(
            Artifact::decode(&with_modl(&a, &modl), usize::MAX),
            Err(ArtifactError::Decode(_))
        ));
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let a = sample();
        let modl = postcard::to_allocvec(&a.module).unwrap();
        // Find the branch predicate `Not(Exists ..)` and nest a million more `Not`s over it.
        let inner = postcard::to_allocvec(&Pred::Exists {
            path: Ref {
                root: Root::Step(StepId(0)),
                path: ["x"].into_iter().collect(),
            },
            expect: true,
        })
        .unwrap();
        let not = postcard::to_allocvec(&Pred::Not(Box::new(Pred::All(vec![])))).unwrap()[0];
        let mut needle = vec![not];
        needle.extend_from_slice(&inner);
        let at = modl
            .windows(needle.len())
            .position(|w| w == needle.as_slice())
            .expect("the predicate is in the payload");
        let mut deep = modl[..at].to_vec();
        deep.extend(std::iter::repeat_n(not, 1_000_000));
        deep.extend_from_slice(&modl[at..]);
        let err = Artifact::decode(&with_modl(&a, &deep), usize::MAX).unwrap_err();
        assert!(err.to_string().contains("nested deeper"), "{err}");

        // Nesting up to the limit is fine.
        let mut ok = modl[..at].to_vec();
        ok.extend(std::iter::repeat_n(not, MAX_NESTING - 2));
        ok.extend_from_slice(&modl[at..]);
        Artifact::decode(&with_modl(&a, &ok), usize::MAX).unwrap();
    }
}
