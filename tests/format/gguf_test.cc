// Tests for the GGUF reader and writer: writer -> reader round trips for every
// value type, facts about the real files in ../shared/models, and hand-made
// broken files (valid GgufWriter output with specific bytes corrupted), each of
// which must give the right StatusCode and a message naming the problem.
#include "format/gguf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "support/test_support.h"

namespace stet::gguf {
namespace {

using ::stet::testing::SharedDir;

template <typename T>
std::string Le(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}

std::string Filler(size_t n, uint8_t seed = 1) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + seed) & 0xff);
  return s;
}

// Position of the first occurrence of `needle` (names in tests are unique).
size_t At(const std::string& bytes, const std::string& needle) {
  size_t p = bytes.find(needle);
  EXPECT_NE(p, std::string::npos) << "'" << needle << "' not in the file";
  return p == std::string::npos ? 0 : p;
}
// The byte after a length-prefixed key or name: the value type / n_dims.
size_t After(const std::string& bytes, const std::string& name) {
  return At(bytes, name) + name.size();
}

template <typename T>
void Poke(std::string* bytes, size_t pos, T v) {
  ASSERT_LE(pos + sizeof(T), bytes->size());
  std::memcpy(bytes->data() + pos, &v, sizeof(T));
}
template <typename T>
T Peek(const std::string& bytes, size_t pos) {
  T v{};
  EXPECT_LE(pos + sizeof(T), bytes.size());
  if (pos + sizeof(T) <= bytes.size()) std::memcpy(&v, bytes.data() + pos, sizeof(T));
  return v;
}

// Positions inside the tensor info of `name`.
struct InfoPos {
  size_t n_dims, dims, type, offset;
};
InfoPos Info(const std::string& bytes, const std::string& name) {
  InfoPos p;
  p.n_dims = After(bytes, name);
  p.dims = p.n_dims + 4;
  p.type = p.dims + 8 * Peek<uint32_t>(bytes, p.n_dims);
  p.offset = p.type + 4;
  return p;
}

// A small valid file with metadata of several types and three tensors.
GgufWriter SmallWriter() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetU32("llama.block_count", 2);
  w.SetF32("llama.eps", 1e-5f);
  w.SetStringArray("tok.tokens", {"<s>", "hello", ""});
  w.SetF32Array("tok.scores", {0.5f, -1.0f, 2.0f});
  w.AddTensor("tensor_alpha", DType::kF32, {4, 2}, Filler(32, 1));
  w.AddTensor("tensor_beta", DType::kQ8_0, {32, 2}, Filler(68, 2));
  w.AddTensor("tensor_gamma", DType::kF16, {16}, Filler(32, 3));  // ends the file: no tail padding
  return w;
}

void ExpectError(std::string bytes, StatusCode code, std::vector<std::string> parts) {
  auto r = GgufFile::FromBytes(std::move(bytes));
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << (parts.empty() ? "" : parts[0])
                       << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(r.status().message().find(p), std::string::npos)
        << "message lacks '" << p << "': " << r.status().message();
  }
}

// Touches everything a parsed file exposes (ASan checks the bounds).
uint64_t TouchAll(const GgufFile& f) {
  uint64_t h = 0;
  for (const auto& [key, v] : f.metadata()) {
    h += key.size();
    if (auto s = v.AsString()) h += s->empty() ? 0 : static_cast<uint8_t>(s->back());
    if (v.type() == ValueType::kArray) {
      for (uint64_t i = 0; i < v.array_size(); ++i) {
        if (v.array_type() == ValueType::kString)
          h += v.ArrayString(i).size();
        else if (v.array_type() != ValueType::kF32 && v.array_type() != ValueType::kF64)
          h += v.ArrayInt(i);
        else
          h += v.ArrayFloat(i) > 0;
      }
    }
  }
  for (const TensorInfo& t : f.tensors()) {
    if (t.size_bytes > 0) h += t.data[0] + t.data[t.size_bytes - 1];
  }
  return h;
}

// ---------------------------------------------------------------------------
// Round trips

