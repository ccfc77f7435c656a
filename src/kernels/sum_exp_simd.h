// SumExpShifted's SIMD control flow, shared by the AVX2 and NEON paths: a
// template over a small vector-traits struct V (V::kWidth lanes of float; Splat,
// Load, Sub, Exp — lane for lane ExpF's bits —, Store, and two compares), so
// only the vector width and the instructions differ between the paths.
//
// Numerics: the exps of y = x - shift (the same one subtraction per element)
// are added into one float s one by one in index order — the serial sum of
// ref/sum_exp.cc. Only adds that cannot change s are left out: per chunk of 64
// elements, an e below SumSkipBelow(s) (internal.h; s only grows, so the bound
// of any earlier s holds), and a vector whose every y is below SumSkipArgBelow
// is not even exp'ed. Chunk c + 1 is tested against the bound of s before chunk
// c's adds (an older bound is as exact, it just skips less), so its exps need
// not wait for those adds; one loop per chunk over its kept lanes keeps
// mispredicted branches few. Include only from files compiled for V's ISA.
#pragma once

#include <cstdint>

#include "kernels/internal.h"

namespace stet::kernels {

template <typename V>
struct SumExpSimd {
  using Vec = typename V::Vec;
  static constexpr int kChunk = 64;  // elements tested against one bound
  static constexpr int kVecs = kChunk / V::kWidth;
  static_assert(kVecs <= 32 && kChunk <= 64);

  // The vectors of x[0, 64) with a lane whose y is not below arg_below (NaN included).
  static uint32_t VectorsToExp(const float* x, Vec sh, Vec arg_below) {
    uint32_t need = 0;
    for (int v = 0; v < kVecs; ++v) {
      const Vec y = V::Sub(V::Load(x + V::kWidth * v), sh);
      need |= (V::AnyNotBelow(y, arg_below) ? 1u : 0u) << v;
    }
    return need;
  }

  // The exps of the `need` vectors of x[0, 64) into e; returns the lanes that may
  // change the sum (not e < below: NaNs are kept, and every lane while below is 0).
  static uint64_t ExpChunk(const float* x, Vec sh, Vec below, uint32_t need, float* e) {
    uint64_t keep = 0;
    while (need != 0) {
      const int v = __builtin_ctz(need);
      need &= need - 1;
      const Vec ev = V::Exp(V::Sub(V::Load(x + V::kWidth * v), sh));
      V::Store(e + V::kWidth * v, ev);
      keep |= static_cast<uint64_t>(V::LanesNotBelow(ev, below)) << (V::kWidth * v);
    }
    return keep;
  }

  // Tests chunk x[0, 64) against the bound of a sum s: its e's into e, the lanes
  // to add returned.
  static uint64_t PrepareChunk(const float* x, Vec sh, float s, float* e) {
    const float below = SumSkipBelow(s);
    const uint32_t need = VectorsToExp(x, sh, V::Splat(SumSkipArgBelow(below)));
    return need == 0 ? 0 : ExpChunk(x, sh, V::Splat(below), need, e);
  }

  static float Sum(const float* x, int64_t n, float shift) {
    const Vec sh = V::Splat(shift);
    float s = 0.0f;
    const int64_t chunks = n / kChunk;
    alignas(64) float e[2][kChunk];
    uint64_t keep = chunks > 0 ? PrepareChunk(x, sh, s, e[0]) : 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const uint64_t next =
          c + 1 < chunks ? PrepareChunk(x + (c + 1) * kChunk, sh, s, e[(c + 1) & 1]) : 0;
      const float* ec = e[c & 1];
      while (keep != 0) {
        s += ec[__builtin_ctzll(keep)];
        keep &= keep - 1;
      }
      keep = next;
    }
    for (int64_t i = chunks * kChunk; i < n; ++i) s += ExpF(x[i] - shift);
    return s;
  }
};

}  // namespace stet::kernels
