#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-batched-bench, the peer that bench/run.py measures stet
# against, llama-completion and llama-speculative-simple, the peer of bench/spec/run.py, and
# llama-server (continuous batching, -np N), the peer of bench/serve/run.py, from the llama.cpp sources vendored in the llama-cpp-python sdist (a pinned, hashable
# release), into ~/.cache/stet/llama.cpp-<version>/ — outside git: no llama.cpp code is committed.
# Writes build-info.txt there (sdist version, vendored llama.cpp commit, CMake flags, compiler),
# which run.py copies into the results header. Idempotent: an existing build is kept.
#
# Usage: bench/build_llamacpp.sh [--avx2] [LLAMA_CPP_PYTHON_VERSION]   (default 0.3.36)
#   --avx2: a build without AVX-512 (GGML_NATIVE=OFF, AVX2+FMA+F16C), the peer for
#           `stet --isa avx2` on an AVX-512 machine; into ~/.cache/stet/llama.cpp-<version>-avx2/.
#   --rpc: the native build with llama.cpp's RPC backend (-DGGML_RPC=ON): ggml-rpc-server and
#           llama-bench/llama-completion with --rpc, the multi-process peer of stet's tensor
#           parallelism (bench/tp/); into ~/.cache/stet/llama.cpp-<version>-rpc/.
#   --no-amx: AVX-512 (with the VNNI, VBMI, BF16 this CPU has) without AMX (GGML_NATIVE=OFF): where llama.cpp's
#           AMX backend crashes (a Sapphire Rapids VM here: SIGSEGV in ggml_backend_amx_mul_mat
#           at the first matmul, any model); into ~/.cache/stet/llama.cpp-<version>-noamx/.
# Env:   JOBS (default: nproc), STET_LLAMACPP_DIR (default ~/.cache/stet/llama.cpp-<version>[-avx2|-noamx])
set -euo pipefail

VARIANT=native
if [[ "${1:-}" == "--avx2" ]]; then
  VARIANT=avx2
  shift
elif [[ "${1:-}" == "--no-amx" ]]; then
  VARIANT=noamx
  shift
elif [[ "${1:-}" == "--rpc" ]]; then
  VARIANT=rpc
  shift
fi
VERSION="${1:-0.3.36}"
SUFFIX=""
[[ "$VARIANT" != native ]] && SUFFIX="-$VARIANT"
DEST="${STET_LLAMACPP_DIR:-$HOME/.cache/stet/llama.cpp-$VERSION$SUFFIX}"
JOBS="${JOBS:-$(nproc)}"
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
             -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF)
if [[ "$VARIANT" == avx2 ]]; then
  CMAKE_FLAGS+=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
                -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF
                -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF)
elif [[ "$VARIANT" == noamx ]]; then
  # The AVX-512 extensions this CPU has, and no AMX: built with one it lacks, ggml dies with
  # SIGILL (seen on an AVX-512 VNNI Xeon without VBMI/BF16/AVX-VNNI).
  has() { grep -qw "$1" /proc/cpuinfo && echo ON || echo OFF; }
  CMAKE_FLAGS+=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
                -DGGML_AVX512=ON "-DGGML_AVX512_VNNI=$(has avx512_vnni)"
                "-DGGML_AVX512_VBMI=$(has avx512_vbmi)" "-DGGML_AVX512_BF16=$(has avx512_bf16)"
                "-DGGML_AVX_VNNI=$(has avx_vnni)" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
                -DGGML_AMX_BF16=OFF)
elif [[ "$VARIANT" == rpc ]]; then
  CMAKE_FLAGS+=(-DGGML_NATIVE=ON -DGGML_RPC=ON)
else
  CMAKE_FLAGS+=(-DGGML_NATIVE=ON)
fi

TOOLS=(llama-bench llama-batched-bench llama-completion llama-speculative-simple llama-server)
[[ "$VARIANT" == rpc ]] && TOOLS=(llama-bench llama-completion ggml-rpc-server)
built=1
for t in "${TOOLS[@]}"; do [[ -x "$DEST/bin/$t" ]] || built=0; done
if [[ $built == 1 && -f "$DEST/build-info.txt" ]]; then
  echo "llama.cpp already built in $DEST"
  exit 0
fi

mkdir -p "$DEST"
cd "$DEST"
SDIST="llama_cpp_python-$VERSION.tar.gz"
if [[ ! -f "$SDIST" ]]; then
  # The sdist's link (with its sha256) from the package index's simple page: `pip download
  # --no-binary :all:` would build every build dependency from source just to read metadata.
  INDEX="${PIP_INDEX_URL:-https://pypi.org/simple}"
  LINK="$(curl -fsSL "$INDEX/llama-cpp-python/" | grep -o "href=\"[^\"]*/$SDIST#sha256=[0-9a-f]*" |
          head -1 | sed 's/^href="//')"
  [[ -n "$LINK" ]] || { echo "build_llamacpp: $SDIST not found in $INDEX" >&2; exit 1; }
  curl -fsSL -o "$SDIST.part" "${LINK%%#*}"
  echo "${LINK##*#sha256=}  $SDIST.part" | sha256sum -c --quiet -
  mv "$SDIST.part" "$SDIST"
fi
if [[ ! -d "src" ]]; then
  rm -rf unpack && mkdir unpack
  tar xzf "$SDIST" -C unpack
  mv "unpack/llama_cpp_python-$VERSION" src
  rm -rf unpack
fi
LLAMA_SRC="src/vendor/llama.cpp"
# The sdist keeps the submodule's HEAD (its own .git is a pointer into the parent's modules dir).
COMMIT="$(cat src/.git/modules/vendor/llama.cpp/HEAD 2>/dev/null || echo unknown)"

cmake -S "$LLAMA_SRC" -B build "${CMAKE_FLAGS[@]}"
cmake --build build --target "${TOOLS[@]}" -j "$JOBS"
mkdir -p bin
for t in "${TOOLS[@]}"; do cp "build/bin/$t" bin/; done

{
  echo "llama_cpp_python_sdist=$VERSION"
  echo "variant=$VARIANT"
  echo "llama_cpp_commit=$COMMIT"
  echo "cmake_flags=${CMAKE_FLAGS[*]}"
  echo "compiler=$(${CXX:-c++} --version | head -1)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > build-info.txt
cat build-info.txt
echo "llama.cpp tools in $DEST/bin"