TEST(GgufRoundTrip, EveryScalarType) {
  GgufWriter w;
  w.SetU8("u8", 200);
  w.SetI8("i8", -100);
  w.SetU16("u16", 60000);
  w.SetI16("i16", -30000);
  w.SetU32("u32", 4000000000u);
  w.SetI32("i32", -2000000000);
  w.SetU64("u64", std::numeric_limits<uint64_t>::max());
  w.SetI64("i64", std::numeric_limits<int64_t>::min());
  w.SetF32("f32", 1.5f);
  w.SetF64("f64", -2.25e300);
  w.SetBool("t", true);
  w.SetBool("f", false);
  w.SetString("s", std::string("a\0b", 3));
  w.SetString("empty", "");
  auto r = GgufFile::FromBytes(w.Serialize());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.metadata().size(), 14u);
  EXPECT_EQ(f.metadata()[0].first, "u8");  // insertion order
  EXPECT_EQ(f.Find("u8")->type(), ValueType::kU8);
  EXPECT_EQ(*f.Find("u8")->AsUInt(), 200u);
  EXPECT_EQ(*f.Find("i8")->AsInt(), -100);
  EXPECT_FALSE(f.Find("i8")->AsUInt().has_value());
  EXPECT_EQ(*f.Find("u16")->AsUInt(), 60000u);
  EXPECT_EQ(*f.Find("i16")->AsInt(), -30000);
  EXPECT_EQ(*f.Find("u32")->AsUInt(), 4000000000u);
  EXPECT_EQ(*f.Find("i32")->AsInt(), -2000000000);
  EXPECT_EQ(*f.Find("u64")->AsUInt(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(f.Find("u64")->AsInt().has_value());  // does not fit int64
  EXPECT_EQ(*f.Find("i64")->AsInt(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f.Find("f32")->AsFloat(), 1.5);
  EXPECT_FALSE(f.Find("f32")->AsUInt().has_value());
  EXPECT_EQ(*f.Find("f64")->AsFloat(), -2.25e300);
  EXPECT_EQ(*f.Find("t")->AsBool(), true);
  EXPECT_EQ(*f.Find("f")->AsBool(), false);
  EXPECT_EQ(*f.Find("t")->AsUInt(), 1u);
  EXPECT_FALSE(f.Find("t")->AsFloat().has_value());
  EXPECT_EQ(*f.Find("s")->AsString(), std::string_view("a\0b", 3));
  EXPECT_EQ(*f.Find("empty")->AsString(), "");
  EXPECT_FALSE(f.Find("s")->AsUInt().has_value());
  EXPECT_FALSE(f.Find("u8")->AsString().has_value());
  EXPECT_EQ(f.Find("nope"), nullptr);
  EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufRoundTrip, EveryArrayType) {
  GgufWriter w;
  w.SetRawArray("a.u8", ValueType::kU8, 3, std::string("\x01\x02\xff", 3));
  w.SetRawArray("a.i8", ValueType::kI8, 2, std::string("\xff\x05", 2));
  w.SetRawArray("a.u16", ValueType::kU16, 2, Le<uint16_t>(7) + Le<uint16_t>(65535));
  w.SetRawArray("a.i16", ValueType::kI16, 1, Le<int16_t>(-7));
  w.SetRawArray("a.u32", ValueType::kU32, 1, Le<uint32_t>(4000000000u));
  w.SetI32Array("a.i32", {1, -2, 3});
  w.SetF32Array("a.f32", {0.25f, -8.0f});
  w.SetRawArray("a.bool", ValueType::kBool, 2, std::string("\x01\x00", 2));
  w.SetRawArray("a.u64", ValueType::kU64, 1, Le<uint64_t>(1ull << 40));
  w.SetRawArray("a.i64", ValueType::kI64, 1, Le<int64_t>(-(1ll << 40)));
  w.SetRawArray("a.f64", ValueType::kF64, 2, Le<double>(3.5) + Le<double>(-1e-300));
  w.SetStringArray("a.str", {"x", "", "longer string", std::string("\0z", 2)});
  w.SetStringArray("a.empty", {});
  auto r = GgufFile::FromBytes(w.Serialize());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& f = **r;
  auto arr = [&](const char* k, ValueType et, uint64_t n) {
    const MetaValue* v = f.Find(k);
    EXPECT_NE(v, nullptr) << k;
    EXPECT_EQ(v->type(), ValueType::kArray) << k;
    EXPECT_EQ(v->array_type(), et) << k;
    EXPECT_EQ(v->array_size(), n) << k;
    EXPECT_FALSE(v->AsUInt().has_value());
    EXPECT_FALSE(v->AsString().has_value());
    return v;
  };
  auto* u8 = arr("a.u8", ValueType::kU8, 3);
  EXPECT_EQ(u8->ArrayInt(2), 255);
  EXPECT_EQ(arr("a.i8", ValueType::kI8, 2)->ArrayInt(0), -1);
  EXPECT_EQ(arr("a.u16", ValueType::kU16, 2)->ArrayInt(1), 65535);
  EXPECT_EQ(arr("a.i16", ValueType::kI16, 1)->ArrayInt(0), -7);
  EXPECT_EQ(arr("a.u32", ValueType::kU32, 1)->ArrayInt(0), 4000000000ll);
  auto* i32 = arr("a.i32", ValueType::kI32, 3);
  EXPECT_EQ(i32->ArrayInt(1), -2);
  EXPECT_EQ(i32->ArrayFloat(2), 3.0);
  auto* f32 = arr("a.f32", ValueType::kF32, 2);
  EXPECT_EQ(f32->ArrayFloat(0), 0.25);
  EXPECT_EQ(f32->ArrayFloat(1), -8.0);
  auto* b = arr("a.bool", ValueType::kBool, 2);
  EXPECT_EQ(b->ArrayInt(0), 1);
  EXPECT_EQ(b->ArrayInt(1), 0);
  EXPECT_EQ(arr("a.u64", ValueType::kU64, 1)->ArrayInt(0), 1ll << 40);
  EXPECT_EQ(arr("a.i64", ValueType::kI64, 1)->ArrayInt(0), -(1ll << 40));
  EXPECT_EQ(arr("a.f64", ValueType::kF64, 2)->ArrayFloat(1), -1e-300);
  auto* s = arr("a.str", ValueType::kString, 4);
  EXPECT_EQ(s->ArrayString(0), "x");
  EXPECT_EQ(s->ArrayString(1), "");
  EXPECT_EQ(s->ArrayString(2), "longer string");
  EXPECT_EQ(s->ArrayString(3), std::string_view("\0z", 2));
  arr("a.empty", ValueType::kString, 0);
}

TEST(GgufRoundTrip, TensorsAlignedAndIntact) {
  for (uint32_t align : {32u, 64u, 1u, 8u, 256u}) {
    GgufWriter w = SmallWriter();
    w.AddTensor("tensor_delta", DType::kQ4_K, {256}, Filler(144, 4));
    w.set_alignment(align);
    std::string bytes = w.Serialize();
    EXPECT_EQ(bytes.size() % align, 0u);
    auto r = GgufFile::FromBytes(bytes);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const GgufFile& f = **r;
    EXPECT_EQ(f.alignment(), align);
    EXPECT_EQ(f.Find("general.alignment") != nullptr, align != 32u);
    ASSERT_EQ(f.tensors().size(), 4u);
    const TensorInfo* beta = f.FindTensor("tensor_beta");
    ASSERT_NE(beta, nullptr);
    EXPECT_EQ(beta->type, DType::kQ8_0);
    EXPECT_EQ(beta->dims, (std::vector<int64_t>{32, 2}));
    EXPECT_EQ(beta->n_elements, 64);
    EXPECT_EQ(beta->size_bytes, 68u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(beta->data), 68), Filler(68, 2));
    const TensorInfo* delta = f.FindTensor("tensor_delta");
    ASSERT_NE(delta, nullptr);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(delta->data), 144), Filler(144, 4));
    for (const TensorInfo& t : f.tensors()) {
      EXPECT_EQ(t.offset % align, 0u) << t.name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % align, 0u) << t.name;
    }
    EXPECT_EQ(f.FindTensor("tensor_missing"), nullptr);
  }
}

