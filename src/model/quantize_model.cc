#include "model/quantize_model.h"

#include <cstring>
#include <string_view>
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

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The layer index of a "blk.N." tensor, or -1.
int LayerOf(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int i = 0;
  size_t p = 4;
  if (p >= name.size() || name[p] < '0' || name[p] > '9') return -1;
  for (; p < name.size() && name[p] >= '0' && name[p] <= '9' && i < 100000; ++p)
    i = 10 * i + (name[p] - '0');
  return i;
}

bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool Fits(DType t, int64_t cols) {
  return cols % GetDTypeTraits(static_cast<uint32_t>(t))->block_elems == 0;
}

}  // namespace

Result<QuantRecipe> ParseQuantRecipe(const std::string& name) {
  if (name == "q4_k_m") return QuantRecipe{name, DType::kQ4_K, DType::kQ6_K};
  if (name == "q5_k_m") return QuantRecipe{name, DType::kQ5_K, DType::kQ6_K};
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = GetDTypeTraits(id);
    if (tr && DTypeSupported(static_cast<DType>(id)) && name == tr->name) {
      return QuantRecipe{name, static_cast<DType>(id), static_cast<DType>(id)};
    }
  }
  return InvalidArgument("unknown --type '" + name + "' (use " + QuantRecipeList() + ")");
}

std::string QuantRecipeList() { return std::string(SupportedDTypeList()) + ", q4_k_m, q5_k_m"; }

DType RecipeType(const QuantRecipe& r, const TensorRole& t, DType current) {
  DType want = r.base;
  if (r.more != r.base) {
    const int layer = LayerOf(t.name);
    const bool output = t.name == "output.weight" || (t.tied && t.name == "token_embd.weight");
    const bool per_layer = EndsWith(t.name, ".attn_v.weight") ||
                           EndsWith(t.name, ".ffn_down.weight") ||
                           EndsWith(t.name, ".ffn_down_exps.weight");
    if (output || (per_layer && layer >= 0 && UseMoreBits(layer, t.n_layer))) want = r.more;
  }
  if (Fits(want, t.cols)) return want;
  const DType fb = GetDTypeTraits(static_cast<uint32_t>(want))->fallback;
  return Fits(fb, t.cols) ? fb : current;
}

Result<QuantizeReport> QuantizeModel(const std::string& in_path, const std::string& out_path,
                                     DType type, bool progress) {
  return QuantizeModel(in_path, out_path, QuantRecipe{DTypeName(type), type, type}, progress);
}

Result<QuantizeReport> QuantizeModel(const std::string& in_path, const std::string& out_path,
                                     const QuantRecipe& recipe, bool progress) {
  for (DType t : {recipe.base, recipe.more}) {
    if (!DTypeSupported(t))
      return InvalidArgument(std::string("cannot quantize to ") + DTypeName(t));
  }
  STET_ASSIGN_OR_RETURN(auto in, gguf::GgufFile::Open(in_path));
  gguf::GgufWriter w;
  std::string arch;
  for (const auto& [key, value] : in->metadata()) {
    if (key == "general.alignment") continue;
    if (key == "general.file_type") continue;
    if (key == "general.architecture" && value.AsString()) arch = std::string(*value.AsString());
    STET_RETURN_IF_ERROR(CopyMeta(key, value, &w));
  }
  TensorRole role;
  for (const auto& [key, value] : in->metadata()) {
    if (key != arch + ".block_count") continue;
    if (auto n = value.AsUInt(); n && *n < 100000) role.n_layer = static_cast<int>(*n);
  }
  role.tied = true;
  for (const gguf::TensorInfo& t : in->tensors())
    role.tied = role.tied && t.name != "output.weight";
  w.set_alignment(static_cast<uint32_t>(in->alignment()));
  QuantizeReport rep;
  ProgressBar bar("quantizing", static_cast<int64_t>(in->tensors().size()));
  int64_t done = 0;
  for (const gguf::TensorInfo& t : in->tensors()) {
    if (progress) bar.Update(done++);
    // Matrices and 3-D expert stacks (MoE), row by row; a MoE router
    // (ffn_gate_inp) stays as it is, as llama.cpp's quantizer keeps it.
    const bool matrix = (t.dims.size() == 2 || t.dims.size() == 3) && EndsWith(t.name, ".weight") &&
                        t.name.find("ffn_gate_inp.") == std::string::npos;
    const int64_t k = t.dims[0];
    DType target = t.type;
    role.name = t.name;
    role.cols = k;
    if (matrix && DTypeSupported(t.type)) target = RecipeType(recipe, role, t.type);
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
    (target == recipe.base || target == recipe.more ? rep.quantized : rep.fallback)++;
  }
  bar.Finish();
  STET_RETURN_IF_ERROR(w.WriteFile(out_path));
  return rep;
}

}  // namespace stet
