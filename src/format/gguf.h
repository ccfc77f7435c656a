// GGUF v2/v3 reader (mmap) and writer. The reader trusts nothing: every length,
// count, offset, alignment, type and dimension is validated before use, and a
// bad file yields a Status naming what is wrong and at which byte offset —
// never a crash (fuzz/gguf_fuzz.cc, tests/format/gguf_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "numerics/dtype.h"

namespace stet::gguf {

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
const char* ValueTypeName(ValueType t);
// The eight integer types (u8 ... i64), whatever their width and sign.
bool IsIntegerType(ValueType t);
// Bytes of one scalar of type t; 0 for string, array and ids outside the enum.
uint64_t ValueTypeSize(ValueType t);

// One metadata value. Strings and arrays point into the file's bytes (valid as
// long as the GgufFile lives). Typed getters return nullopt on a type mismatch.
class MetaValue {
 public:
  ValueType type() const { return type_; }
  std::optional<uint64_t> AsUInt() const;  // any integer type holding a value >= 0, or bool
  std::optional<int64_t> AsInt() const;    // any integer type that fits int64
  std::optional<double> AsFloat() const;   // f32, f64 (or an integer, converted)
  std::optional<bool> AsBool() const;
  std::optional<std::string_view> AsString() const;

  // Arrays (type() == kArray). Element getters CHECK the index (< array_size()).
  ValueType array_type() const { return array_type_; }
  uint64_t array_size() const { return array_size_; }
  std::string_view ArrayString(uint64_t i) const;  // array_type() == kString
  int64_t ArrayInt(uint64_t i) const;              // integer or bool element types
  double ArrayFloat(uint64_t i) const;             // f32/f64 (or integer) element types

 private:
  friend class Parser;
  ValueType type_ = ValueType::kU8;
  ValueType array_type_ = ValueType::kU8;
  uint64_t array_size_ = 0;
  const uint8_t* data_ = nullptr;          // scalar bytes, or first array element
  uint64_t size_ = 0;                      // string length (kString)
  std::vector<std::string_view> strings_;  // string arrays, pre-validated
};

struct TensorInfo {
  std::string name;
  DType type = DType::kF32;   // any known type; DTypeSupported is checked at model load
  std::vector<int64_t> dims;  // dims[0] is the innermost (contiguous) dimension, as in GGUF
  int64_t n_elements = 0;
  uint64_t offset = 0;  // relative to the start of the tensor data section
  uint64_t size_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapped file, aligned per general.alignment
};

class GgufFile {
 public:
  // Maps and validates a file. Errors: IoError (cannot open/map), DataLoss
  // (truncated/corrupt, with byte offset), Unimplemented (version, tensor type).
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Validates bytes held in memory (the GgufFile keeps its own copy).
  static Result<std::unique_ptr<GgufFile>> FromBytes(std::string bytes);
  // Reads and validates the header (metadata, tensor infos) as Open does, but
  // maps no tensor data: TensorInfo::data is null (unless the whole file fit
  // in the header read) and TensorBytes maps the ranges a caller needs. A
  // tensor-parallel rank maps only its rows, so its address space and resident
  // memory hold ~1/n of the weights (prlimit --as below the file size works).
  static Result<std::unique_ptr<GgufFile>> OpenHeader(const std::string& path);
  ~GgufFile();

  // Bytes [offset, offset + n) of tensor t's data (n > 0, inside the tensor):
  // into the file's bytes, or for an OpenHeader file a new read-only mapping of
  // that range; valid while the GgufFile lives. IoError when mapping fails.
  Result<const uint8_t*> TensorBytes(const TensorInfo& t, uint64_t offset, uint64_t n);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  const std::string& path() const { return path_; }

  const std::vector<std::pair<std::string, MetaValue>>& metadata() const { return metadata_; }
  const MetaValue* Find(std::string_view key) const;
  // Typed lookups whose errors name the key, the expected and the found type.
  Result<std::string> GetString(std::string_view key) const;
  Result<uint64_t> GetUInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;

 private:
  friend class Parser;
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t readable_ = 0;    // bytes at base_: size_, or OpenHeader's window
  uint64_t data_start_ = 0;  // file offset of the tensor data section
  void* mapping_ = nullptr;  // munmap on destruction when set
  int fd_ = -1;              // OpenHeader: kept for TensorBytes
  std::vector<std::pair<void*, size_t>> range_maps_;  // TensorBytes' mappings
  // FromBytes storage: a page-aligned copy, so tensor data is aligned as in a mapping.
  struct AlignedFree {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, AlignedFree> owned_;
  std::vector<std::pair<std::string, MetaValue>> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Builds GGUF v3 files: for tests (hand-made and broken files) and for
// `stet gguf-random`. Keys and tensors are written in insertion order.
class GgufWriter {
 public:
  // Setting an existing key replaces its value in place.
  void SetU32(const std::string& key, uint32_t v);
  void SetI32(const std::string& key, int32_t v);
  void SetU64(const std::string& key, uint64_t v);
  void SetF32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetString(const std::string& key, const std::string& v);
  void SetStringArray(const std::string& key, const std::vector<std::string>& v);
  void SetI32Array(const std::string& key, const std::vector<int32_t>& v);
  void SetF32Array(const std::string& key, const std::vector<float>& v);
  // The remaining value types, for round-trip tests and fuzz seeds.
  void SetU8(const std::string& key, uint8_t v);
  void SetI8(const std::string& key, int8_t v);
  void SetU16(const std::string& key, uint16_t v);
  void SetI16(const std::string& key, int16_t v);
  void SetI64(const std::string& key, int64_t v);
  void SetF64(const std::string& key, double v);
  // An array of a fixed-size element type (not string/array): n elements whose
  // little-endian bytes are `le_bytes` (size must be n * element size).
  void SetRawArray(const std::string& key, ValueType elem, uint64_t n, std::string le_bytes);
  // dims innermost first; bytes.size() must equal the type's row bytes product.
  void AddTensor(const std::string& name, DType type, std::vector<int64_t> dims, std::string bytes);
  // An explicit general.alignment key (even a wrong one, for tests) is written as set.
  void set_alignment(uint32_t a) { alignment_ = a; }  // also written as general.alignment if != 32

  std::string Serialize() const;
  Status WriteFile(const std::string& path) const;

 private:
  struct Kv {
    std::string key;
    ValueType type;
    ValueType array_type;
    std::string payload;
    uint64_t n;
  };
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> dims;
    std::string bytes;
  };
  void Put(const std::string& key, Kv kv);  // replaces an existing key in place
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace stet::gguf