TEST(GgufRoundTrip, SettingAKeyAgainReplacesIt) {
  GgufWriter w;
  w.SetU32("a", 1);
  w.SetString("b", "x");
  w.SetString("a", "now a string");
  auto r = GgufFile::FromBytes(w.Serialize());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)->metadata().size(), 2u);
  EXPECT_EQ((*r)->metadata()[0].first, "a");
  EXPECT_EQ(*(*r)->GetString("a"), "now a string");
}

TEST(GgufRoundTrip, Version2IsRead) {
  std::string bytes = SmallWriter().Serialize();
  Poke<uint32_t>(&bytes, 4, 2);
  auto r = GgufFile::FromBytes(bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->version(), 2u);
  EXPECT_EQ((*r)->tensors().size(), 3u);
}

TEST(GgufRoundTrip, KnownButUnsupportedTypeParses) {
  // Chosen behaviour: q8_k etc. parse; the model loader rejects what it cannot compute.
  GgufWriter w;
  w.AddTensor("k8", DType::kQ8_K, {256, 2}, Filler(584));
  w.AddTensor("i32", DType::kI32, {3}, Filler(12));
  auto r = GgufFile::FromBytes(w.Serialize());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->FindTensor("k8")->type, DType::kQ8_K);
  EXPECT_EQ((*r)->FindTensor("k8")->size_bytes, 584u);
  EXPECT_FALSE(DTypeSupported((*r)->FindTensor("k8")->type));
}

