// GGUF v2/v3 reader: mmap or in-memory bytes, validated by a bounds-checked
// cursor before anything is exposed. Owns the invariant that every MetaValue
// and TensorInfo points inside the file, and every error names what is wrong
// and where. Known-but-uncomputable tensor types (q2_k, i32, ...) parse fine:
// DTypeSupported is checked at model load, which can name the layer; unknown
// type ids are an error here, since their sizes cannot be computed.
#include "format/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <system_error>
#include <type_traits>
#include <unordered_set>

#include "base/check.h"
#include "base/enum_names.h"

namespace stet::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint8_t kMagic[4] = {0x47, 0x47, 0x55, 0x46};  // "GGUF"
constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;
// Smallest possible encodings, used to reject absurd counts before reserving.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kFileAlignment = 4096;  // FromBytes copies are aligned like a mapping

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

uint64_t ScalarSize(uint32_t t) { return ValueTypeSize(static_cast<ValueType>(t)); }

bool IsKnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kF64); }

// Integer-like scalar at p as a signed 128-bit-free pair: value and sign.
struct IntValue {
  bool negative;
  uint64_t magnitude_bits;  // the value itself when !negative; two's complement bits otherwise
};

std::optional<IntValue> ReadIntLike(ValueType t, const uint8_t* p) {
  auto s = [](int64_t v) { return IntValue{v < 0, static_cast<uint64_t>(v)}; };
  auto u = [](uint64_t v) { return IntValue{false, v}; };
  switch (t) {
    case ValueType::kU8:
      return u(Load<uint8_t>(p));
    case ValueType::kI8:
      return s(Load<int8_t>(p));
    case ValueType::kU16:
      return u(Load<uint16_t>(p));
    case ValueType::kI16:
      return s(Load<int16_t>(p));
    case ValueType::kU32:
      return u(Load<uint32_t>(p));
    case ValueType::kI32:
      return s(Load<int32_t>(p));
    case ValueType::kU64:
      return u(Load<uint64_t>(p));
    case ValueType::kI64:
      return s(Load<int64_t>(p));
    case ValueType::kBool:
      return u(p[0] != 0 ? 1 : 0);
    default:
      return std::nullopt;
  }
}

std::optional<double> ReadFloatLike(ValueType t, const uint8_t* p) {
  if (t == ValueType::kF32) return static_cast<double>(Load<float>(p));
  if (t == ValueType::kF64) return Load<double>(p);
  if (!IsIntegerType(t)) return std::nullopt;
  IntValue v = *ReadIntLike(t, p);
  return v.negative ? static_cast<double>(static_cast<int64_t>(v.magnitude_bits))
                    : static_cast<double>(v.magnitude_bits);
}

// Keys and names come from the file: show them printable and bounded.
std::string Quote(std::string_view s) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

uint64_t ValueTypeSize(ValueType t) {
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
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return 8;
    case ValueType::kString:
    case ValueType::kArray:
      return 0;
  }
  return 0;
}

namespace {

constexpr EnumName<ValueType> kValueTypeNames[] = {
    {ValueType::kU8, "u8"},       {ValueType::kI8, "i8"},     {ValueType::kU16, "u16"},
    {ValueType::kI16, "i16"},     {ValueType::kU32, "u32"},   {ValueType::kI32, "i32"},
    {ValueType::kF32, "f32"},     {ValueType::kBool, "bool"}, {ValueType::kString, "string"},
    {ValueType::kArray, "array"}, {ValueType::kU64, "u64"},   {ValueType::kI64, "i64"},
    {ValueType::kF64, "f64"}};

}  // namespace

const char* ValueTypeName(ValueType t) { return NameOf(kValueTypeNames, t, "unknown"); }

