// AttendHead over n_kv = 1..300 with f32 and f16 caches: AVX2 == scalar bit for
// bit; the result depends only on positions [0, n_kv) (not on what lies beyond,
// nor on the stride/layout of the cache) — what makes decode and prefill agree
// (R2, R3); and it is within a bound derived from the score and softmax error
// of a float64 attention over the stored K/V.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace stet::kernels {
namespace {

// A cache of `cap` positions, each row holding n_heads heads of head_dim.
struct Cache {
  DType type;
  int head_dim, n_heads;
  int64_t cap;
  std::vector<uint8_t> k, v;
  int64_t stride() const { return static_cast<int64_t>(n_heads) * head_dim * elem(); }
  int elem() const { return type == DType::kF32 ? 4 : 2; }
  int64_t head_bytes(int h) const { return static_cast<int64_t>(h) * head_dim * elem(); }
  KvRows kh(int h) const { return {k.data() + head_bytes(h), stride()}; }
  KvRows vh(int h) const { return {v.data() + head_bytes(h), stride()}; }
  // The stored value (what attention reads) as float.
  float At(const std::vector<uint8_t>& buf, int64_t t, int h, int j) const {
    const uint8_t* p =
        buf.data() + t * stride() + (static_cast<int64_t>(h) * head_dim + j) * elem();
    if (type == DType::kF32) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    uint16_t b;
    std::memcpy(&b, p, 2);
    return F16ToF32(b);
  }
};

Cache MakeCache(std::mt19937& rng, DType type, int head_dim, int n_heads, int64_t cap) {
  Cache c{type, head_dim, n_heads, cap, {}, {}};
  const int64_t n = cap * n_heads * head_dim;
  c.k.resize(static_cast<size_t>(n * c.elem()));
  c.v.resize(static_cast<size_t>(n * c.elem()));
  const auto kf = testing::RandomFloats(rng, n, -2.0f, 2.0f);
  const auto vf = testing::RandomFloats(rng, n, -2.0f, 2.0f);
  StoreRow(kf.data(), n, type, c.k.data(), Isa::kScalar);
  StoreRow(vf.data(), n, type, c.v.data(), Isa::kScalar);
  return c;
}

// c's rows scattered over the blocks of `table` (block_rows positions each; a
// pool of n_pool blocks, those no entry names filled with 0xff: nan in f16 and
// f32), and views of head 1 read through the table.
struct PagedCache {
  std::vector<int32_t> table;
  int64_t block_rows;
  std::vector<uint8_t> k, v;
  KvRows kh(const Cache& c) const {
    return {k.data() + c.head_bytes(1), c.stride(), table.data(), block_rows};
  }
  KvRows vh(const Cache& c) const {
    return {v.data() + c.head_bytes(1), c.stride(), table.data(), block_rows};
  }
};

PagedCache Page(const Cache& c, std::vector<int32_t> table, int64_t block_rows, int64_t n_pool) {
  PagedCache p{std::move(table), block_rows, {}, {}};
  p.k.assign(static_cast<size_t>(n_pool * block_rows * c.stride()), 0xff);
  p.v.assign(p.k.size(), 0xff);
  for (int64_t t = 0; t < c.cap; ++t) {
    const int64_t at = (p.table[t / block_rows] * block_rows + t % block_rows) * c.stride();
    std::memcpy(&p.k[at], &c.k[t * c.stride()], c.stride());
    std::memcpy(&p.v[at], &c.v[t * c.stride()], c.stride());
  }
  return p;
}

std::vector<float> Attend(const Cache& c, int h, const std::vector<float>& q, int64_t n_kv,
                          float scale, Isa isa, float softcap = 0.0f) {
  std::vector<float> out(c.head_dim, -5.0f), scratch(static_cast<size_t>(n_kv));
  AttendHead(q.data(), c.kh(h), c.vh(h), c.type, n_kv, c.head_dim, scale, softcap, out.data(),
             scratch.data(), isa);
  return out;
}

class AttendHeadTest : public ::testing::TestWithParam<DType> {};

TEST_P(AttendHeadTest, Avx2EqualsScalar) {
  STET_REQUIRE_AVX2();
  std::mt19937 rng(71);
  for (int head_dim : {64, 128, 80, 13, 8, 1}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 2, 300);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (int64_t n_kv = 1; n_kv <= 300; ++n_kv) {
      if (head_dim < 64 && n_kv % 7 != 0 && n_kv > 20) continue;  // fewer odd shapes
      const auto q = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      const int h = static_cast<int>(n_kv % 2);
      const auto s = Attend(c, h, q, n_kv, scale, Isa::kScalar);
      const auto a = Attend(c, h, q, n_kv, scale, Isa::kAvx2);
      ASSERT_TRUE(testing::SameBits(s.data(), a.data(), head_dim))
          << "head_dim=" << head_dim << " n_kv=" << n_kv;
    }
  }
}