// ---------------------------------------------------------------------------
// Typed getters

TEST(GgufGetters, ErrorsNameKeyAndTypes) {
  GgufWriter w;
  w.SetString("name", "llama");
  w.SetI32("neg", -1);
  w.SetI32("pos", 7);
  w.SetF32("eps", 0.5f);
  w.SetBool("flag", true);
  w.SetI32Array("arr", {1});
  auto r = GgufFile::FromBytes(w.Serialize());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& f = **r;
  EXPECT_EQ(*f.GetString("name"), "llama");
  EXPECT_EQ(*f.GetUInt("pos"), 7u);
  EXPECT_EQ(*f.GetFloat("eps"), 0.5);
  EXPECT_EQ(*f.GetFloat("pos"), 7.0);
  EXPECT_EQ(*f.GetBool("flag"), true);

  auto missing = f.GetUInt("llama.block_count");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "gguf: key 'llama.block_count' is missing");

  auto wrong = f.GetUInt("name");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(wrong.status().message(),
            "gguf: key 'name' has type string, expected an unsigned integer");

  auto neg = f.GetUInt("neg");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(neg.status().message().find("-1"), std::string::npos);

  auto s = f.GetString("pos");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("has type i32, expected a string"), std::string::npos);
  auto a = f.GetFloat("arr");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("array of i32"), std::string::npos);
  auto b = f.GetBool("pos");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("expected a bool"), std::string::npos);
  EXPECT_FALSE(f.GetString("missing").ok());
  EXPECT_FALSE(f.GetFloat("missing").ok());
  EXPECT_FALSE(f.GetBool("missing").ok());
}

// ---------------------------------------------------------------------------
// Real files in ../shared/models

TEST(GgufRealFiles, Stories260K) {
  std::string path = SharedDir() + "/models/stories260K/stories260K.gguf";
  STET_REQUIRE_FILE(path);
  auto r = GgufFile::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.file_size(), 1185376u);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetUInt("llama.block_count"), 5u);
  EXPECT_EQ(*f.GetUInt("llama.embedding_length"), 64u);
  EXPECT_EQ(*f.GetUInt("llama.attention.head_count_kv"), 4u);
  EXPECT_NEAR(*f.GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-10);
  const MetaValue* tokens = f.Find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->array_size(), 512u);
  EXPECT_EQ(tokens->ArrayString(1), "<s>");
  EXPECT_EQ(f.Find("tokenizer.ggml.token_type")->ArrayInt(0), 2);
  EXPECT_EQ(f.tensors().size(), 48u);
  const TensorInfo* emb = f.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::kF32);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->size_bytes, 64u * 512 * 4);
  const TensorInfo* q = f.FindTensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->offset, 262400u);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{64, 64}));
  for (const TensorInfo& t : f.tensors()) EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u);
  // The same bytes through FromBytes give the same view.
  auto m = GgufFile::FromBytes(::stet::testing::ReadFileOrDie(path));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->tensors().size(), 48u);
  EXPECT_EQ(
      std::memcmp((*m)->FindTensor("output.weight")->data, f.FindTensor("output.weight")->data,
                  f.FindTensor("output.weight")->size_bytes),
      0);
}

TEST(GgufRealFiles, Llama2TinyRandom) {
  std::string path = SharedDir() + "/models/llama-2-tiny-random/llama-2-tiny-random.gguf";
  STET_REQUIRE_FILE(path);
  auto r = GgufFile::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& f = **r;
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetUInt("llama.block_count"), 1u);
  EXPECT_EQ(*f.GetUInt("llama.embedding_length"), 8u);
  EXPECT_EQ(f.Find("tokenizer.ggml.tokens")->array_size(), 32000u);
  EXPECT_EQ(f.tensors().size(), 12u);
  const TensorInfo* emb = f.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::kF16);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{8, 32000}));
  EXPECT_EQ(emb->size_bytes, 8u * 32000 * 2);
}

// ---------------------------------------------------------------------------
// Open

class GgufOpen : public ::testing::Test {
 protected:
  std::string Tmp(const std::string& name) {
    return ::testing::TempDir() + "/gguf_test_" + std::to_string(::getpid()) + "_" + name;
  }
};

TEST_F(GgufOpen, NonexistentPathIsIoError) {
  auto r = GgufFile::Open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
  EXPECT_NE(r.status().message().find("No such file"), std::string::npos) << r.status().message();
}

