#!/usr/bin/env bash
# End-to-end check of `stet probe`, `stet eval` and `stet drift` against a real
# OpenAI-compatible server: llama-cpp-python's (pip install 'llama-cpp-python[server]'),
# started here on 127.0.0.1 only and stopped on exit. Run by hand; results and
# reports go to $OUT (default /tmp/stet-e2e-llamacpp). Bounded: a few hundred
# short requests in all. Exit status: 0 when every step behaved as expected.
#
# Usage: tests/forensics/e2e_llamacpp.sh [path/to/stet]
#   env: PORT (8081), MODEL (~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf),
#        OUT, THREADS (1), RUNS (8)
set -uo pipefail
cd "$(dirname "$0")/../.."
STET="${1:-${STET:-build-forensics/bin/stet}}"
PORT="${PORT:-8081}"
MODEL="${MODEL:-$HOME/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
OUT="${OUT:-/tmp/stet-e2e-llamacpp}"
THREADS="${THREADS:-1}"
RUNS="${RUNS:-8}"
EP="http://127.0.0.1:$PORT"

[ -x "$STET" ] || { echo "e2e: no stet binary at $STET" >&2; exit 2; }
[ -s "$MODEL" ] || { echo "e2e: no model at $MODEL (run scripts/setup)" >&2; exit 2; }
python3 -c "import llama_cpp.server" 2>/dev/null ||
  { echo "e2e: pip install 'llama-cpp-python[server]' first" >&2; exit 2; }
if curl -s -o /dev/null "$EP/v1/models"; then
  echo "e2e: something already listens on $EP; set PORT" >&2; exit 2
fi
mkdir -p "$OUT"

python3 -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --n_threads "$THREADS" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null' EXIT
for _ in $(seq 1 120); do
  curl -s -o /dev/null "$EP/v1/models" && break
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "e2e: server died:"; tail -20 "$OUT/server.log"; exit 2; }
  sleep 0.5
done
curl -s -o /dev/null "$EP/v1/models" || { echo "e2e: server did not come up" >&2; exit 2; }
echo "e2e: llama-cpp-python $(python3 -c 'import llama_cpp; print(llama_cpp.__version__)') on $EP, $THREADS thread(s)"

failures=0
# step NAME ALLOWED_EXIT_CODES -- command...
step() {
  local name="$1" allowed="$2"
  shift 3
  echo
  echo "== $name: $*"
  "$@"
  local rc=$?
  if [[ " $allowed " == *" $rc "* ]]; then
    echo "-- $name: exit $rc (expected one of: $allowed)"
  else
    echo "-- $name: exit $rc, expected one of: $allowed  <-- FAILED"
    failures=$((failures + 1))
  fi
}

# 1. Probe, completions endpoint, with companion traffic. 0 or 1 are both findings.
step probe-completions "0 1" -- "$STET" probe --endpoint "$EP" -m smollm2 \
  -p "The three most important inventions of the 20th century are" \
  -n "$RUNS" -c 1,4,8 --max-tokens 48 --temperature 0 --seed 1 \
  --json "$OUT/probe_completions.json" --html "$OUT/probe_completions.html"

# 2. Probe, chat endpoint (messages file), non-streamed.
printf '%s\n' '[{"role": "system", "content": "You are a terse assistant."},' \
  ' {"role": "user", "content": "Explain in two sentences why the sky is blue."}]' >"$OUT/messages.json"
step probe-chat "0 1" -- "$STET" probe --endpoint "$EP" -m smollm2 --messages "$OUT/messages.json" \
  -n "$RUNS" -c 1,4,8 --max-tokens 48 --json "$OUT/probe_chat.json" --html "$OUT/probe_chat.html"

# 3. The same over SSE streaming (llama-cpp-python interrupts a running stream
#    when another request arrives: expect empty answers at concurrency > 1).
step probe-chat-stream "0 1" -- "$STET" probe --endpoint "$EP" -m smollm2 --messages "$OUT/messages.json" \
  -n 4 -c 1,4 --max-tokens 24 --stream --json "$OUT/probe_stream.json"

# 4. Probe without companion traffic: N identical requests in flight.
step probe-no-companion "0 1" -- "$STET" probe --endpoint "$EP" -m smollm2 \
  -p "Once upon a time" -n "$RUNS" -c 1,8 --max-tokens 32 --no-companion --json "$OUT/probe_nocomp.json"