// The NEON kernel (aarch64; under qemu in CI): head_dims with 64-, 16- and 4-dim
// chunks and a scalar tail, every n_kv up to 300 (the 8-wide softmax and its tail).
TEST_P(AttendHeadTest, NeonEqualsScalar) {
  STET_REQUIRE_NEON();
  std::mt19937 rng(72);
  for (int head_dim : {64, 128, 80, 13, 8, 1}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 2, 300);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (int64_t n_kv = 1; n_kv <= 300; ++n_kv) {
      if (n_kv % 7 != 0 && n_kv > 20) continue;  // fewer shapes: emulation is slow
      const auto q = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      const int h = static_cast<int>(n_kv % 2);
      for (float softcap : {0.0f, 3.0f}) {
        const auto s = Attend(c, h, q, n_kv, scale, Isa::kScalar, softcap);
        const auto a = Attend(c, h, q, n_kv, scale, Isa::kNeon, softcap);
        ASSERT_TRUE(testing::SameBits(s.data(), a.data(), head_dim))
            << "head_dim=" << head_dim << " n_kv=" << n_kv << " softcap=" << softcap;
      }
    }
  }
}

// AttendHeadPair == two scalar AttendHead calls, on every SIMD path this host
// has (the scalar pair is two scalar calls by definition, so it is not a check):
// equal and different n_kv either way round, head_dims with and without the
// AVX-512 kernel (head_dim % 8 != 0 falls back to two AVX2 calls; 8, 40 and 136
// end in half a 16-dim vector; 256 in f16 takes the software prefetch).
TEST_P(AttendHeadTest, PairEqualsTwoSingleCalls) {
  STET_REQUIRE_AVX2();
  std::mt19937 rng(73);
  for (int head_dim : {64, 128, 96, 16, 8, 13, 40, 120, 136, 256}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 2, 140);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (auto [n0, n1] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 2}, {2, 1}, {7, 8}, {8, 9}, {17, 16}, {64, 64}, {100, 131}, {139, 5}}) {
      const auto q0 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      const auto q1 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      const auto want0 = Attend(c, 1, q0, n0, scale, Isa::kScalar);
      const auto want1 = Attend(c, 1, q1, n1, scale, Isa::kScalar);
      for (Isa isa : testing::AvailableIsas()) {
        if (isa == Isa::kScalar) continue;
        std::vector<float> out0(head_dim, -5.0f), out1(head_dim, -5.0f);
        std::vector<float> scratch(static_cast<size_t>(2 * std::max(n0, n1) + 2 * head_dim));
        AttendHeadPair(q0.data(), q1.data(), c.kh(1), c.vh(1), c.type, n0, n1, head_dim, scale,
                       0.0f, out0.data(), out1.data(), scratch.data(), isa);
        ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim))
            << IsaName(isa) << " head_dim=" << head_dim << " n0=" << n0 << " n1=" << n1;
        ASSERT_TRUE(testing::SameBits(want1.data(), out1.data(), head_dim))
            << IsaName(isa) << " head_dim=" << head_dim << " n0=" << n0 << " n1=" << n1;
      }
    }
  }
}