TEST_F(GgufOpen, DirectoryIsAClearError) {
  auto r = GgufFile::Open(::testing::TempDir());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("is a directory"), std::string::npos) << r.status().message();
}

TEST_F(GgufOpen, EmptyFileIsAClearError) {
  std::string path = Tmp("empty.gguf");
  std::FILE* fp = std::fopen(path.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  std::fclose(fp);
  auto r = GgufFile::Open(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("is empty"), std::string::npos) << r.status().message();
  auto b = GgufFile::FromBytes("");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kDataLoss);
}

TEST_F(GgufOpen, WriteFileThenOpen) {
  std::string path = Tmp("small.gguf");
  ASSERT_TRUE(SmallWriter().WriteFile(path).ok());
  auto r = GgufFile::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->tensors().size(), 3u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*r)->FindTensor("tensor_gamma")->data), 32),
            Filler(32, 3));
  // Errors from Open name the path.
  std::string bad = SmallWriter().Serialize();
  bad[0] = 'X';
  std::FILE* fp = std::fopen(path.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  std::fwrite(bad.data(), 1, bad.size(), fp);
  std::fclose(fp);
  auto e = GgufFile::Open(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(path), std::string::npos) << e.status().message();
  EXPECT_FALSE(SmallWriter().WriteFile("/nonexistent/dir/x.gguf").ok());
}

// ---------------------------------------------------------------------------
// Broken files

class GgufBroken : public ::testing::Test {
 protected:
  std::string bytes_ = SmallWriter().Serialize();
};

TEST_F(GgufBroken, SmallFileIsValid) {
  auto r = GgufFile::FromBytes(bytes_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  TouchAll(**r);
}

TEST_F(GgufBroken, BadMagic) {
  bytes_[3] = 'X';
  ExpectError(bytes_, StatusCode::kDataLoss, {"bad magic", "offset 0", "GGUX"});
}

TEST_F(GgufBroken, Version1) {
  Poke<uint32_t>(&bytes_, 4, 1);
  ExpectError(bytes_, StatusCode::kUnimplemented, {"version 1", "versions 2 and 3"});
}

TEST_F(GgufBroken, Version4) {
  Poke<uint32_t>(&bytes_, 4, 4);
  ExpectError(bytes_, StatusCode::kUnimplemented, {"version 4"});
}

TEST_F(GgufBroken, BigEndianVersion) {
  Poke<uint32_t>(&bytes_, 4, 0x03000000u);
  ExpectError(bytes_, StatusCode::kUnimplemented, {"big-endian"});
}

TEST_F(GgufBroken, HugeTensorCount) {
  Poke<uint64_t>(&bytes_, 8, 1ull << 60);
  ExpectError(bytes_, StatusCode::kDataLoss, {"1152921504606846976 tensors", "offset 8"});
}

TEST_F(GgufBroken, HugeKvCount) {
  Poke<uint64_t>(&bytes_, 16, ~0ull);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"18446744073709551615 metadata pairs", "more than 2^64"});
}

TEST_F(GgufBroken, KeyLengthPastEof) {
  Poke<uint64_t>(&bytes_, 24, 1ull << 40);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"key of metadata pair 0", "offset 24", "1099511627776 bytes"});
}

TEST_F(GgufBroken, KeyLengthMaxU64) {
  Poke<uint64_t>(&bytes_, 24, ~0ull);
  ExpectError(bytes_, StatusCode::kDataLoss, {"key of metadata pair 0", "18446744073709551615"});
}

TEST_F(GgufBroken, StringValueLengthPastEof) {
  Poke<uint64_t>(&bytes_, After(bytes_, "general.architecture") + 4, 1ull << 62);
  ExpectError(bytes_, StatusCode::kDataLoss, {"string value of key 'general.architecture'"});
}

TEST_F(GgufBroken, UnknownValueType) {
  Poke<uint32_t>(&bytes_, After(bytes_, "llama.block_count"), 13);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"key 'llama.block_count'", "unknown value type 13", "offset"});
}

TEST_F(GgufBroken, UnknownArrayElementType) {
  Poke<uint32_t>(&bytes_, After(bytes_, "tok.scores") + 4, 99);
  ExpectError(bytes_, StatusCode::kDataLoss, {"key 'tok.scores'", "unknown element type 99"});
}

TEST_F(GgufBroken, NestedArrayIsRejected) {
  Poke<uint32_t>(&bytes_, After(bytes_, "tok.scores") + 4, 9);
  ExpectError(bytes_, StatusCode::kUnimplemented, {"key 'tok.scores'", "array of arrays"});
}