# 5. Eval: greedy, then sampled with per-repeat seeds, then compare.
cat >"$OUT/dataset.jsonl" <<'JSONL'
{"id": "capital-fr", "prompt": "The capital of France is", "expected": "Paris", "metric": "contains", "max_tokens": 8}
{"id": "capital-de", "prompt": "The capital of Germany is", "expected": "Berlin", "metric": "contains", "max_tokens": 8}
{"id": "capital-it", "prompt": "The capital of Italy is", "expected": "Rome", "metric": "contains", "max_tokens": 8}
{"id": "arith", "prompt": "Q: What is 2 + 2?\nA:", "expected": "\\b4\\b", "metric": "regex", "max_tokens": 6}
{"id": "sky", "messages": [{"role": "user", "content": "What color is the sky on a clear day? Answer in one word."}], "expected": "(?i)blue", "metric": "regex", "max_tokens": 8}
{"id": "json-obj", "messages": [{"role": "user", "content": "Reply with exactly this JSON and nothing else: {\"ok\": true}"}], "expected": {"ok": true}, "metric": "json", "max_tokens": 16}
{"id": "echo", "prompt": "Repeat after me: hello world\nhello world\nRepeat after me: good night\n", "expected": "good night", "metric": "contains", "max_tokens": 6}
{"id": "days", "prompt": "Monday, Tuesday, Wednesday,", "expected": "Thursday", "metric": "contains", "max_tokens": 6}
JSONL
step eval-greedy "0" -- "$STET" eval --endpoint "$EP" -m smollm2 --dataset "$OUT/dataset.jsonl" \
  --repeats 5 --concurrency 4 --temperature 0 --seed-policy fixed --out "$OUT/eval_greedy"
step eval-sampled "0" -- "$STET" eval --endpoint "$EP" -m smollm2 --dataset "$OUT/dataset.jsonl" \
  --repeats 5 --concurrency 4 --temperature 0.9 --seed-policy per-repeat --out "$OUT/eval_sampled"
step eval-compare "0" -- "$STET" eval compare "$OUT/eval_greedy/results.json" \
  "$OUT/eval_sampled/results.json" --json "$OUT/eval_compare.json"

# 6. Drift: save a baseline, compare with it, against the same endpoint at
#    concurrency 4, and with a deliberately perturbed baseline (must exit 1).
printf '%s\n' "The capital of France is" "def fibonacci(n):" "Once upon a time" \
  "The chemical symbol for gold is" "1, 1, 2, 3, 5, 8," >"$OUT/prompts.txt"
step drift-save "0" -- "$STET" drift --endpoint "$EP" -m smollm2 --prompts "$OUT/prompts.txt" \
  --save "$OUT/drift_baseline.json"
step drift-baseline "0" -- "$STET" drift --endpoint "$EP" -m smollm2 --prompts "$OUT/prompts.txt" \
  --baseline "$OUT/drift_baseline.json" --json "$OUT/drift_baseline_cmp.json"
step drift-against "0" -- "$STET" drift --endpoint "$EP" -m smollm2 --prompts "$OUT/prompts.txt" \
  --against "$EP" -c 4 --json "$OUT/drift_against_cmp.json"
python3 - "$OUT/drift_baseline.json" "$OUT/drift_perturbed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["prompts"]:  # swap the two most likely tokens at every position
    for pos in p["positions"]:
        if len(pos["top"]) >= 2:
            pos["top"][0][1], pos["top"][1][1] = pos["top"][1][1], pos["top"][0][1]
json.dump(d, open(sys.argv[2], "w"))
PY
step drift-perturbed "1" -- "$STET" drift --endpoint "$EP" -m smollm2 --prompts "$OUT/prompts.txt" \
  --baseline "$OUT/drift_perturbed.json"

# 7. Errors: a wrong model name is passed through by this server; a wrong port is not.
step probe-dead-port "2" -- "$STET" probe --endpoint "http://127.0.0.1:9" -m smollm2 -p hi -n 2 -c 1 --timeout 5

if command -v xmllint >/dev/null; then
  for f in "$OUT"/probe_completions.html "$OUT"/probe_chat.html "$OUT"/eval_greedy/report.html; do
    if xmllint --noout "$f"; then echo "well-formed: $f"; else echo "NOT well-formed: $f"; failures=$((failures + 1)); fi
  done
fi
echo
echo "e2e: $failures failed step(s); reports in $OUT"
[ "$failures" -eq 0 ]
