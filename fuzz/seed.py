#!/usr/bin/env python3
"""Seed the fuzz corpora (fuzz/corpus/<target>/) from the packs this project knows.

Sources: ../shared/conformance/cases (the `pack:` of each case, as written, and its
`pack_file`), ../shared/corpus (every pack file), examples/ (the packs and the packs of
examples/cases). Every pack is a `check_source` seed; every pack that builds
(`packc build`) gives a `.ppk` for `artifact_load` and, prefixed with its length and
followed by a few driver byte strings, `artifact_mutate_run` seeds; `host_answers` gets
deterministic pseudo-random driver bytes for each example pack.

The seeds are written to a staging folder, then merged into fuzz/corpus/<target>/ with
libFuzzer's `-merge=1`, which keeps only inputs that add coverage. `--minimize` instead
rewrites each committed corpus as the merge of itself into an empty folder (after a long
run has added to it). To keep the committed corpora small (a few MB in all), the targets
with large inputs (`check_source`, `artifact_mutate_run`) merge on edges alone
(`-use_counters=0`: an input is kept for a new edge, not for a new hit count).

    python3 fuzz/seed.py                 # stage, then merge into fuzz/corpus/
    python3 fuzz/seed.py --no-merge      # stage only (prints the staging folder)
    python3 fuzz/seed.py --minimize      # shrink fuzz/corpus/<target>/ in place

Uses CARGO_TARGET_DIR when set (default target/fuzz of the repository) for `cargo run -p packc` and
`cargo fuzz`; the fuzz targets are built with RUSTC_BOOTSTRAP=1 (stable toolchain).
Needs python3 (standard library only), cargo and cargo-fuzz.
"""

import argparse
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
SHARED = ROOT.parent / "shared"
TARGETS = ["check_source", "artifact_load", "artifact_mutate_run", "host_answers"]
# The example packs, in the order of `packc_fuzz::packs::EXAMPLES`.
EXAMPLE_COUNT = 6