TEST_F(GgufBroken, ArrayByteSizeOverflows) {
  GgufWriter w;
  w.SetRawArray("big", ValueType::kU64, 1, Le<uint64_t>(5));
  std::string b = w.Serialize();
  Poke<uint64_t>(&b, After(b, "big") + 8, 1ull << 62);  // 2^62 * 8 bytes
  ExpectError(b, StatusCode::kDataLoss,
              {"key 'big'", "4611686018427387904 u64 elements", "more than 2^64"});
}

TEST_F(GgufBroken, ArrayPastEof) {
  Poke<uint64_t>(&bytes_, After(bytes_, "tok.scores") + 8, 1000000);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"key 'tok.scores'", "1000000 f32 elements", "4000000 bytes"});
}

TEST_F(GgufBroken, StringArrayCountAbsurd) {
  Poke<uint64_t>(&bytes_, After(bytes_, "tok.tokens") + 8, 1ull << 61);
  ExpectError(bytes_, StatusCode::kDataLoss, {"key 'tok.tokens'", "string elements"});
}

TEST_F(GgufBroken, StringArrayElementPastEof) {
  // The length of the second token ("hello").
  Poke<uint64_t>(&bytes_, At(bytes_, "hello") - 8, 1ull << 33);
  ExpectError(bytes_, StatusCode::kDataLoss, {"string 1 of key 'tok.tokens'", "8589934592 bytes"});
}

TEST_F(GgufBroken, DuplicateKey) {
  GgufWriter w;
  w.SetU32("dup.keyA", 1);
  w.SetU32("dup.keyB", 2);
  std::string b = w.Serialize();
  b[At(b, "dup.keyB") + 7] = 'A';
  ExpectError(b, StatusCode::kDataLoss, {"duplicate metadata key 'dup.keyA'", "pair 1"});
}

TEST_F(GgufBroken, DuplicateTensorName) {
  bytes_.replace(At(bytes_, "tensor_gamma"), 12, "tensor_alpha");
  ASSERT_EQ(bytes_.find("tensor_gamma"), std::string::npos);
  ExpectError(bytes_, StatusCode::kDataLoss, {"duplicate tensor 'tensor_alpha'", "tensor info 2"});
}

TEST_F(GgufBroken, ZeroDims) {
  Poke<uint32_t>(&bytes_, Info(bytes_, "tensor_alpha").n_dims, 0);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"tensor 'tensor_alpha' has 0 dimensions", "expected 1 to 4"});
}

TEST_F(GgufBroken, FiveDims) {
  Poke<uint32_t>(&bytes_, Info(bytes_, "tensor_alpha").n_dims, 5);
  ExpectError(bytes_, StatusCode::kDataLoss, {"tensor 'tensor_alpha' has 5 dimensions"});
}

TEST_F(GgufBroken, DimZero) {
  Poke<uint64_t>(&bytes_, Info(bytes_, "tensor_alpha").dims + 8, 0);
  ExpectError(bytes_, StatusCode::kDataLoss, {"tensor 'tensor_alpha' dimension 1", "is 0"});
}

TEST_F(GgufBroken, DimNegative) {
  Poke<int64_t>(&bytes_, Info(bytes_, "tensor_alpha").dims, -4);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"tensor 'tensor_alpha' dimension 0", "is -4", "positive"});
}

TEST_F(GgufBroken, DimProductOverflowsInt64) {
  InfoPos p = Info(bytes_, "tensor_alpha");
  Poke<uint64_t>(&bytes_, p.dims, 1ull << 32);
  Poke<uint64_t>(&bytes_, p.dims + 8, 1ull << 31);
  ExpectError(bytes_, StatusCode::kDataLoss, {"tensor 'tensor_alpha'", "overflows int64"});
}

TEST_F(GgufBroken, ByteSizeOverflows) {
  InfoPos p = Info(bytes_, "tensor_alpha");  // f32: 2^62 elements are 2^64 bytes
  Poke<uint64_t>(&bytes_, p.dims, 1ull << 31);
  Poke<uint64_t>(&bytes_, p.dims + 8, 1ull << 31);
  ExpectError(bytes_, StatusCode::kDataLoss, {"tensor 'tensor_alpha'", "byte size overflows"});
}

TEST_F(GgufBroken, UnknownTensorType) {
  Poke<uint32_t>(&bytes_, Info(bytes_, "tensor_beta").type, 99);
  ExpectError(bytes_, StatusCode::kUnimplemented,
              {"tensor 'tensor_beta'", "type id 99", "does not know"});
}

