// GGUF v3 writer: metadata and tensors in insertion order, every tensor's data
// offset aligned to the file's alignment and the gaps zero-filled, so that what
// it writes is exactly what the reader (gguf.cc) accepts. Bad arguments are
// programmer errors (STET_CHECK): broken files are made by editing its output.
#include <cstdio>
#include <cstring>
#include <system_error>

#include "base/check.h"
#include "format/gguf.h"

namespace stet::gguf {

namespace {

constexpr char kAlignmentKey[] = "general.alignment";
constexpr uint32_t kDefaultAlignment = 32;

template <typename T>
std::string Bytes(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}

template <typename T>
std::string ArrayBytes(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

void PutString(std::string* out, const std::string& s) {
  *out += Bytes<uint64_t>(s.size());
  *out += s;
}

void PadTo(std::string* out, uint64_t alignment) {
  out->append((alignment - out->size() % alignment) % alignment, '\0');
}

}  // namespace

// Kv::n is the array length for arrays and unused otherwise; Kv::payload is the
// value's encoding without its type (and, for arrays, without type and length).
#define STET_GGUF_SCALAR_SETTER(Name, CType, VType)                          \
  void GgufWriter::Name(const std::string& key, CType v) {                   \
    Put(key, Kv{key, ValueType::VType, ValueType::kU8, Bytes<CType>(v), 0}); \
  }
STET_GGUF_SCALAR_SETTER(SetU8, uint8_t, kU8)
STET_GGUF_SCALAR_SETTER(SetI8, int8_t, kI8)
STET_GGUF_SCALAR_SETTER(SetU16, uint16_t, kU16)
STET_GGUF_SCALAR_SETTER(SetI16, int16_t, kI16)
STET_GGUF_SCALAR_SETTER(SetU32, uint32_t, kU32)
STET_GGUF_SCALAR_SETTER(SetI32, int32_t, kI32)
STET_GGUF_SCALAR_SETTER(SetU64, uint64_t, kU64)
STET_GGUF_SCALAR_SETTER(SetI64, int64_t, kI64)
STET_GGUF_SCALAR_SETTER(SetF32, float, kF32)
STET_GGUF_SCALAR_SETTER(SetF64, double, kF64)
#undef STET_GGUF_SCALAR_SETTER

void GgufWriter::SetBool(const std::string& key, bool v) {
  Put(key, Kv{key, ValueType::kBool, ValueType::kU8, std::string(1, v ? '\1' : '\0'), 0});
}

void GgufWriter::SetString(const std::string& key, const std::string& v) {
  Put(key, Kv{key, ValueType::kString, ValueType::kU8, v, 0});
}

void GgufWriter::SetStringArray(const std::string& key, const std::vector<std::string>& v) {
  std::string payload;
  for (const std::string& s : v) PutString(&payload, s);
  Put(key, Kv{key, ValueType::kArray, ValueType::kString, std::move(payload), v.size()});
}

void GgufWriter::SetI32Array(const std::string& key, const std::vector<int32_t>& v) {
  Put(key, Kv{key, ValueType::kArray, ValueType::kI32, ArrayBytes(v), v.size()});
}

void GgufWriter::SetF32Array(const std::string& key, const std::vector<float>& v) {
  Put(key, Kv{key, ValueType::kArray, ValueType::kF32, ArrayBytes(v), v.size()});
}

void GgufWriter::SetRawArray(const std::string& key, ValueType elem, uint64_t n,
                             std::string le_bytes) {
  uint64_t es = ValueTypeSize(elem);
  STET_CHECK_MSG(es != 0, "SetRawArray needs a fixed-size element type");
  STET_CHECK(le_bytes.size() == n * es);
  Put(key, Kv{key, ValueType::kArray, elem, std::move(le_bytes), n});
}

void GgufWriter::Put(const std::string& key, Kv kv) {
  for (Kv& existing : kvs_) {
    if (existing.key == key) {
      existing = std::move(kv);
      return;
    }
  }
  kvs_.push_back(std::move(kv));
}

void GgufWriter::AddTensor(const std::string& name, DType type, std::vector<int64_t> dims,
                           std::string bytes) {
  auto traits = GetDTypeTraits(static_cast<uint32_t>(type));
  STET_CHECK_MSG(traits.has_value(), "AddTensor: unknown type");
  STET_CHECK_MSG(!dims.empty() && dims.size() <= 4, "AddTensor: 1 to 4 dims");
  int64_t n = 1;
  for (int64_t d : dims) {
    STET_CHECK(d > 0);
    STET_CHECK(!__builtin_mul_overflow(n, d, &n));
  }
  STET_CHECK_MSG(dims[0] % traits->block_elems == 0,
                 "AddTensor: ne0 must be a multiple of the block");
  STET_CHECK_MSG(static_cast<int64_t>(bytes.size()) == RowBytes(type, n),
                 "AddTensor: bytes.size() does not match the type and dims");
  for (const Tensor& t : tensors_) STET_CHECK_MSG(t.name != name, "AddTensor: duplicate name");
  tensors_.push_back(Tensor{name, type, std::move(dims), std::move(bytes)});
}

std::string GgufWriter::Serialize() const {
  STET_CHECK_MSG(alignment_ != 0 && (alignment_ & (alignment_ - 1)) == 0,
                 "GgufWriter alignment must be a nonzero power of two");
  // An explicit general.alignment entry (possibly deliberately wrong, in tests)
  // wins; otherwise a non-default alignment is recorded for readers.
  bool has_key = false;
  for (const Kv& kv : kvs_) has_key = has_key || kv.key == kAlignmentKey;
  bool add_key = !has_key && alignment_ != kDefaultAlignment;

  std::string out = "GGUF";
  out += Bytes<uint32_t>(3);
  out += Bytes<uint64_t>(tensors_.size());
  out += Bytes<uint64_t>(kvs_.size() + (add_key ? 1 : 0));
  auto put_kv = [&out](const Kv& kv) {
    PutString(&out, kv.key);
    out += Bytes<uint32_t>(static_cast<uint32_t>(kv.type));
    if (kv.type == ValueType::kString) {
      PutString(&out, kv.payload);
    } else if (kv.type == ValueType::kArray) {
      out += Bytes<uint32_t>(static_cast<uint32_t>(kv.array_type));
      out += Bytes<uint64_t>(kv.n);
      out += kv.payload;
    } else {
      out += kv.payload;
    }
  };
  for (const Kv& kv : kvs_) put_kv(kv);
  if (add_key)
    put_kv(Kv{kAlignmentKey, ValueType::kU32, ValueType::kU8, Bytes<uint32_t>(alignment_), 0});

  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const Tensor& t : tensors_) {
    next = (next + alignment_ - 1) / alignment_ * alignment_;
    offsets.push_back(next);
    next += t.bytes.size();
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    PutString(&out, t.name);
    out += Bytes<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) out += Bytes<uint64_t>(static_cast<uint64_t>(d));
    out += Bytes<uint32_t>(static_cast<uint32_t>(t.type));
    out += Bytes<uint64_t>(offsets[i]);
  }
  PadTo(&out, alignment_);
  const uint64_t data_start = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.append(data_start + offsets[i] - out.size(), '\0');
    out += tensors_[i].bytes;
  }
  PadTo(&out, alignment_);
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  std::string bytes = Serialize();
  auto os_error = [&](const char* what) {
    return IoError("gguf: cannot " + std::string(what) + " '" + path +
                   "': " + std::error_code(errno, std::generic_category()).message());
  };
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return os_error("create");
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  if (written != bytes.size()) {
    Status s = os_error("write");
    std::fclose(f);
    return s;
  }
  if (std::fclose(f) != 0) return os_error("close");
  return Status::Ok();
}

}  // namespace stet::gguf
