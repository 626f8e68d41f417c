#!/usr/bin/env bash
# Every test of the repository: the Rust workspace, then the Python package (`python/`)
# built and installed into a fresh virtualenv, its typed code checked with mypy --strict,
# its stubs held to the built module by stubtest, and its pytest suite run. Each stage prints how long it took.
#
#   scripts/test-all.sh            # from the repository root (or anywhere: it cds there)
#   PACKC_VENV=/tmp/v scripts/test-all.sh   # another place for the virtualenv
set -euo pipefail
cd "$(dirname "$0")/.."

stage() {
  local name=$1
  shift
  local start=$SECONDS
  echo "== $name"
  "$@"
  echo "== $name: $((SECONDS - start)) s"
}

venv=${PACKC_VENV:-target/python-venv}
py="$venv/bin/python"

stage "cargo test --workspace" cargo test --workspace --locked
stage "virtualenv $venv" python3 -m venv --clear "$venv"
stage "test requirements" "$py" -m pip install --quiet --disable-pip-version-check \
  -r python/requirements-test.txt
# `pip install ./python` builds the wheel with maturin (release profile, abi3); the
# lock file must be current, as for every cargo command here.
stage "pip install ./python" env MATURIN_PEP517_ARGS="--locked" \
  "$py" -m pip install --quiet --disable-pip-version-check ./python
stage "mypy --strict" "$py" -m mypy --strict --config-file python/pyproject.toml \
  python/examples python/tests
# The stubs (`packc/_packc.pyi`) against the installed native module: every name,
# signature and `@final` as the module has it.
stage "stubtest" "$py" -m mypy.stubtest packc
# From the repository root, so `import packc` is the installed package (python/packc/
# alone lacks the native module).
stage "pytest" "$py" -m pytest python/tests -q -p no:cacheprovider