TEST_F(GgufBroken, Ne0NotMultipleOfBlock) {
  Poke<uint64_t>(&bytes_, Info(bytes_, "tensor_beta").dims, 48);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"tensor 'tensor_beta' has ne0 = 48", "32-element blocks of type q8_0"});
}

TEST_F(GgufBroken, OffsetNotAligned) {
  Poke<uint64_t>(&bytes_, Info(bytes_, "tensor_beta").offset, 36);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"tensor 'tensor_beta' data offset 36", "alignment 32"});
}

TEST_F(GgufBroken, DataPastEof) {
  Poke<uint64_t>(&bytes_, Info(bytes_, "tensor_gamma").offset, 1024);
  ExpectError(
      bytes_, StatusCode::kDataLoss,
      {"tensor 'tensor_gamma' data [offset 1440, 32 bytes] ends past the end of the file (size " +
           std::to_string(bytes_.size()),
       "offset 1024 is relative to the data section at 416"});
}

TEST_F(GgufBroken, OffsetNearU64MaxDoesNotWrap) {
  Poke<uint64_t>(&bytes_, Info(bytes_, "tensor_gamma").offset, ~0ull - 31);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"tensor 'tensor_gamma' data", "ends past the end of the file"});
}

TEST_F(GgufBroken, OverlappingTensors) {
  Poke<uint64_t>(&bytes_, Info(bytes_, "tensor_gamma").offset, 0);
  ExpectError(bytes_, StatusCode::kDataLoss,
              {"tensor 'tensor_alpha' data [0, 32) overlaps tensor 'tensor_gamma'"});
}

TEST_F(GgufBroken, AlignmentWrongType) {
  GgufWriter w = SmallWriter();
  w.SetString("general.alignment", "32");
  ExpectError(w.Serialize(), StatusCode::kDataLoss,
              {"'general.alignment' has type string, expected u32"});
  GgufWriter w2 = SmallWriter();
  w2.SetU64("general.alignment", 32);
  ExpectError(w2.Serialize(), StatusCode::kDataLoss, {"'general.alignment' has type u64"});
}

TEST_F(GgufBroken, AlignmentNotPowerOfTwo) {
  GgufWriter w = SmallWriter();
  w.SetU32("general.alignment", 48);
  ExpectError(w.Serialize(), StatusCode::kDataLoss, {"'general.alignment' is 48", "power of two"});
}

TEST_F(GgufBroken, AlignmentZero) {
  GgufWriter w = SmallWriter();
  w.SetU32("general.alignment", 0);
  ExpectError(w.Serialize(), StatusCode::kDataLoss, {"'general.alignment' is 0"});
}

TEST_F(GgufBroken, AlignmentLargerThanFile) {
  GgufWriter w = SmallWriter();
  w.SetU32("general.alignment", 1u << 31);
  ExpectError(w.Serialize(), StatusCode::kDataLoss,
              {"padding after the tensor infos", "aligned to 2147483648"});
}

TEST_F(GgufBroken, TruncatedInPadding) {
  GgufWriter w;
  w.SetString("k", "v");
  w.set_alignment(256);
  w.AddTensor("t", DType::kF32, {1}, std::string(4, '\0'));
  std::string b = w.Serialize();
  ASSERT_TRUE(GgufFile::FromBytes(b).ok());
  ASSERT_GE(b.size(), 260u);
  b.resize(200);  // the infos end before 200; the data section starts at 256
  ExpectError(b, StatusCode::kDataLoss, {"truncated in the padding", "offset 256", "size 200"});
}

// llama.cpp's vocab-only files (no tensors) end right after the metadata.
TEST(Gguf, NoTensorsNoTrailingPaddingIsValid) {
  GgufWriter w;
  w.SetString("k", "v");  // 46 bytes, padded to 64 by the writer
  std::string b = w.Serialize();
  b.resize(46);
  auto f = GgufFile::FromBytes(b);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("k"), "v");
}

TEST_F(GgufBroken, TruncatedHeaderKvAndInfo) {
  ExpectError(bytes_.substr(0, 2), StatusCode::kDataLoss, {"truncated at offset 0", "magic"});
  ExpectError(bytes_.substr(0, 6), StatusCode::kDataLoss, {"truncated at offset 4", "version"});
  ExpectError(bytes_.substr(0, 20), StatusCode::kDataLoss,
              {"truncated at offset 16", "metadata key/value count"});
  GgufWriter w;  // one key only, so the header's count check passes and the kv read fails
  w.SetU32("llama.block_count", 2);
  std::string one = w.Serialize();
  size_t in_kv = After(one, "llama.block_count") + 6;  // inside the u32 value
  ExpectError(
      one.substr(0, in_kv), StatusCode::kDataLoss,
      {"truncated at offset " + std::to_string(in_kv - 2), "u32 value of key 'llama.block_count'"});
  size_t in_info = Info(bytes_, "tensor_beta").type + 2;
  ExpectError(bytes_.substr(0, in_info), StatusCode::kDataLoss, {"type of tensor 'tensor_beta'"});
}