// AttendHeads (many queries over one KV head, K/V walked in blocks) equals one
// scalar AttendHead per query, for query counts that leave a lone query, n_kv
// that differ per query (causal prefill), end inside and past a block, and a
// paged cache read through a block table, with and without soft-capping;
// head_dim 13 takes the fallback, 40 and 136 end in half a 16-dim vector.
TEST_P(AttendHeadTest, HeadsEqualSingleCalls) {
  std::mt19937 rng(77);
  for (int head_dim : {64, 128, 96, 16, 8, 13, 40, 120, 136}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 2, 300);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    // A paged copy: blocks of 16 positions in reverse order.
    const int64_t block_rows = 16, n_blocks = (c.cap + block_rows - 1) / block_rows;
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(n_blocks - 1 - b);
    const PagedCache paged_cache = Page(c, std::move(table), block_rows, n_blocks);
    const KvRows pk = paged_cache.kh(c), pv = paged_cache.vh(c);
    for (int nq : {1, 2, 3, 5, 12, kMaxAttendQueries}) {
      std::vector<std::vector<float>> q(nq), want(nq), out(nq);
      std::vector<int64_t> n_kv(nq);
      std::uniform_int_distribution<int64_t> len(1, c.cap);
      const int64_t base = len(rng);
      const float cap = nq == 5 ? 30.0f : 0.0f;  // Gemma 2's soft-capping on one count
      for (int i = 0; i < nq; ++i) {
        q[i] = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
        // Causal prefill (base + token), or equal lengths (heads of one token).
        n_kv[i] = nq % 2 == 1 ? std::min<int64_t>(c.cap, base + i / 2) : len(rng);
        want[i] = Attend(c, 1, q[i], n_kv[i], scale, Isa::kScalar, cap);
      }
      const int64_t n_max = *std::max_element(n_kv.begin(), n_kv.end());
      std::vector<float> scratch(static_cast<size_t>(AttendHeadsScratch(nq, n_max, head_dim)));
      std::vector<const float*> qp(nq);
      std::vector<float*> op(nq);
      for (Isa isa : testing::AvailableIsas()) {
        for (bool paged : {false, true}) {
          for (int i = 0; i < nq; ++i) {
            out[i].assign(head_dim, -5.0f);
            qp[i] = q[i].data();
            op[i] = out[i].data();
          }
          AttendHeads(qp.data(), n_kv.data(), nq, paged ? pk : c.kh(1), paged ? pv : c.vh(1),
                      c.type, head_dim, scale, cap, op.data(), scratch.data(), isa);
          for (int i = 0; i < nq; ++i) {
            ASSERT_TRUE(testing::SameBits(want[i].data(), out[i].data(), head_dim))
                << IsaName(isa) << " head_dim=" << head_dim << " nq=" << nq << " query " << i
                << " n_kv=" << n_kv[i] << (paged ? " paged" : "");
          }
        }
      }
    }
  }
}