bool IsIntegerType(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64:
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------
// MetaValue

std::optional<uint64_t> MetaValue::AsUInt() const {
  auto v = ReadIntLike(type_, data_);
  if (!v || v->negative) return std::nullopt;
  return v->magnitude_bits;
}

std::optional<int64_t> MetaValue::AsInt() const {
  auto v = ReadIntLike(type_, data_);
  if (!v) return std::nullopt;
  if (!v->negative && v->magnitude_bits > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(v->magnitude_bits);
}

std::optional<double> MetaValue::AsFloat() const {
  if (type_ == ValueType::kBool) return std::nullopt;
  return ReadFloatLike(type_, data_);
}

std::optional<bool> MetaValue::AsBool() const {
  if (type_ != ValueType::kBool) return std::nullopt;
  return data_[0] != 0;
}

std::optional<std::string_view> MetaValue::AsString() const {
  if (type_ != ValueType::kString) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(data_), size_);
}

std::string_view MetaValue::ArrayString(uint64_t i) const {
  STET_CHECK_MSG(type_ == ValueType::kArray && array_type_ == ValueType::kString,
                 "ArrayString on a value that is not a string array");
  STET_CHECK(i < array_size_);
  return strings_[i];
}

int64_t MetaValue::ArrayInt(uint64_t i) const {
  STET_CHECK_MSG(
      type_ == ValueType::kArray && (IsIntegerType(array_type_) || array_type_ == ValueType::kBool),
      "ArrayInt on a value that is not an integer or bool array");
  STET_CHECK(i < array_size_);
  // u64 elements above INT64_MAX wrap: no tokenizer or model array needs them.
  return static_cast<int64_t>(
      ReadIntLike(array_type_, data_ + i * ScalarSize(static_cast<uint32_t>(array_type_)))
          ->magnitude_bits);
}

double MetaValue::ArrayFloat(uint64_t i) const {
  STET_CHECK_MSG(
      type_ == ValueType::kArray && (IsIntegerType(array_type_) || array_type_ == ValueType::kF32 ||
                                     array_type_ == ValueType::kF64),
      "ArrayFloat on a value that is not a numeric array");
  STET_CHECK(i < array_size_);
  return *ReadFloatLike(array_type_, data_ + i * ScalarSize(static_cast<uint32_t>(array_type_)));
}

// ---------------------------------------------------------------------------
// Parser: reads [base, base + size) once, front to back, never past the end.

class Parser {
 public:
  Parser(GgufFile* file, std::string prefix)
      : f_(file),
        base_(file->base_),
        size_(file->size_),
        readable_(file->readable_),
        prefix_(std::move(prefix)) {}

  // Whether the parse failed only because it needed bytes past the readable
  // window (OpenHeader then reads a larger one).
  bool window_short() const { return window_short_; }

  Status Parse() {
    uint64_t n_tensors = 0, n_kv = 0;
    STET_RETURN_IF_ERROR(ParseHeader(&n_tensors, &n_kv));
    f_->metadata_.reserve(n_kv);
    std::unordered_set<std::string_view> keys;
    for (uint64_t i = 0; i < n_kv; ++i) STET_RETURN_IF_ERROR(ParseKv(i, n_kv, &keys));
    STET_RETURN_IF_ERROR(ResolveAlignment());
    f_->tensors_.reserve(n_tensors);
    std::unordered_set<std::string_view> names;
    for (uint64_t i = 0; i < n_tensors; ++i)
      STET_RETURN_IF_ERROR(ParseTensorInfo(i, n_tensors, &names));
    return PlaceTensors();
  }

 private:
  Status Err(StatusCode code, const std::string& msg) const { return Status(code, prefix_ + msg); }

  Status Truncated(uint64_t need, const std::string& what) const {
    return Err(StatusCode::kDataLoss, "truncated at offset " + Num(pos_) + " reading " + what +
                                          ": need " + Num(need) + " bytes, " + Num(size_ - pos_) +
                                          " left (file size " + Num(size_) + ")");
  }

  // Reads stay inside the readable window (the whole file, except for
  // OpenHeader's header-only read); the file size bounds the validation.
  bool Has(uint64_t n) {
    if (n <= readable_ - pos_) return true;
    if (n <= size_ - pos_) window_short_ = true;
    return false;
  }

  // Error context is built only when an error is reported (a string array of
  // 150k tokens must not build 150k messages): `what` is a string or a callable.
  template <typename W>
  static std::string Describe(const W& what) {
    if constexpr (std::is_invocable_v<const W&>) {
      return what();
    } else {
      return std::string(what);
    }
  }

  template <typename T, typename W>
  Status Read(T* out, const W& what) {
    if (!Has(sizeof(T))) return Truncated(sizeof(T), Describe(what));
    *out = Load<T>(base_ + pos_);
    pos_ += sizeof(T);
    return Status::Ok();
  }

  // A GGUF string: u64 length, then bytes (not NUL-terminated, not checked for UTF-8).
  template <typename W>
  Status ReadString(std::string_view* out, const W& what) {
    uint64_t len_at = pos_;
    uint64_t len = 0;
    STET_RETURN_IF_ERROR(Read(&len, [&] { return "the length of " + Describe(what); }));
    if (!Has(len)) {
      return Err(StatusCode::kDataLoss, Describe(what) + " at offset " + Num(len_at) + " claims " +
                                            Num(len) + " bytes, but only " + Num(size_ - pos_) +
                                            " remain in the file (size " + Num(size_) + ")");
    }
    *out = std::string_view(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status ParseHeader(uint64_t* n_tensors, uint64_t* n_kv) {
    if (!Has(4)) return Truncated(4, "the magic 'GGUF'");
    if (std::memcmp(base_, kMagic, 4) != 0) {
      return Err(StatusCode::kDataLoss,
                 "bad magic at offset 0: expected 'GGUF', found " +
                     Quote(std::string_view(reinterpret_cast<const char*>(base_), 4)) +
                     "; this is not a GGUF file");
    }
    pos_ = 4;
    uint32_t version = 0;
    STET_RETURN_IF_ERROR(Read(&version, "the version"));
    if (version != 2 && version != 3) {
      uint32_t swapped = __builtin_bswap32(version);
      std::string hint = (swapped >= 1 && swapped <= 3)
                             ? " (this looks like a big-endian GGUF, which stet does not read)"
                             : "";
      return Err(StatusCode::kUnimplemented, "version " + Num(version) +
                                                 " at offset 4 is not supported; stet reads GGUF "
                                                 "versions 2 and 3" +
                                                 hint);
    }
    f_->version_ = version;
    STET_RETURN_IF_ERROR(Read(n_tensors, "the tensor count"));
    STET_RETURN_IF_ERROR(Read(n_kv, "the metadata key/value count"));
    // Reject counts the rest of the file cannot possibly hold before reserving memory for them.
    uint64_t left = size_ - pos_;
    uint64_t kv_bytes = 0, tensor_bytes = 0, total = 0;
    bool overflow = __builtin_mul_overflow(*n_kv, kMinKvBytes, &kv_bytes) ||
                    __builtin_mul_overflow(*n_tensors, kMinTensorInfoBytes, &tensor_bytes) ||
                    __builtin_add_overflow(kv_bytes, tensor_bytes, &total);
    if (overflow || total > left) {
      return Err(StatusCode::kDataLoss,
                 "header claims " + Num(*n_tensors) + " tensors (tensor count at offset 8) and " +
                     Num(*n_kv) + " metadata pairs (count at offset 16), which need at least " +
                     (overflow ? std::string("more than 2^64") : Num(total)) + " bytes, but only " +
                     Num(left) + " bytes follow the header (file size " + Num(size_) + ")");
    }
    return Status::Ok();
  }

  Status ParseKv(uint64_t index, uint64_t n_kv, std::unordered_set<std::string_view>* keys) {
    uint64_t kv_at = pos_;
    std::string_view key;
    STET_RETURN_IF_ERROR(
        ReadString(&key, "the key of metadata pair " + Num(index) + " of " + Num(n_kv)));
    std::string what = "key " + Quote(key);
    if (!keys->insert(key).second) {
      return Err(StatusCode::kDataLoss, "duplicate metadata " + what + " at offset " + Num(kv_at) +
                                            " (pair " + Num(index) + ")");
    }
    uint64_t type_at = pos_;
    uint32_t type = 0;
    STET_RETURN_IF_ERROR(Read(&type, "the value type of " + what));
    if (!IsKnownValueType(type)) {
      return Err(StatusCode::kDataLoss, what + " has unknown value type " + Num(type) +
                                            " at offset " + Num(type_at) + " (known: 0..12)");
    }
    MetaValue v;
    v.type_ = static_cast<ValueType>(type);
    STET_RETURN_IF_ERROR(ParseValue(&v, what));
    f_->metadata_.emplace_back(std::string(key), std::move(v));
    return Status::Ok();
  }

  Status ParseValue(MetaValue* v, const std::string& what) {
    if (v->type_ == ValueType::kString) {
      std::string_view s;
      STET_RETURN_IF_ERROR(ReadString(&s, "the string value of " + what));
      v->data_ = reinterpret_cast<const uint8_t*>(s.data());
      v->size_ = s.size();
      return Status::Ok();
    }
    if (v->type_ != ValueType::kArray) {
      uint64_t n = ScalarSize(static_cast<uint32_t>(v->type_));
      if (!Has(n))
        return Truncated(n, "the " + std::string(ValueTypeName(v->type_)) + " value of " + what);
      v->data_ = base_ + pos_;
      pos_ += n;
      return Status::Ok();
    }
    uint64_t arr_at = pos_;
    uint32_t elem = 0;
    uint64_t count = 0;
    STET_RETURN_IF_ERROR(Read(&elem, "the array element type of " + what));
    if (!IsKnownValueType(elem)) {
      return Err(StatusCode::kDataLoss, what + " is an array of unknown element type " + Num(elem) +
                                            " at offset " + Num(arr_at) + " (known: 0..12)");
    }
    if (elem == static_cast<uint32_t>(ValueType::kArray)) {
      // The spec allows nesting but no model uses it and llama.cpp rejects it too.
      return Err(
          StatusCode::kUnimplemented,
          what + " at offset " + Num(arr_at) + " is an array of arrays, which stet does not read");
    }
    STET_RETURN_IF_ERROR(Read(&count, "the array length of " + what));
    v->array_type_ = static_cast<ValueType>(elem);
    v->array_size_ = count;
    uint64_t elem_bytes = elem == static_cast<uint32_t>(ValueType::kString)
                              ? 8  // at least the length of each string
                              : ScalarSize(elem);
    uint64_t bytes = 0;
    bool overflow = __builtin_mul_overflow(count, elem_bytes, &bytes);
    if (overflow || !Has(bytes)) {
      return Err(StatusCode::kDataLoss,
                 what + " at offset " + Num(arr_at) + " is an array of " + Num(count) + " " +
                     ValueTypeName(v->array_type_) + " elements, which needs at least " +
                     (overflow ? std::string("more than 2^64") : Num(bytes)) + " bytes, but only " +
                     Num(size_ - pos_) + " remain (file size " + Num(size_) + ")");
    }
    v->data_ = base_ + pos_;
    if (v->array_type_ != ValueType::kString) {
      pos_ += bytes;
      return Status::Ok();
    }
    v->strings_.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      std::string_view s;
      STET_RETURN_IF_ERROR(ReadString(&s, [&] { return "string " + Num(i) + " of " + what; }));
      v->strings_.push_back(s);
    }
    return Status::Ok();
  }

  Status ResolveAlignment() {
    const MetaValue* a = f_->Find("general.alignment");
    if (a == nullptr) return Status::Ok();  // default 32
    if (a->type() != ValueType::kU32) {
      return Err(StatusCode::kDataLoss, "key 'general.alignment' has type " +
                                            std::string(ValueTypeName(a->type())) +
                                            ", expected u32");
    }
    uint32_t v = Load<uint32_t>(a->data_);
    if (v == 0 || (v & (v - 1)) != 0) {
      return Err(StatusCode::kDataLoss,
                 "key 'general.alignment' is " + Num(v) + ", expected a nonzero power of two");
    }
    f_->alignment_ = v;
    return Status::Ok();
  }

  Status ParseTensorInfo(uint64_t index, uint64_t n_tensors,
                         std::unordered_set<std::string_view>* names) {
    uint64_t info_at = pos_;
    std::string_view name;
    STET_RETURN_IF_ERROR(
        ReadString(&name, "the name of tensor " + Num(index) + " of " + Num(n_tensors)));
    std::string what = "tensor " + Quote(name);
    if (!names->insert(name).second) {
      return Err(StatusCode::kDataLoss, "duplicate " + what + " at offset " + Num(info_at) +
                                            " (tensor info " + Num(index) + ")");
    }
    uint64_t ndims_at = pos_;
    uint32_t n_dims = 0;
    STET_RETURN_IF_ERROR(Read(&n_dims, "the dimension count of " + what));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return Err(StatusCode::kDataLoss, what + " has " + Num(n_dims) + " dimensions at offset " +
                                            Num(ndims_at) + ", expected 1 to 4");
    }
    TensorInfo t;
    t.name = std::string(name);
    t.dims.reserve(n_dims);
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim_at = pos_;
      uint64_t dim = 0;
      STET_RETURN_IF_ERROR(Read(&dim, "dimension " + Num(d) + " of " + what));
      if (dim == 0 || dim > static_cast<uint64_t>(INT64_MAX)) {
        return Err(StatusCode::kDataLoss,
                   what + " dimension " + Num(d) + " at offset " + Num(dim_at) + " is " +
                       std::to_string(static_cast<int64_t>(dim)) + ", expected a positive size");
      }
      if (__builtin_mul_overflow(n_elements, static_cast<int64_t>(dim), &n_elements)) {
        return Err(StatusCode::kDataLoss, what +
                                              " has dimensions whose element count overflows int64 "
                                              "(at dimension " +
                                              Num(d) + ", offset " + Num(dim_at) + ")");
      }
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    uint64_t type_at = pos_;
    uint32_t type_id = 0;
    STET_RETURN_IF_ERROR(Read(&type_id, "the type of " + what));
    std::optional<DTypeTraits> traits = GetDTypeTraits(type_id);
    if (!traits) {
      return Err(StatusCode::kUnimplemented,
                 what + " has tensor type id " + Num(type_id) + " at offset " + Num(type_at) +
                     ", which stet does not know (it computes with " + SupportedDTypeList() + ")");
    }
    t.type = static_cast<DType>(type_id);
    if (t.dims[0] % traits->block_elems != 0) {
      return Err(StatusCode::kDataLoss, what + " has ne0 = " + std::to_string(t.dims[0]) +
                                            ", not a multiple of the " + Num(traits->block_elems) +
                                            "-element blocks of type " + traits->name);
    }
    uint64_t blocks = static_cast<uint64_t>(n_elements / traits->block_elems);
    if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(traits->block_bytes), &t.size_bytes)) {
      return Err(StatusCode::kDataLoss, what + " holds " + std::to_string(n_elements) + " " +
                                            traits->name + " elements, whose byte size overflows");
    }
    t.n_elements = n_elements;
    STET_RETURN_IF_ERROR(Read(&t.offset, "the data offset of " + what));
    info_offsets_.push_back(info_at);
    f_->tensors_.push_back(std::move(t));
    return Status::Ok();
  }

  // After the infos: padding to the alignment, then the data section.
  Status PlaceTensors() {
    const uint64_t align = f_->alignment_;
    uint64_t data_start = 0;
    // A file without tensors (a vocab-only GGUF) may end right after its
    // metadata: llama.cpp writes such files without the trailing padding.
    if (f_->tensors_.empty() && pos_ <= size_) return Status::Ok();
    if (__builtin_add_overflow(pos_, (align - pos_ % align) % align, &data_start) ||
        data_start > size_) {
      return Err(
          StatusCode::kDataLoss,
          "truncated in the padding after the tensor infos: the data section should start at "
          "offset " +
              Num(data_start) + " (aligned to " + Num(align) +
              "), past the end of the file (size " + Num(size_) + ")");
    }
    auto& ts = f_->tensors_;
    for (size_t i = 0; i < ts.size(); ++i) {
      TensorInfo& t = ts[i];
      std::string what = "tensor " + Quote(t.name);
      if (t.offset % align != 0) {
        return Err(StatusCode::kDataLoss, what + " data offset " + Num(t.offset) +
                                              " (info at offset " + Num(info_offsets_[i]) +
                                              ") is not a multiple of the alignment " + Num(align));
      }
      uint64_t begin = 0, end = 0;
      bool overflow = __builtin_add_overflow(data_start, t.offset, &begin);
      if (overflow || __builtin_add_overflow(begin, t.size_bytes, &end) || end > size_) {
        return Err(StatusCode::kDataLoss,
                   what + " data [offset " + (overflow ? std::string("past 2^64") : Num(begin)) +
                       ", " + Num(t.size_bytes) + " bytes] ends past the end of the file (size " +
                       Num(size_) + "; its offset " + Num(t.offset) +
                       " is relative to the data section at " + Num(data_start) + ")");
      }
      t.data = end <= readable_ ? base_ + begin : nullptr;  // else: TensorBytes maps it
    }
    f_->data_start_ = data_start;
    std::vector<size_t> order(ts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return ts[a].offset != ts[b].offset ? ts[a].offset < ts[b].offset : a < b;
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& a = ts[order[k - 1]];
      const TensorInfo& b = ts[order[k]];
      if (a.offset + a.size_bytes > b.offset) {  // both ends are <= size_, no overflow
        return Err(StatusCode::kDataLoss,
                   "tensor " + Quote(a.name) + " data [" + Num(a.offset) + ", " +
                       Num(a.offset + a.size_bytes) + ") overlaps tensor " + Quote(b.name) +
                       " data starting at " + Num(b.offset) +
                       " (offsets relative to the data section at " + Num(data_start) + ")");
      }
    }
    return Status::Ok();
  }

  GgufFile* f_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t readable_;
  bool window_short_ = false;
  uint64_t pos_ = 0;
  std::string prefix_;
  std::vector<uint64_t> info_offsets_;
};

