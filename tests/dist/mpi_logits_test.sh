#!/usr/bin/env bash
# mpirun -np N stet-logits prints, byte for byte, what one process prints: the
# SHA-256 of every step's logits for greedy, seeded n=2, 3-token chunked
# prefill and batched requests, and the fingerprint (tensor parallelism,
# issue 30). Usage: mpi_logits_test.sh STET_LOGITS MPIRUN MODEL STEPS N...
# MODEL "moe": a random qwen3moe made here with STET (env: the stet binary).
# A missing model skips (exit 77) outside CI and fails in CI (CI=true).
set -euo pipefail
logits=$1 mpirun=$2 model=$3 steps=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$model" = moe ]; then
  model=$tmp/moe.gguf
  "$STET" gguf-random --shape moe-tiny --type q8_0 --seed 3 -o "$model" >/dev/null
fi
if [ ! -f "$model" ]; then
  if [ "${CI:-}" = true ]; then echo "FAIL: required test material missing: $model" >&2; exit 1; fi
  echo "SKIP: test material not present: $model" >&2
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ms() { echo $(($(date +%s%N) / 1000000)); }
start=$(ms)
"$logits" "$model" --steps "$steps" >"$tmp/one.txt"
for n in "$@"; do
  t0=$(ms)
  "$mpirun" --oversubscribe -np "$n" "$logits" "$model" --steps "$steps" >"$tmp/np$n.txt"
  if ! cmp -s "$tmp/one.txt" "$tmp/np$n.txt"; then
    echo "FAIL: -np $n differs from one process on $model:" >&2
    diff "$tmp/one.txt" "$tmp/np$n.txt" | head -20 >&2
    exit 1
  fi
  echo "ok: -np $n = one process, $(wc -l <"$tmp/np$n.txt") lines ($(($(ms) - t0)) ms)"
done
echo "total $(($(ms) - start)) ms"
