#!/usr/bin/env bash
# The batch benchmark in one command: builds packc and the harness (release), installs
# LangGraph into a virtualenv, then prints the machine and one table: the loopback mock's
# ceiling alone, `packc batch` of RFC 0010 example 2 at each number of rows in flight,
# and LangGraph over the same rows (benches/README.md, "Batch", explains the columns).
#
#   benches/batch/run.sh                      # 20,000 rows at 100 / 1,000 / 5,000 in flight
#   ROWS=2000 IN_FLIGHT=100,1000 benches/batch/run.sh
#   LANGGRAPH=0 benches/batch/run.sh          # no LangGraph row (no virtualenv needed)
#
# Settings (environment): ROWS (20000), IN_FLIGHT (100,1000,5000), LATENCY_MS (50),
# LANGGRAPH (1), LANGGRAPH_IN_FLIGHT (1000), LANGGRAPH_ROWS (2000: the first rows of the
# same file; LangGraph's rate does not depend on how many), CEILING_SECS (10),
# PACKC_BENCH_VENV (target/batch-bench-venv), WORK (target/batch-bench).
set -euo pipefail
cd "$(dirname "$0")/../.."

rows=${ROWS:-20000}
in_flight=${IN_FLIGHT:-100,1000,5000}
latency=${LATENCY_MS:-50}
venv=${PACKC_BENCH_VENV:-target/batch-bench-venv}
work=${WORK:-target/batch-bench}

cargo build --release --locked -q -p packc -p packc-batch-bench

langgraph=()
if [ "${LANGGRAPH:-1}" != 0 ]; then
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r benches/batch/requirements.txt
  langgraph=(--langgraph "$venv/bin/python benches/batch/langgraph_ex2.py --base-url {base_url} --input {input} --output {output} --max-concurrency {in_flight}"
             --langgraph-in-flight "${LANGGRAPH_IN_FLIGHT:-1000}" --langgraph-rows "${LANGGRAPH_ROWS:-2000}")
fi

echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with local changes)'), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/ {print $2}') GB"
echo "before: $(uptime | sed 's/.*load average/load average/')"
echo

target/release/batch-bench sweep \
  --rows "$rows" --in-flight "$in_flight" --latency-ms "$latency" \
  --ceiling-secs "${CEILING_SECS:-10}" --work "$work" \
  --pack examples/rfc0010-ex2.pack.yaml \
  --packc "target/release/packc batch {pack} --input {input} --output {output} --provider openai --model mock --base-url {base_url} --concurrency {in_flight} --rows-in-flight {in_flight} --fresh" \
  "${langgraph[@]}"

echo
echo "after: $(uptime | sed 's/.*load average/load average/')"
