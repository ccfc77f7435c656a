// NEON StoreRow (the KV cache writer, rule R3): f32 is a copy; f16 converts four
// at a time with FCVTN (round to nearest even, subnormals kept, nan quieted with
// its top payload bits — what F32ToF16 computes); the tail by F32ToF16. Equal to
// ref/store_row.cc bit for bit (store_row_test.cc, special values included).
#include <cstring>

#include "base/check.h"
#include "kernels/neon/neon_util.h"
#include "numerics/half.h"

namespace stet::kernels::neon {

void StoreRow(const float* x, int64_t n, DType dst_type, void* dst) {
  StoreRowWith(x, n, dst_type, dst, [](const float* xs, int64_t len, uint8_t* h) {
    int64_t i = 0;
    for (; i + 4 <= len; i += 4) {
      const uint16x4_t v = vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(xs + i)));
      std::memcpy(h + 2 * i, &v, 8);
    }
    return i;
  });
}

}  // namespace stet::kernels::neon
