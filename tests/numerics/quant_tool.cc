// stet_quant_tool: numerics/dequant.h and numerics/quantize.h on stdin/stdout, for
// test_dequant_oracle.py, which checks them against gguf-py (an independent
// implementation of ggml's formats). Not part of the product; errors exit 1 with the
// Status on stderr.
//   stet_quant_tool dequantize TYPE N   stdin: RowBytes(TYPE, N) bytes -> N floats (LE)
//   stet_quant_tool quantize TYPE N     stdin: N floats (LE) -> RowBytes(TYPE, N) bytes
//   stet_quant_tool types               the block types stet computes with, one per line:
//                                       name, elements and bytes per block, f16 field offsets
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "numerics/dequant.h"
#include "numerics/dtype.h"
#include "numerics/quantize.h"

namespace {

int Fail(const std::string& msg) {
  std::fprintf(stderr, "stet_quant_tool: %s\n", msg.c_str());
  return 1;
}

bool ParseType(const std::string& name, stet::DType* out) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = stet::GetDTypeTraits(id);
    if (tr && name == tr->name) {
      *out = static_cast<stet::DType>(id);
      return true;
    }
  }
  return false;
}

bool ReadAll(std::vector<uint8_t>* buf, size_t n) {
  buf->resize(n);
  return n == 0 || std::fread(buf->data(), 1, n, stdin) == n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "types") {
    for (stet::DType t : stet::QuantizedDTypes()) {
      const auto tr = *stet::GetDTypeTraits(static_cast<uint32_t>(t));
      std::printf("%s %lld %lld", tr.name, static_cast<long long>(tr.block_elems),
                  static_cast<long long>(tr.block_bytes));
      for (int16_t off : tr.f16_fields) {
        if (off >= 0) std::printf(" %d", off);
      }
      std::printf("\n");
    }
    return 0;
  }
  if (argc != 4) return Fail("usage: stet_quant_tool dequantize|quantize TYPE N");
  const std::string mode = argv[1];
  stet::DType type;
  if (!ParseType(argv[2], &type)) return Fail(std::string("unknown type ") + argv[2]);
  const int64_t n = std::strtoll(argv[3], nullptr, 10);
  const auto traits = stet::GetDTypeTraits(static_cast<uint32_t>(type));
  if (n <= 0 || n % traits->block_elems != 0) return Fail("N must be a positive number of blocks");
  const size_t bytes = static_cast<size_t>(stet::RowBytes(type, n));
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
  stet::Status st;
  if (mode == "dequantize") {
    if (!ReadAll(&in, bytes)) return Fail("short input");
    out.resize(static_cast<size_t>(n) * sizeof(float));
    st = stet::DequantizeRow(type, in.data(), n, reinterpret_cast<float*>(out.data()));
  } else if (mode == "quantize") {
    if (!ReadAll(&in, static_cast<size_t>(n) * sizeof(float))) return Fail("short input");
    out.resize(bytes);
    st = stet::QuantizeRow(type, reinterpret_cast<const float*>(in.data()), n, out.data());
  } else {
    return Fail("unknown mode " + mode);
  }
  if (!st.ok()) return Fail(st.ToString());
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) return Fail("write failed");
  return 0;
}