// ---------------------------------------------------------------------------
// GgufFile

void GgufFile::AlignedFree::operator()(uint8_t* p) const {
  ::operator delete(p, std::align_val_t(kFileAlignment));
}

GgufFile::~GgufFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
  for (const auto& [p, n] : range_maps_) ::munmap(p, n);
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Opens a regular, non-empty file for reading; its size in *size.
Result<int> OpenRegular(const std::string& path, uint64_t* size) {
  auto os_error = [&](const char* what) {
    int err = errno;
    return IoError("gguf: cannot " + std::string(what) + " '" + path +
                   "': " + std::error_code(err, std::generic_category()).message());
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error("open");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = os_error("stat");
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("gguf: '" + path + "' is " +
                   (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") +
                   "; expected a GGUF file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return DataLoss("gguf: '" + path + "' is empty (0 bytes); a GGUF file starts with a " +
                    Num(kHeaderBytes) + "-byte header");
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

Status OsError(const char* what, const std::string& path) {
  int err = errno;
  return IoError("gguf: cannot " + std::string(what) + " '" + path +
                 "': " + std::error_code(err, std::generic_category()).message());
}

}  // namespace

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  uint64_t size = 0;
  STET_ASSIGN_OR_RETURN(int fd, OpenRegular(path, &size));
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    Status s = OsError("mmap", path);
    ::close(fd);
    return s;
  }
  ::close(fd);
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->mapping_ = p;
  f->base_ = static_cast<const uint8_t*>(p);
  f->size_ = size;
  f->readable_ = size;
  STET_RETURN_IF_ERROR(Parser(f.get(), "gguf: " + path + ": ").Parse());
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::OpenHeader(const std::string& path) {
  uint64_t size = 0;
  STET_ASSIGN_OR_RETURN(int fd, OpenRegular(path, &size));
  // Reads a window from the start, four times larger while the parse needs
  // more (a large vocabulary's header runs to megabytes), never past the file.
  for (uint64_t window = std::min<uint64_t>(size, uint64_t{4} << 20);;
       window = std::min(size, window * 4)) {
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->path_ = path;
    f->size_ = size;
    f->readable_ = window;
    f->owned_.reset(
        static_cast<uint8_t*>(::operator new(window, std::align_val_t(kFileAlignment))));
    for (uint64_t done = 0; done < window;) {
      const ssize_t got = ::pread(fd, f->owned_.get() + done, window - done, done);
      if (got <= 0) {
        Status s = got < 0 ? OsError("read", path)
                           : DataLoss("gguf: '" + path + "' ended while reading its header");
        ::close(fd);
        return s;
      }
      done += static_cast<uint64_t>(got);
    }
    f->base_ = f->owned_.get();
    Parser parser(f.get(), "gguf: " + path + ": ");
    Status st = parser.Parse();
    if (st.ok()) {
      f->fd_ = fd;
      return f;
    }
    if (!parser.window_short() || window == size) {
      ::close(fd);
      return st;
    }
  }
}

Result<const uint8_t*> GgufFile::TensorBytes(const TensorInfo& t, uint64_t offset, uint64_t n) {
  STET_CHECK_MSG(n > 0 && offset <= t.size_bytes && n <= t.size_bytes - offset,
                 "TensorBytes: range outside the tensor");
  if (t.data != nullptr) return t.data + offset;
  STET_CHECK_MSG(fd_ >= 0, "TensorBytes: tensor data neither held nor mappable");
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t at = data_start_ + t.offset + offset;
  const uint64_t map_at = at / page * page;
  const size_t len = static_cast<size_t>(at - map_at + n);
  void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(map_at));
  if (p == MAP_FAILED) {
    return OsError(("map " + Num(n) + " bytes of tensor " + Quote(t.name) + " of").c_str(), path_);
  }
  range_maps_.emplace_back(p, len);
  return static_cast<const uint8_t*>(p) + (at - map_at);
}

