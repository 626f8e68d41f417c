#!/usr/bin/env python3
"""Regenerates chain-100.pack.yaml and chain-1000.pack.yaml. Run from this folder."""


def chain(n):
    lines = [
        f"# A linear chain of {n} prompt steps, each binding the previous step's output",
        "# (`${prev.output.x}`): the chain rows of benches/vm.rs. Generated; regenerate with",
        "# benches/packs/gen.py.",
        f"id: chain-{n}",
        f"name: Chain of {n}",
        "version: 1.0.0",
        'template_engine: {version: v1, syntax: "{{variable}}"}',
        "prompts:",
        '  step: {id: step, name: Step, version: 1.0.0, system_template: "Transform the input."}',
        "workflow:",
        "  version: 1",
        "  entry: main",
        "  states:",
        "    main: {orchestration: composition, composition: chain, terminal: true}",
        "compositions:",
        "  chain:",
        "    version: 1",
        "    steps:",
        '      - {id: s0, kind: prompt, prompt_task: step, input: "${input.x}"}',
    ]
    for i in range(1, n):
        lines.append(f'      - {{id: s{i}, kind: prompt, prompt_task: step, input: "${{s{i-1}.output.x}}"}}')
    return "\n".join(lines) + "\n"


for n in (100, 1000):
    with open(f"chain-{n}.pack.yaml", "w") as f:
        f.write(chain(n))