TEST_F(GgufBroken, EveryTruncationIsAnError) {
  // SmallWriter's last tensor ends the file, so every proper prefix lacks something.
  for (size_t n = 0; n < bytes_.size(); ++n) {
    auto r = GgufFile::FromBytes(bytes_.substr(0, n));
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << n << ": " << r.status().ToString();
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST_F(GgufBroken, EverySingleByteCorruptionIsSafe) {
  // Each byte replaced by a few values: an error or a valid parse, never a crash.
  int errors = 0;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    for (uint8_t v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string b = bytes_;
      b[i] = static_cast<char>(v);
      auto r = GgufFile::FromBytes(std::move(b));
      if (r.ok()) {
        TouchAll(**r);
      } else {
        ++errors;
        EXPECT_FALSE(r.status().message().empty());
      }
    }
  }
  EXPECT_GT(errors, 100);
}

// ---------------------------------------------------------------------------
// OpenHeader: the header alone, tensor bytes mapped on demand (tensor parallelism)

// Same metadata and tensor infos as Open; every tensor's bytes equal through
// TensorBytes (whole, and a range inside); data null where the read window
// ended (Gemma 3's 262k-token vocabulary makes a header past the first 4 MiB
// window, so the window grows too).
void ExpectHeaderEqualsOpen(const std::string& path, bool expect_unmapped) {
  STET_REQUIRE_FILE(path);
  auto full = GgufFile::Open(path);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  auto head = GgufFile::OpenHeader(path);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  ASSERT_EQ((*head)->metadata().size(), (*full)->metadata().size());
  for (size_t i = 0; i < (*full)->metadata().size(); ++i) {
    EXPECT_EQ((*head)->metadata()[i].first, (*full)->metadata()[i].first);
  }
  ASSERT_EQ((*head)->tensors().size(), (*full)->tensors().size());
  int unmapped = 0;
  for (size_t i = 0; i < (*full)->tensors().size(); ++i) {
    const TensorInfo& a = (*full)->tensors()[i];
    const TensorInfo& b = (*head)->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.dims, b.dims);
    EXPECT_EQ(a.offset, b.offset);
    unmapped += b.data == nullptr;
    auto whole = (*head)->TensorBytes(b, 0, b.size_bytes);
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    ASSERT_EQ(0, std::memcmp(*whole, a.data, a.size_bytes)) << a.name;
    if (a.size_bytes > 5000) {
      auto part = (*head)->TensorBytes(b, 4099, 777);  // not page-aligned
      ASSERT_TRUE(part.ok());
      ASSERT_EQ(0, std::memcmp(*part, a.data + 4099, 777)) << a.name;
    }
  }
  EXPECT_EQ(unmapped > 0, expect_unmapped) << unmapped << " tensors unmapped";
  EXPECT_EQ(*(*head)->GetString("general.architecture"),
            *(*full)->GetString("general.architecture"));
}

TEST(GgufOpenHeader, Gemma3LargeHeaderEqualsOpen) {
  ExpectHeaderEqualsOpen(::stet::testing::ModelCacheDir() + "/gemma-3-270m-q4_k_m.gguf", true);
}

TEST(GgufOpenHeader, SmallFileIsReadWhole) {
  ExpectHeaderEqualsOpen(SharedDir() + "/models/stories260K/stories260K.gguf", false);
}

TEST_F(GgufOpen, OpenHeaderErrorsAreOpens) {
  std::string path = Tmp("header.gguf");
  std::string bad = SmallWriter().Serialize();
  bad.resize(bad.size() - 3);  // the last tensor ends past the file
  std::FILE* fp = std::fopen(path.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  std::fwrite(bad.data(), 1, bad.size(), fp);
  std::fclose(fp);
  auto a = GgufFile::Open(path);
  auto b = GgufFile::OpenHeader(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(a.status().ToString(), b.status().ToString());
  EXPECT_EQ(GgufFile::OpenHeader("/nonexistent/x.gguf").status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace stet::gguf