Result<std::unique_ptr<GgufFile>> GgufFile::FromBytes(std::string bytes) {
  if (bytes.empty()) {
    return DataLoss("gguf: no bytes (0 bytes); a GGUF file starts with a " + Num(kHeaderBytes) +
                    "-byte header");
  }
  std::unique_ptr<GgufFile> f(new GgufFile());
  // Exactly bytes.size(): a read past the end is caught by ASan, not hidden by slack.
  f->owned_.reset(
      static_cast<uint8_t*>(::operator new(bytes.size(), std::align_val_t(kFileAlignment))));
  std::memcpy(f->owned_.get(), bytes.data(), bytes.size());
  f->base_ = f->owned_.get();
  f->size_ = bytes.size();
  f->readable_ = bytes.size();
  STET_RETURN_IF_ERROR(Parser(f.get(), "gguf: ").Parse());
  return f;
}

const MetaValue* GgufFile::Find(std::string_view key) const {
  for (const auto& [k, v] : metadata_) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

Status MissingKey(std::string_view key) {
  return NotFound("gguf: key " + Quote(key) + " is missing");
}

Status WrongType(std::string_view key, const MetaValue& v, const char* expected) {
  std::string found = ValueTypeName(v.type());
  if (v.type() == ValueType::kArray)
    found = std::string("array of ") + ValueTypeName(v.array_type());
  return DataLoss("gguf: key " + Quote(key) + " has type " + found + ", expected " + expected);
}

}  // namespace

Result<std::string> GgufFile::GetString(std::string_view key) const {
  const MetaValue* v = Find(key);
  if (v == nullptr) return MissingKey(key);
  auto s = v->AsString();
  if (!s) return WrongType(key, *v, "a string");
  return std::string(*s);
}

Result<uint64_t> GgufFile::GetUInt(std::string_view key) const {
  const MetaValue* v = Find(key);
  if (v == nullptr) return MissingKey(key);
  if (auto u = v->AsUInt()) return *u;
  if (auto i = v->AsInt()) {  // a signed type holding a negative value
    return OutOfRange("gguf: key " + Quote(key) + " is " + std::to_string(*i) +
                      ", expected an unsigned integer");
  }
  return WrongType(key, *v, "an unsigned integer");
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  const MetaValue* v = Find(key);
  if (v == nullptr) return MissingKey(key);
  auto d = v->AsFloat();
  if (!d) return WrongType(key, *v, "a number");
  return *d;
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const MetaValue* v = Find(key);
  if (v == nullptr) return MissingKey(key);
  auto b = v->AsBool();
  if (!b) return WrongType(key, *v, "a bool");
  return *b;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace stet::gguf