// AttendScores + AttendSoftmax + AttendValues, each called over pieces (the
// positions cut at random points, the dims at random multiples of 16, as
// threads split them) == one scalar AttendHead per query, on every path: query
// counts that take the 4/2/1 chunks, paged rows, soft-capping, head_dims with a
// half-vector tail (40, 136) and the prefetched 512-byte rows (256).
TEST_P(AttendHeadTest, SplitStepsEqualAttendHead) {
  std::mt19937 rng(79);
  for (int head_dim : {64, 128, 96, 8, 40, 120, 136, 256, 13}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 2, 300);
    const int64_t block_rows = 16, n_blocks = (c.cap + block_rows - 1) / block_rows;
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(n_blocks - 1 - b);
    const PagedCache paged = Page(c, std::move(table), block_rows, n_blocks);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (int nq : {1, 2, 3, 4, 7}) {
      std::uniform_int_distribution<int64_t> len(1, c.cap);
      const int64_t n = len(rng);
      const float cap = nq == 3 ? 30.0f : 0.0f;
      std::vector<std::vector<float>> q(nq), want(nq), s(nq), out(nq);
      for (int i = 0; i < nq; ++i) {
        q[i] = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
        want[i] = Attend(c, 1, q[i], n, scale, Isa::kScalar, cap);
      }
      for (Isa isa : testing::AvailableIsas()) {
        const float* qp[8];
        float *sp[8], *op[8];
        for (int i = 0; i < nq; ++i) {
          s[i].assign(static_cast<size_t>(n), -7.0f);
          out[i].assign(head_dim, -5.0f);
          qp[i] = q[i].data();
          sp[i] = s[i].data();
          op[i] = out[i].data();
        }
        for (int64_t t0 = 0; t0 < n;) {
          const int64_t t1 =
              std::min<int64_t>(n, t0 + std::uniform_int_distribution<int64_t>(1, 90)(rng));
          AttendScores(qp, nq, paged.kh(c), c.type, t0, t1, head_dim, scale, sp, isa);
          t0 = t1;
        }
        float den[8];
        for (int i = 0; i < nq; ++i) den[i] = AttendSoftmax(sp[i], n, cap, isa);
        for (int j0 = 0; j0 < head_dim;) {
          const int j1 =
              std::min(head_dim, j0 + 16 * std::uniform_int_distribution<int>(1, 5)(rng));
          AttendValues(sp, den, nq, paged.vh(c), c.type, n, j0, j1, head_dim, op, isa);
          j0 = j1;
        }
        for (int i = 0; i < nq; ++i) {
          ASSERT_TRUE(testing::SameBits(want[i].data(), out[i].data(), head_dim))
              << IsaName(isa) << " head_dim=" << head_dim << " nq=" << nq << " query " << i
              << " n=" << n;
        }
      }
    }
  }
}

// A 40-position cache whose V rows from position 20 on hold inf (and a nan).
Cache PoisonedCache(std::mt19937& rng, DType type, int head_dim) {
  Cache c = MakeCache(rng, type, head_dim, 1, 40);
  std::vector<float> bad(static_cast<size_t>(head_dim), INFINITY);
  bad[3] = std::nanf("");
  for (int64_t t = 20; t < 40; ++t) {
    StoreRow(bad.data(), head_dim, c.type, c.v.data() + t * c.stride(), Isa::kScalar);
  }
  return c;
}

// The shorter query of a pair never sees the rows past its n_kv, even when
// they hold inf or nan (its lanes are masked, not multiplied by zero).
TEST_P(AttendHeadTest, PairIgnoresRowsPastTheShorterQuery) {
  std::mt19937 rng(74);
  const int head_dim = 64;
  const Cache c = PoisonedCache(rng, GetParam(), head_dim);
  const float scale = 0.125f;
  const auto q0 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
  const auto q1 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
  const auto want0 = Attend(c, 0, q0, 20, scale, Isa::kScalar);
  for (Isa isa : testing::AvailableIsas()) {
    std::vector<float> out0(head_dim), out1(head_dim), scratch(2 * 40 + 2 * head_dim);
    AttendHeadPair(q0.data(), q1.data(), c.kh(0), c.vh(0), c.type, 20, 40, head_dim, scale, 0.0f,
                   out0.data(), out1.data(), scratch.data(), isa);
    ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim)) << IsaName(isa);
    AttendHeadPair(q1.data(), q0.data(), c.kh(0), c.vh(0), c.type, 40, 20, head_dim, scale, 0.0f,
                   out1.data(), out0.data(), scratch.data(), isa);
    ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim)) << IsaName(isa);
  }
}

