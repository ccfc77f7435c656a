// libFuzzer target for the GGUF reader: any bytes must give a Status or a file
// whose every metadata value and tensor can be read in bounds (ASan/UBSan
// watch). A file that parses is also rewritten with GgufWriter and re-read,
// which must reproduce the same metadata and tensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "format/gguf.h"

namespace {

using stet::gguf::GgufFile;
using stet::gguf::GgufWriter;
using stet::gguf::MetaValue;
using stet::gguf::ValueType;

volatile uint64_t g_sink;

void Require(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "gguf_fuzz: invariant failed: %s\n", what);
    std::abort();
  }
}

uint64_t ElemSize(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    default:
      return 8;
  }
}

bool IsFloat(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

uint64_t TouchValue(const GgufFile& f, const std::string& key, const MetaValue& v) {
  uint64_t h = 0;
  if (auto u = v.AsUInt()) h += *u;
  if (auto i = v.AsInt()) h += static_cast<uint64_t>(*i);
  if (auto d = v.AsFloat()) h += *d > 0;
  if (auto b = v.AsBool()) h += *b;
  if (auto s = v.AsString()) {
    for (char c : *s) h += static_cast<uint8_t>(c);
  }
  h += f.GetString(key).ok() + f.GetUInt(key).ok() + f.GetFloat(key).ok() + f.GetBool(key).ok();
  if (v.type() == ValueType::kArray) {
    for (uint64_t i = 0; i < v.array_size(); ++i) {
      if (v.array_type() == ValueType::kString) {
        std::string_view s = v.ArrayString(i);
        h += s.size() + (s.empty() ? 0 : static_cast<uint8_t>(s.back()));
      } else if (IsFloat(v.array_type())) {
        h += v.ArrayFloat(i) > 0;
      } else {
        h += static_cast<uint64_t>(v.ArrayInt(i));
        if (v.array_type() != ValueType::kBool) h += v.ArrayFloat(i) > 0;
      }
    }
  }
  return h;
}

// Re-encodes a parsed file with the writer; scalars and fixed-size arrays keep their bytes.
std::string Rewrite(const GgufFile& f) {
  GgufWriter w;
  for (const auto& [key, v] : f.metadata()) {
    switch (v.type()) {
      case ValueType::kString:
        w.SetString(key, std::string(*v.AsString()));
        break;
      case ValueType::kBool:
        w.SetBool(key, *v.AsBool());
        break;
      case ValueType::kF32:
        w.SetF32(key, static_cast<float>(*v.AsFloat()));
        break;
      case ValueType::kF64:
        w.SetF64(key, *v.AsFloat());
        break;
      case ValueType::kArray:
        if (v.array_type() == ValueType::kString) {
          std::vector<std::string> s;
          for (uint64_t i = 0; i < v.array_size(); ++i) s.emplace_back(v.ArrayString(i));
          w.SetStringArray(key, s);
        } else {
          std::string raw;
          for (uint64_t i = 0; i < v.array_size(); ++i) {
            if (v.array_type() == ValueType::kF32) {
              float x = static_cast<float>(v.ArrayFloat(i));
              raw.append(reinterpret_cast<const char*>(&x), 4);
            } else if (v.array_type() == ValueType::kF64) {
              double x = v.ArrayFloat(i);
              raw.append(reinterpret_cast<const char*>(&x), 8);
            } else {
              int64_t x = v.ArrayInt(i);  // little-endian: the low bytes are the element
              if (v.array_type() == ValueType::kBool) x = x != 0;
              raw.append(reinterpret_cast<const char*>(&x), ElemSize(v.array_type()));
            }
          }
          w.SetRawArray(key, v.array_type(), v.array_size(), std::move(raw));
        }
        break;
      default: {
        int64_t x = v.AsInt().value_or(static_cast<int64_t>(v.AsUInt().value_or(0)));
        switch (v.type()) {
          case ValueType::kU8:
            w.SetU8(key, static_cast<uint8_t>(x));
            break;
          case ValueType::kI8:
            w.SetI8(key, static_cast<int8_t>(x));
            break;
          case ValueType::kU16:
            w.SetU16(key, static_cast<uint16_t>(x));
            break;
          case ValueType::kI16:
            w.SetI16(key, static_cast<int16_t>(x));
            break;
          case ValueType::kU32:
            w.SetU32(key, static_cast<uint32_t>(x));
            break;
          case ValueType::kI32:
            w.SetI32(key, static_cast<int32_t>(x));
            break;
          case ValueType::kU64:
            w.SetU64(key, *v.AsUInt());
            break;
          default:
            w.SetI64(key, x);
            break;
        }
      }
    }
  }
  w.set_alignment(static_cast<uint32_t>(f.alignment()));
  for (const auto& t : f.tensors()) {
    w.AddTensor(t.name, t.type, t.dims,
                std::string(reinterpret_cast<const char*>(t.data), t.size_bytes));
  }
  return w.Serialize();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = GgufFile::FromBytes(std::string(reinterpret_cast<const char*>(data), size));
  if (!r.ok()) {
    Require(!r.status().message().empty(), "an error has a message");
    return 0;
  }
  const GgufFile& f = **r;
  uint64_t h = 0;
  for (const auto& [key, v] : f.metadata()) {
    Require(f.Find(key) == &v, "Find returns the first (only) entry of a key");
    h += TouchValue(f, key, v);
  }
  for (const auto& t : f.tensors()) {
    Require(f.FindTensor(t.name) == &t, "FindTensor finds each tensor");
    Require(t.n_elements > 0 && t.size_bytes > 0 && t.offset % f.alignment() == 0, "tensor sane");
    h += t.data[0] + t.data[t.size_bytes - 1];
  }
  g_sink = h;

  if (f.alignment() > (1u << 16)) return 0;  // the rewrite would allocate that much padding
  auto again = GgufFile::FromBytes(Rewrite(f));
  Require(again.ok(), "the writer's output of a parsed file parses");
  const GgufFile& g = **again;
  Require(g.metadata().size() ==
              f.metadata().size() + (f.Find("general.alignment") == nullptr && f.alignment() != 32),
          "same metadata count after rewrite");
  for (const auto& [key, v] : f.metadata()) {
    const MetaValue* w = g.Find(key);
    Require(w != nullptr && w->type() == v.type() && w->array_size() == v.array_size(),
            "same metadata after rewrite");
  }
  Require(g.tensors().size() == f.tensors().size(), "same tensor count after rewrite");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = g.tensors()[i];
    Require(a.name == b.name && a.type == b.type && a.dims == b.dims &&
                a.size_bytes == b.size_bytes && std::memcmp(a.data, b.data, a.size_bytes) == 0,
            "same tensors after rewrite");
  }
  return 0;
}
