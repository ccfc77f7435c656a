// Writes the seed corpus fuzz/corpus/gguf/: a few tiny valid GGUF files made
// with GgufWriter, covering every value type, several tensor types, a custom
// alignment and version 2. Usage: gguf_fuzz_seeds OUT_DIR
#include <cstdio>
#include <cstring>
#include <string>

#include "format/gguf.h"

using stet::DType;
using stet::gguf::GgufWriter;
using stet::gguf::ValueType;

namespace {

std::string Fill(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 37 + seed * 11) & 0xff);
  return s;
}

bool Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
  return ok && bytes.size() < 4096;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  bool ok = true;

  ok &= Write(dir, "minimal.gguf", GgufWriter().Serialize());

  GgufWriter all;
  all.SetU8("t.u8", 7);
  all.SetI8("t.i8", -7);
  all.SetU16("t.u16", 700);
  all.SetI16("t.i16", -700);
  all.SetU32("t.u32", 70000);
  all.SetI32("t.i32", -70000);
  all.SetU64("t.u64", 1ull << 40);
  all.SetI64("t.i64", -(1ll << 40));
  all.SetF32("t.f32", 0.5f);
  all.SetF64("t.f64", -0.25);
  all.SetBool("t.bool", true);
  all.SetString("t.string", "hello");
  all.SetStringArray("a.string", {"a", "", "bc"});
  all.SetI32Array("a.i32", {1, -2});
  all.SetF32Array("a.f32", {1.5f});
  all.SetRawArray("a.u8", ValueType::kU8, 2, "\x01\x02");
  all.SetRawArray("a.bool", ValueType::kBool, 1, std::string(1, '\1'));
  all.SetRawArray("a.u64", ValueType::kU64, 1, std::string(8, '\3'));
  all.SetRawArray("a.f64", ValueType::kF64, 1, std::string(8, '\0'));
  ok &= Write(dir, "all_types.gguf", all.Serialize());

  GgufWriter t;
  t.SetString("general.architecture", "llama");
  t.AddTensor("f32", DType::kF32, {4, 2}, Fill(32, 1));
  t.AddTensor("f16", DType::kF16, {3}, Fill(6, 2));
  t.AddTensor("q8_0", DType::kQ8_0, {32}, Fill(34, 3));
  t.AddTensor("q4_0", DType::kQ4_0, {32, 1, 1, 2}, Fill(36, 4));
  t.AddTensor("q4_k", DType::kQ4_K, {256}, Fill(144, 5));
  ok &= Write(dir, "tensors.gguf", t.Serialize());

  GgufWriter a;
  a.set_alignment(64);
  a.SetU32("x", 1);
  a.AddTensor("w", DType::kBF16, {5}, Fill(10, 6));
  a.AddTensor("v", DType::kF32, {1}, Fill(4, 7));
  std::string v2 = a.Serialize();
  v2[4] = 2;  // version 2 has the same layout
  ok &= Write(dir, "align64_v2.gguf", v2);

  GgufWriter m;
  m.SetString("general.architecture", "llama");
  m.SetString("general.name", "tiny");
  m.SetU32("llama.block_count", 1);
  m.SetU32("llama.embedding_length", 8);
  m.SetU32("llama.attention.head_count", 2);
  m.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  m.SetString("tokenizer.ggml.model", "llama");
  m.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b"});
  m.SetF32Array("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
  m.SetI32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  m.SetU32("tokenizer.ggml.bos_token_id", 1);
  m.AddTensor("token_embd.weight", DType::kF16, {8, 5}, Fill(80, 8));
  m.AddTensor("blk.0.attn_q.weight", DType::kQ8_0, {32, 2}, Fill(68, 9));
  m.AddTensor("output_norm.weight", DType::kF32, {8}, Fill(32, 10));
  ok &= Write(dir, "llama_tiny.gguf", m.Serialize());

  return ok ? 0 : 1;
}