// The same through AttendHeads with four queries (AVX-512: one quad pass): each
// query's lanes stop at its own n_kv, whichever slot of the four it is in.
TEST_P(AttendHeadTest, QuadIgnoresRowsPastEachQuery) {
  std::mt19937 rng(75);
  const int head_dim = 64;
  const Cache c = PoisonedCache(rng, GetParam(), head_dim);
  const float scale = 0.125f;
  std::vector<std::vector<float>> q(4), want(4), out(4);
  // Past position 20 every V row is inf/nan: the query reading all 40 gets nan,
  // the others must not see those rows.
  const int64_t lens[4] = {20, 13, 40, 17};
  for (int i = 0; i < 4; ++i) {
    q[i] = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
    want[i] = Attend(c, 0, q[i], lens[i], scale, Isa::kScalar);
  }
  for (Isa isa : testing::AvailableIsas()) {
    for (int rot = 0; rot < 4; ++rot) {  // the lengths in every slot
      const float* qp[4];
      float* op[4];
      int64_t n_kv[4];
      for (int j = 0; j < 4; ++j) {
        const int i = (j + rot) % 4;
        out[i].assign(head_dim, -5.0f);
        qp[j] = q[i].data();
        op[j] = out[i].data();
        n_kv[j] = lens[i];
      }
      std::vector<float> scratch(static_cast<size_t>(AttendHeadsScratch(4, 40, head_dim)));
      AttendHeads(qp, n_kv, 4, c.kh(0), c.vh(0), c.type, head_dim, scale, 0.0f, op, scratch.data(),
                  isa);
      for (int i = 0; i < 4; ++i) {
        if (lens[i] > 20) continue;
        ASSERT_TRUE(testing::SameBits(want[i].data(), out[i].data(), head_dim))
            << IsaName(isa) << " rotation " << rot << " query " << i;
      }
    }
  }
}

TEST_P(AttendHeadTest, DependsOnlyOnTheFirstNkvPositions) {
  std::mt19937 rng(72);
  const int head_dim = 64;
  Cache c = MakeCache(rng, GetParam(), head_dim, 3, 120);
  const auto q = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
    if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
    for (int64_t n_kv : {1, 7, 8, 9, 33, 100}) {
      const auto before = Attend(c, 1, q, n_kv, 0.125f, isa);
      // Scribble over everything past n_kv and over the other heads.
      Cache d = c;
      const int64_t from = n_kv * d.stride();
      std::fill(d.k.begin() + from, d.k.end(), 0x7b);
      std::fill(d.v.begin() + from, d.v.end(), 0x3c);
      for (int64_t t = 0; t < n_kv; ++t) {
        std::fill_n(d.k.begin() + t * d.stride(), head_dim * d.elem(), 0x55);
        std::fill_n(d.v.begin() + t * d.stride() + 2 * head_dim * d.elem(), head_dim * d.elem(),
                    0x55);
      }
      const auto after = Attend(d, 1, q, n_kv, 0.125f, isa);
      ASSERT_TRUE(testing::SameBits(before.data(), after.data(), head_dim)) << n_kv;
      // The same head copied into a single-head cache (another stride) agrees.
      Cache e{c.type, head_dim, 1, n_kv, {}, {}};
      for (int64_t t = 0; t < n_kv; ++t) {
        e.k.insert(e.k.end(), c.kh(1).Row(t), c.kh(1).Row(t) + head_dim * c.elem());
        e.v.insert(e.v.end(), c.vh(1).Row(t), c.vh(1).Row(t) + head_dim * c.elem());
      }
      const auto single = Attend(e, 0, q, n_kv, 0.125f, isa);
      ASSERT_TRUE(testing::SameBits(before.data(), single.data(), head_dim)) << n_kv;
    }
  }
}

