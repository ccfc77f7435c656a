#!/usr/bin/env bash
# A model larger than one process's memory limit runs split across two ranks
# (issue 30). The Llama-3.2-1B shape (random q4_k weights, 735 MiB file): with an
# address-space limit below the file's size (prlimit --as), one process cannot
# even map the file; under mpirun -np 2 each rank maps only its half of the rows
# and the output equals the unlimited one-process output byte for byte.
# STET_NO_PACK=1 keeps the mapped file as the only copy of the weights (the
# AVX-512 packed copies would double each rank's share), MALLOC_ARENA_MAX=1 keeps
# glibc from reserving 64 MiB of address space per thread.
# Usage: bench/tp/prlimit_demo.sh [STET] [LIMIT_BYTES]   (default limit 600000000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stet=${1:-$here/../../build/bin/stet}
limit=${2:-600000000}
model=$HOME/.cache/stet/bench-models/llama-3.2-1b.q4_k.seed1.gguf
if [ ! -f "$model" ]; then
  mkdir -p "$(dirname "$model")"
  "$stet" gguf-random --shape llama-3.2-1b --type q4_k --seed 1 -o "$model.tmp" && mv "$model.tmp" "$model"
fi
export STET_NO_PACK=1 MALLOC_ARENA_MAX=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args=(run -m "$model" -p "The answer is" -n 12 --temp 0 -t 1 -q -c 512)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model: $model ($(($(stat -c %s "$model") / 1048576)) MiB); limit: $((limit / 1048576)) MiB of address space per process"
"$stet" "${args[@]}" >"$tmp/free.txt"
echo "1 process, no limit:      ok"
if prlimit --as="$limit" "$stet" "${args[@]}" >"$tmp/one.txt" 2>"$tmp/one.err"; then
  echo "1 process under the limit: unexpectedly ran (raise the model or lower the limit)"
  exit 1
fi
echo "1 process under the limit: fails: $(grep -o 'error: .*' "$tmp/one.err" | head -1)"
mpirun --oversubscribe -np 2 -x STET_NO_PACK -x MALLOC_ARENA_MAX prlimit --as="$limit" \
  "$stet" "${args[@]}" >"$tmp/two.txt"
cmp -s "$tmp/free.txt" "$tmp/two.txt" || { echo "2 ranks: output differs"; exit 1; }
echo "2 ranks under the limit:  ok, the same bytes as one process without it"
