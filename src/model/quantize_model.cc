#include "model/quantize_model.h"

#include <cstring>
#include <vector>

#include "base/progress.h"
#include "format/gguf.h"
#include "numerics/dequant.h"
#include "numerics/quantize.h"

namespace stet {

namespace {

Status CopyMeta(const std::string& key, const gguf::MetaValue& v, gguf::GgufWriter* w) {
  using V = gguf::ValueType;
  switch (v.type()) {
    case V::kU8:
      w->SetU8(key, static_cast<uint8_t>(*v.AsUInt()));
      break;
    case V::kI8:
      w->SetI8(key, static_cast<int8_t>(*v.AsInt()));
      break;
    case V::kU16:
      w->SetU16(key, static_cast<uint16_t>(*v.AsUInt()));
      break;
    case V::kI16:
      w->SetI16(key, static_cast<int16_t>(*v.AsInt()));
      break;
    case V::kU32:
      w->SetU32(key, static_cast<uint32_t>(*v.AsUInt()));
      break;
    case V::kI32:
      w->SetI32(key, static_cast<int32_t>(*v.AsInt()));
      break;
    case V::kU64:
      w->SetU64(key, *v.AsUInt());
      break;
    case V::kI64:
      w->SetI64(key, *v.AsInt());
      break;
    case V::kF32:
      w->SetF32(key, static_cast<float>(*v.AsFloat()));
      break;
    case V::kF64:
      w->SetF64(key, *v.AsFloat());
      break;
    case V::kBool:
      w->SetBool(key, *v.AsBool());
      break;
    case V::kString:
      w->SetString(key, std::string(*v.AsString()));
      break;
    case V::kArray: {
      const V et = v.array_type();
      if (et == V::kString) {
        std::vector<std::string> s(v.array_size());
        for (uint64_t i = 0; i < v.array_size(); ++i) s[i] = std::string(v.ArrayString(i));
        w->SetStringArray(key, s);
        break;
      }
      const size_t es = gguf::ValueTypeSize(et);
      if (es == 0) return Unimplemented("metadata '" + key + "' is an array of arrays");
      std::string bytes(es * v.array_size(), '\0');
      for (uint64_t i = 0; i < v.array_size(); ++i) {
        char* dst = &bytes[i * es];
        if (et == V::kF32) {
          const float f = static_cast<float>(v.ArrayFloat(i));
          std::memcpy(dst, &f, 4);
        } else if (et == V::kF64) {
          const double d = v.ArrayFloat(i);
          std::memcpy(dst, &d, 8);
        } else {
          const int64_t x = v.ArrayInt(i);
          std::memcpy(dst, &x, es);  // little-endian: the low bytes
        }
      }
      w->SetRawArray(key, et, v.array_size(), std::move(bytes));
      break;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<QuantizeReport> QuantizeModel(const std::string& in_path, const std::string& out_path,
                                     DType type, bool progress) {
  if (!DTypeSupported(type))
    return InvalidArgument(std::string("cannot quantize to ") + DTypeName(type));
  STET_ASSIGN_OR_RETURN(auto in, gguf::GgufFile::Open(in_path));
  gguf::GgufWriter w;
  for (const auto& [key, value] : in->metadata()) {
    if (key == "general.alignment") continue;
    if (key == "general.file_type") continue;
    STET_RETURN_IF_ERROR(CopyMeta(key, value, &w));
  }
  w.set_alignment(static_cast<uint32_t>(in->alignment()));
  QuantizeReport rep;
  ProgressBar bar("quantizing", static_cast<int64_t>(in->tensors().size()));
  int64_t done = 0;
  for (const gguf::TensorInfo& t : in->tensors()) {
    if (progress) bar.Update(done++);
    // Matrices and 3-D expert stacks (MoE), row by row; a MoE router
    // (ffn_gate_inp) stays as it is, as llama.cpp's quantizer keeps it.
    const bool matrix = (t.dims.size() == 2 || t.dims.size() == 3) && t.name.size() > 7 &&
                        t.name.compare(t.name.size() - 7, 7, ".weight") == 0 &&
                        t.name.find("ffn_gate_inp.") == std::string::npos;
    const int64_t k = t.dims[0];
    DType target = t.type;
    if (matrix && DTypeSupported(t.type)) {
      const int64_t block = GetDTypeTraits(static_cast<uint32_t>(type))->block_elems;
      if (k % block == 0) {
        target = type;
      } else if (k % kQK == 0) {
        target = DType::kQ8_0;
      }
    }
    if (target == t.type) {
      w.AddTensor(t.name, t.type, t.dims,
                  std::string(reinterpret_cast<const char*>(t.data), t.size_bytes));
      ++rep.kept;
      continue;
    }
    const int64_t rows = t.n_elements / k;
    const int64_t in_row = RowBytes(t.type, k), out_row = RowBytes(target, k);
    std::string out(static_cast<size_t>(rows * out_row), '\0');
    std::vector<float> row(k);
    for (int64_t r = 0; r < rows; ++r) {
      STET_RETURN_IF_ERROR(DequantizeRow(t.type, t.data + r * in_row, k, row.data()));
      STET_RETURN_IF_ERROR(QuantizeRow(target, row.data(), k, &out[r * out_row]));
    }
    w.AddTensor(t.name, target, t.dims, std::move(out));
    (target == type ? rep.quantized : rep.fallback)++;
  }
  bar.Finish();
  STET_RETURN_IF_ERROR(w.WriteFile(out_path));
  return rep;
}

}  // namespace stet