// A paged layout — the rows of a contiguous cache scattered over shuffled
// blocks of 1, 3, 16 or 64 positions, read through a block table — gives the
// contiguous result bit for bit on every path, single and paired, for n_kv
// ending inside, at the edge of and past the first block.
TEST_P(AttendHeadTest, PagedEqualsContiguous) {
  std::mt19937 rng(75);
  for (int head_dim : {64, 128, 48, 13}) {
    const int n_heads = 2;
    const Cache c = MakeCache(rng, GetParam(), head_dim, n_heads, 150);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (int64_t block_rows : {1, 3, 16, 64}) {
      const int64_t n_blocks = (c.cap + block_rows - 1) / block_rows;
      std::vector<int32_t> table(static_cast<size_t>(n_blocks));
      for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(b);
      std::shuffle(table.begin(), table.end(), rng);
      // The pool holds one spare block (never referenced) filled with nan.
      const PagedCache paged = Page(c, std::move(table), block_rows, n_blocks + 1);
      const KvRows pk = paged.kh(c), pv = paged.vh(c);
      for (auto [n0, n1] : std::vector<std::pair<int64_t, int64_t>>{
               {1, 2}, {3, 3}, {16, 17}, {17, 16}, {63, 64}, {65, 150}, {150, 1}}) {
        const auto q0 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
        const auto q1 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
        for (Isa isa : testing::AvailableIsas()) {
          const auto want0 = Attend(c, 1, q0, n0, scale, isa);
          const auto want1 = Attend(c, 1, q1, n1, scale, isa);
          std::vector<float> out0(head_dim, -5.0f), out1(head_dim, -5.0f);
          std::vector<float> scratch(static_cast<size_t>(2 * std::max(n0, n1) + 2 * head_dim));
          AttendHead(q0.data(), pk, pv, c.type, n0, head_dim, scale, 0.0f, out0.data(),
                     scratch.data(), isa);
          ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim))
              << IsaName(isa) << " head_dim=" << head_dim << " block=" << block_rows << " n=" << n0;
          std::fill(out0.begin(), out0.end(), -5.0f);
          AttendHeadPair(q0.data(), q1.data(), pk, pv, c.type, n0, n1, head_dim, scale, 0.0f,
                         out0.data(), out1.data(), scratch.data(), isa);
          ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim))
              << IsaName(isa) << " pair head_dim=" << head_dim << " block=" << block_rows;
          ASSERT_TRUE(testing::SameBits(want1.data(), out1.data(), head_dim))
              << IsaName(isa) << " pair head_dim=" << head_dim << " block=" << block_rows;
        }
      }
    }
  }
}