def case_pack(text):
    """The `pack:` block of a case file, dedented, as written; None if it has none."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if re.match(r"pack:\s*(#.*)?$", line):
            block = []
            for l in lines[i + 1:]:
                if l.strip() and not l[0].isspace() and not l.startswith("#"):
                    break
                block.append(l)
            indents = [len(l) - len(l.lstrip(" ")) for l in block if l.strip()]
            cut = min(indents) if indents else 0
            return "".join(l[cut:] if l.strip() else "\n" for l in block)
        m = re.match(r"pack:\s*(\{.*)$", line)
        if m:
            return m.group(1) + "\n"
    return None


def case_pack_file(path, text):
    m = re.search(r"^pack_file:\s*(\S+)", text, re.M)
    if m:
        p = (path.parent / m.group(1)).resolve()
        if p.is_file():
            return p
    return None


def packs(staging):
    """Every pack source: (name, path of a file holding it)."""
    out = []
    extracted = staging / "extracted"
    extracted.mkdir(parents=True, exist_ok=True)
    case_dirs = [SHARED / "conformance" / "cases", ROOT / "examples" / "cases"]
    for d in case_dirs:
        if not d.is_dir():
            print(f"seed: {d} is absent, skipped", file=sys.stderr)
            continue
        for case in sorted(d.glob("*.case.yaml")):
            text = case.read_text()
            pack = case_pack(text)
            if pack is not None:
                p = extracted / (case.name.replace(".case.yaml", ".pack.yaml"))
                p.write_text(pack)
                out.append(p)
            f = case_pack_file(case, text)
            if f is not None:
                out.append(f)
    corpus = SHARED / "corpus"
    if corpus.is_dir():
        out += sorted(p for p in corpus.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))
    else:
        print(f"seed: {corpus} is absent, skipped", file=sys.stderr)
    out += sorted((ROOT / "examples").glob("*.pack.yaml"))
    # One file per distinct content.
    seen, unique = set(), []
    for p in out:
        b = p.read_bytes()
        if b not in seen:
            seen.add(b)
            unique.append(p)
    return unique


def driver_bytes(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def stage(staging, env):
    dirs = {t: staging / t for t in TARGETS}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    built = staging / "built"
    built.mkdir(exist_ok=True)
    subprocess.run(["cargo", "build", "-q", "-p", "packc"], cwd=ROOT, env=env, check=True)
    packc = Path(env["CARGO_TARGET_DIR"]) / "debug" / "packc"
    rng = random.Random(0x9ac)
    n_packs = n_ppk = 0
    for i, pack in enumerate(packs(staging)):
        (dirs["check_source"] / f"{i:03}-{pack.name}").write_bytes(pack.read_bytes())
        n_packs += 1
        out = built / f"{i:03}-{pack.name}.ppk"
        r = subprocess.run([str(packc), "build", str(pack), "-o", str(out)],
                           capture_output=True)
        if r.returncode != 0 or not out.is_file():
            continue
        ppk = out.read_bytes()
        n_ppk += 1
        (dirs["artifact_load"] / out.name).write_bytes(ppk)
        framed = struct.pack("<I", len(ppk)) + ppk
        for j, n in enumerate([0, 64, 512]):
            (dirs["artifact_mutate_run"] / f"{out.name}.{j}").write_bytes(
                framed + driver_bytes(rng, n))
    for pack in range(EXAMPLE_COUNT):
        for j, n in enumerate([16, 64, 256, 1024]):
            for k in range(4):
                (dirs["host_answers"] / f"ex{pack}-{j}-{k}").write_bytes(
                    bytes([pack]) + driver_bytes(rng, n))
    print(f"seed: {n_packs} packs, {n_ppk} built artifacts, staged in {staging}")
    return dirs


# Extra libFuzzer flags of each target's merges (see the module docs).
MERGE_FLAGS = {
    "check_source": ["-use_counters=0"],
    "artifact_mutate_run": ["-use_counters=0"],
}


def merge_into(t, corpus, extra, env):
    """Merge the inputs of `extra` that add coverage into `corpus`."""
    cmd = ["cargo", "fuzz", "run", t, "--target-dir", env["CARGO_TARGET_DIR"],
           str(corpus), str(extra), "--",
           "-merge=1", "-rss_limit_mb=2048", "-timeout=10"] + MERGE_FLAGS.get(t, [])
    print("seed:", " ".join(cmd))
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"seed: the merge failed:\n{r.stdout}{r.stderr}")
    print("seed:", *[l for l in r.stderr.splitlines() if "new files with" in l])


def merge(dirs, env):
    for t in TARGETS:
        corpus = FUZZ / "corpus" / t
        corpus.mkdir(parents=True, exist_ok=True)
        merge_into(t, corpus, dirs[t], env)


def minimize(env):
    for t in TARGETS:
        corpus = FUZZ / "corpus" / t
        fresh = Path(tempfile.mkdtemp(prefix=f"packc-fuzz-{t}-"))
        merge_into(t, fresh, corpus, env)
        shutil.rmtree(corpus)
        shutil.copytree(fresh, corpus)
        shutil.rmtree(fresh)
        files = list(corpus.iterdir())
        size = sum(f.stat().st_size for f in files)
        print(f"seed: {t}: {len(files)} inputs, {size} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-merge", action="store_true", help="only stage the seeds")
    ap.add_argument("--minimize", action="store_true",
                    help="only shrink the committed corpora (merge each into an empty folder)")
    ap.add_argument("--staging", type=Path, help="staging folder (default: a temp folder)")
    args = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target" / "fuzz"))
    env["RUSTC_BOOTSTRAP"] = "1"
    if args.minimize:
        minimize(env)
        return
    staging = args.staging or Path(tempfile.mkdtemp(prefix="packc-fuzz-seeds-"))
    dirs = stage(staging, env)
    if not args.no_merge:
        merge(dirs, env)
        if args.staging is None:
            shutil.rmtree(staging)


if __name__ == "__main__":
    main()