// A sliding window read in place (KvRows::From): attention over positions
// [start, start + n) of a paged cache equals attention over a contiguous copy of
// exactly those rows — windows starting mid-block, on a block edge, and past
// several blocks, single and paired — on every ISA.
TEST_P(AttendHeadTest, WindowViewEqualsCopiedRows) {
  std::mt19937 rng(76);
  for (int head_dim : {64, 48}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 2, 200);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (int64_t block_rows : {1, 16, 64}) {
      const int64_t n_blocks = (c.cap + block_rows - 1) / block_rows;
      std::vector<int32_t> table(static_cast<size_t>(n_blocks));
      for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(b);
      std::shuffle(table.begin(), table.end(), rng);
      const PagedCache paged = Page(c, std::move(table), block_rows, n_blocks);
      const KvRows pk = paged.kh(c), pv = paged.vh(c);
      for (int64_t start : {1, 15, 16, 17, 70, 128}) {
        const int64_t n0 = std::min<int64_t>(50, c.cap - start), n1 = c.cap - start;
        // The copy: rows start.. of head 1 as one contiguous run.
        std::vector<uint8_t> kc((c.cap - start) * c.stride()), vc(kc.size());
        std::memcpy(kc.data(), &c.k[start * c.stride()], kc.size());
        std::memcpy(vc.data(), &c.v[start * c.stride()], vc.size());
        const KvRows ck{kc.data() + c.head_bytes(1), c.stride()};
        const KvRows cv{vc.data() + c.head_bytes(1), c.stride()};
        const auto q0 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
        const auto q1 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
        std::vector<float> scratch(static_cast<size_t>(2 * n1 + 2 * head_dim));
        for (Isa isa : testing::AvailableIsas()) {
          std::vector<float> want0(head_dim), want1(head_dim), out0(head_dim), out1(head_dim);
          AttendHeadPair(q0.data(), q1.data(), ck, cv, c.type, n0, n1, head_dim, scale, 0.0f,
                         want0.data(), want1.data(), scratch.data(), isa);
          AttendHeadPair(q0.data(), q1.data(), pk.From(start), pv.From(start), c.type, n0, n1,
                         head_dim, scale, 0.0f, out0.data(), out1.data(), scratch.data(), isa);
          ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim))
              << IsaName(isa) << " block=" << block_rows << " start=" << start;
          ASSERT_TRUE(testing::SameBits(want1.data(), out1.data(), head_dim))
              << IsaName(isa) << " block=" << block_rows << " start=" << start;
          AttendHead(q1.data(), pk.From(start), pv.From(start), c.type, n1, head_dim, scale, 0.0f,
                     out1.data(), scratch.data(), isa);
          ASSERT_TRUE(testing::SameBits(want1.data(), out1.data(), head_dim))
              << IsaName(isa) << " single block=" << block_rows << " start=" << start;
        }
      }
    }
  }
}

// Error model: each score carries |scale| * gamma(hd/8 + 3) * sum|q k| + u|s|
// (the final *scale), and s - max one more u|s - max|; a max shift common to
// all t cancels in the softmax. ExpF adds 4u relative. A relative error eta on
// every weight moves out by at most 2 eta * sum p|v|; the 8-lane denominator,
// the n_kv sequential fmas and the division add gamma(n_kv + n_kv/8 + 4).
TEST_P(AttendHeadTest, AccuracyAgainstFloat64) {
  std::mt19937 rng(73);
  for (int head_dim : {64, 128, 13}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 1, 300);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (int64_t n_kv : {1, 2, 9, 64, 257, 300}) {
      const auto q = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      std::vector<double> s(n_kv), mag(n_kv);
      double mx = -INFINITY;
      for (int64_t t = 0; t < n_kv; ++t) {
        double dot = 0, abs = 0;
        for (int j = 0; j < head_dim; ++j) {
          const double p = static_cast<double>(q[j]) * c.At(c.k, t, 0, j);
          dot += p;
          abs += std::fabs(p);
        }
        s[t] = dot * scale;
        mag[t] = abs * std::fabs(scale);
        mx = std::max(mx, s[t]);
      }
      double eta = 0, den = 0;
      std::vector<double> e(n_kv);
      for (int64_t t = 0; t < n_kv; ++t) {
        const double err = testing::Gamma((head_dim + 7) / 8 + 3) * mag[t] +
                           testing::kU * std::fabs(s[t]) + testing::kU * std::fabs(s[t] - mx);
        eta = std::max(eta, std::expm1(err) + 4 * testing::kU * std::exp(err));
        e[t] = std::exp(s[t] - mx);
        den += e[t];
      }
      const double rel = 2.05 * eta + testing::Gamma(n_kv + n_kv / 8.0 + 5);
      for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
        if (isa == Isa::kAvx2 && !CpuHasAvx2Fma()) continue;
        const auto out = Attend(c, 0, q, n_kv, scale, isa);
        for (int j = 0; j < head_dim; ++j) {
          double exact = 0, abs = 0;
          for (int64_t t = 0; t < n_kv; ++t) {
            exact += e[t] / den * c.At(c.v, t, 0, j);
            abs += e[t] / den * std::fabs(c.At(c.v, t, 0, j));
          }
          EXPECT_LE(std::fabs(out[j] - exact), rel * abs)
              << "head_dim=" << head_dim << " n_kv=" << n_kv << " j=" << j;
        }
      }
    }
  }
}

// Soft-capping (Gemma 2): every path, single and paired, gives the scalar
// path's bits, with scores large enough that the cap bends them (scale 1.5 on
// |q k| up to ~30, cap 5).
TEST_P(AttendHeadTest, SoftcapSameBitsOnEveryPath) {
  std::mt19937 rng(75);
  const float cap = 5.0f, scale = 1.5f;
  for (int head_dim : {64, 16, 13}) {
    const Cache c = MakeCache(rng, GetParam(), head_dim, 1, 90);
    for (auto [n0, n1] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {9, 8}, {33, 90}, {90, 2}}) {
      const auto q0 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      const auto q1 = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
      const auto want0 = Attend(c, 0, q0, n0, scale, Isa::kScalar, cap);
      const auto want1 = Attend(c, 0, q1, n1, scale, Isa::kScalar, cap);
      ASSERT_FALSE(testing::SameBits(want0.data(), Attend(c, 0, q0, n0, scale, Isa::kScalar).data(),
                                     head_dim) &&
                   n0 > 1)
          << "the cap must change the result";
      for (Isa isa : testing::AvailableIsas()) {
        const auto single = Attend(c, 0, q0, n0, scale, isa, cap);
        ASSERT_TRUE(testing::SameBits(want0.data(), single.data(), head_dim)) << IsaName(isa);
        std::vector<float> out0(head_dim, -5.0f), out1(head_dim, -5.0f);
        std::vector<float> scratch(static_cast<size_t>(2 * std::max(n0, n1) + 2 * head_dim));
        AttendHeadPair(q0.data(), q1.data(), c.kh(0), c.vh(0), c.type, n0, n1, head_dim, scale, cap,
                       out0.data(), out1.data(), scratch.data(), isa);
        ASSERT_TRUE(testing::SameBits(want0.data(), out0.data(), head_dim)) << IsaName(isa);
        ASSERT_TRUE(testing::SameBits(want1.data(), out1.data(), head_dim)) << IsaName(isa);
      }
    }
  }
}

// The capped result is softmax(cap * tanh(s / cap)) V computed in float64, to
// within float rounding of the scores (|d out| <= 1e-4 relative to sum p|v|
// here: the cap's TanhF adds < 1e-6 absolute per score).
TEST_P(AttendHeadTest, SoftcapMatchesFloat64) {
  std::mt19937 rng(76);
  const int head_dim = 32;
  const float cap = 5.0f, scale = 1.5f;
  const Cache c = MakeCache(rng, GetParam(), head_dim, 1, 50);
  const auto q = testing::RandomFloats(rng, head_dim, -3.0f, 3.0f);
  std::vector<double> s(50);
  double mx = -INFINITY;
  for (int64_t t = 0; t < 50; ++t) {
    double dot = 0;
    for (int j = 0; j < head_dim; ++j) dot += static_cast<double>(q[j]) * c.At(c.k, t, 0, j);
    s[t] = cap * std::tanh(dot * scale / cap);
    mx = std::max(mx, s[t]);
  }
  double den = 0;
  for (double& v : s) den += (v = std::exp(v - mx));
  for (Isa isa : testing::AvailableIsas()) {
    const auto out = Attend(c, 0, q, 50, scale, isa, cap);
    for (int j = 0; j < head_dim; ++j) {
      double exact = 0, abs = 0;
      for (int64_t t = 0; t < 50; ++t) {
        exact += s[t] / den * c.At(c.v, t, 0, j);
        abs += s[t] / den * std::fabs(c.At(c.v, t, 0, j));
      }
      EXPECT_LE(std::fabs(out[j] - exact), 1e-4 * abs) << IsaName(isa) << " j=" << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, AttendHeadTest, ::testing::Values(DType::kF32, DType::kF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace stet::kernels
