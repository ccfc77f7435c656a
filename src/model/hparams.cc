#include "model/hparams.h"

#include <cmath>
#include <string_view>

namespace stet {

namespace {

// Reads an optional unsigned key into an int, checking its range.
Status ReadInt(const gguf::GgufFile& f, const std::string& key, bool required, int* out) {
  const gguf::MetaValue* v = f.Find(key);
  if (!v) {
    if (required) return DataLoss("model metadata lacks '" + key + "'");
    return Status::Ok();
  }
  auto u = v->AsUInt();
  if (!u || *u > (1u << 30)) {
    return DataLoss("model metadata '" + key + "' must be an integer in [0, 2^30]");
  }
  *out = static_cast<int>(*u);
  return Status::Ok();
}

Status ReadDouble(const gguf::GgufFile& f, const std::string& key, double* out) {
  const gguf::MetaValue* v = f.Find(key);
  if (!v) return Status::Ok();
  auto d = v->AsFloat();
  if (!d) return DataLoss("model metadata '" + key + "' must be a number");
  *out = *d;
  return Status::Ok();
}

// {arch}.attention.sliding_window and its layer pattern (a period, or one bool
// per layer), as llama.cpp reads them for gemma3.
Status ReadSlidingWindow(const gguf::GgufFile& f, const std::string& p, HParams* hp) {
  hp->n_swa = hp->arch->default_n_swa;
  STET_RETURN_IF_ERROR(ReadInt(f, p + "attention.sliding_window", false, &hp->n_swa));
  if (hp->n_swa == 0) return Status::Ok();  // no window: full attention everywhere
  hp->swa_layers.assign(hp->n_layer, 0);
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  const gguf::MetaValue* pattern = f.Find(pattern_key);
  if (pattern && pattern->type() == gguf::ValueType::kArray) {
    if (pattern->array_size() != static_cast<uint64_t>(hp->n_layer)) {
      return DataLoss("'" + pattern_key + "' has " + std::to_string(pattern->array_size()) +
                      " entries, expected one per layer (" + std::to_string(hp->n_layer) + ")");
    }
    for (int l = 0; l < hp->n_layer; ++l) hp->swa_layers[l] = pattern->ArrayInt(l) != 0;
  } else {
    int period = hp->arch->swa_pattern;
    STET_RETURN_IF_ERROR(ReadInt(f, pattern_key, false, &period));
    for (int l = 0; l < hp->n_layer; ++l)
      hp->swa_layers[l] = period == 0 || l % period < period - 1;
  }
  if (!hp->arch->swa_own_rope_base) {
    hp->rope_base_swa = hp->rope_base;
    return Status::Ok();
  }
  STET_RETURN_IF_ERROR(ReadDouble(f, p + "rope.freq_base_swa", &hp->rope_base_swa));
  if (!(hp->rope_base_swa > 1.0)) return DataLoss("rope.freq_base_swa must be > 1");
  return Status::Ok();
}

// Gemma 2's soft-capping values (defaults 50 and 30, as llama.cpp); any other
// architecture asking for soft-capping is refused rather than run wrong.
Status ReadSoftcaps(const gguf::GgufFile& f, const std::string& p, HParams* hp) {
  double attn = hp->arch->softcaps ? 50.0 : 0.0, final = hp->arch->softcaps ? 30.0 : 0.0;
  STET_RETURN_IF_ERROR(ReadDouble(f, p + "attn_logit_softcapping", &attn));
  STET_RETURN_IF_ERROR(ReadDouble(f, p + "final_logit_softcapping", &final));
  if (!hp->arch->softcaps && (attn != 0.0 || final != 0.0)) {
    return Unimplemented(
        "attn_logit_softcapping / final_logit_softcapping are not supported for '" +
        std::string(hp->arch->name) + "' (only gemma2)");
  }
  if (!(attn >= 0.0 && attn <= 1e6) || !(final >= 0.0 && final <= 1e6)) {
    return DataLoss("soft-capping values must be in [0, 1e6]");
  }
  hp->attn_softcap = static_cast<float>(attn);
  hp->final_softcap = static_cast<float>(final);
  return Status::Ok();
}

// The largest expert count accepted: every MoE model published has <= 512, and
// the router's per-token work and the model's expert views scale with it.
constexpr int kMaxExperts = 1024;

// {arch}.expert_count, expert_used_count and expert_feed_forward_length.
Status ReadMoe(const gguf::GgufFile& f, const std::string& p, HParams* hp) {
  STET_RETURN_IF_ERROR(ReadInt(f, p + "expert_count", true, &hp->n_expert));
  STET_RETURN_IF_ERROR(ReadInt(f, p + "expert_used_count", true, &hp->n_expert_used));
  STET_RETURN_IF_ERROR(ReadInt(f, p + "expert_feed_forward_length", true, &hp->n_ff_exp));
  if (hp->n_expert < 1 || hp->n_expert > kMaxExperts) {
    return DataLoss("expert_count " + std::to_string(hp->n_expert) + " must be in [1, " +
                    std::to_string(kMaxExperts) + "]");
  }
  if (hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert) {
    return DataLoss("expert_used_count " + std::to_string(hp->n_expert_used) +
                    " must be in [1, expert_count = " + std::to_string(hp->n_expert) + "]");
  }
  if (hp->n_ff_exp <= 0) return DataLoss("expert_feed_forward_length must be positive");
  return Status::Ok();
}

}  // namespace

Result<HParams> ReadHParams(const gguf::GgufFile& f) {
  STET_ASSIGN_OR_RETURN(std::string arch_name, f.GetString("general.architecture"));
  HParams hp;
  hp.arch = FindArch(arch_name);
  if (!hp.arch) {
    return Unimplemented("architecture '" + arch_name +
                         "' is not supported (supported: " + SupportedArchList() + ")");
  }
  const std::string p = arch_name + ".";
  STET_RETURN_IF_ERROR(ReadInt(f, p + "block_count", true, &hp.n_layer));
  STET_RETURN_IF_ERROR(ReadInt(f, p + "embedding_length", true, &hp.n_embd));
  if (hp.arch->moe) {
    // A MoE file's feed_forward_length (a dense width) is not used: every FFN
    // is the experts' width.
    STET_RETURN_IF_ERROR(ReadMoe(f, p, &hp));
    hp.n_ff = hp.n_ff_exp;
  } else {
    STET_RETURN_IF_ERROR(ReadInt(f, p + "feed_forward_length", true, &hp.n_ff));
  }
  STET_RETURN_IF_ERROR(ReadInt(f, p + "attention.head_count", true, &hp.n_head));
  hp.n_head_kv = hp.n_head;
  STET_RETURN_IF_ERROR(ReadInt(f, p + "attention.head_count_kv", false, &hp.n_head_kv));
  hp.n_ctx_train = 2048;
  STET_RETURN_IF_ERROR(ReadInt(f, p + "context_length", false, &hp.n_ctx_train));
  if (hp.n_ctx_train <= 0) {
    return DataLoss("'" + p + "context_length' is " + std::to_string(hp.n_ctx_train) +
                    ": a model's context must hold at least one token");
  }
  if (hp.n_head <= 0 || hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_ff <= 0) {
    return DataLoss(
        "model metadata has a zero block_count, embedding_length, "
        "feed_forward_length or head_count");
  }
  hp.head_dim = hp.n_embd / hp.n_head;
  STET_RETURN_IF_ERROR(ReadInt(f, p + "attention.key_length", false, &hp.head_dim));
  int value_length = hp.head_dim;
  STET_RETURN_IF_ERROR(ReadInt(f, p + "attention.value_length", false, &value_length));
  if (value_length != hp.head_dim) {
    return Unimplemented("attention.value_length != key_length is not supported");
  }
  hp.rot_dim = hp.head_dim;
  STET_RETURN_IF_ERROR(ReadInt(f, p + "rope.dimension_count", false, &hp.rot_dim));
  hp.rope_base = hp.arch->default_rope_base;
  STET_RETURN_IF_ERROR(ReadDouble(f, p + "rope.freq_base", &hp.rope_base));
  double eps = 1e-5;
  STET_RETURN_IF_ERROR(ReadDouble(f, p + "attention.layer_norm_rms_epsilon", &eps));
  hp.rms_eps = static_cast<float>(eps);

  hp.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  if (hp.arch->swa_pattern > 0) {
    STET_RETURN_IF_ERROR(ReadSlidingWindow(f, p, &hp));
    // Gemma 2 and 3 27B scale by the model width per head, not key_length (as llama.cpp).
    const std::string_view name = hp.arch->name;
    if ((name == "gemma3" && hp.n_layer == 62) || (name == "gemma2" && hp.n_layer == 46))
      hp.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head));
  }
  STET_RETURN_IF_ERROR(ReadSoftcaps(f, p, &hp));

  if (const gguf::MetaValue* st = f.Find(p + "rope.scaling.type")) {
    auto type = st->AsString();
    if (!type) return DataLoss("'" + p + "rope.scaling.type' must be a string");
    if (*type == "linear") {
      STET_RETURN_IF_ERROR(ReadDouble(f, p + "rope.scaling.factor", &hp.rope_linear_factor));
      if (!(hp.rope_linear_factor >= 1.0)) return DataLoss("rope.scaling.factor must be >= 1");
    } else if (*type != "none") {
      return Unimplemented("rope scaling type '" + std::string(*type) +
                           "' is not supported (supported: none, linear, llama3 via rope_freqs)");
    }
  }

  if (hp.n_head_kv <= 0 || hp.n_head % hp.n_head_kv != 0) {
    return DataLoss("head_count (" + std::to_string(hp.n_head) +
                    ") must be a positive multiple of head_count_kv (" +
                    std::to_string(hp.n_head_kv) + ")");
  }
  if (hp.head_dim <= 0 || hp.head_dim % 2 != 0 || hp.head_dim > 1024) {
    return DataLoss("head dimension " + std::to_string(hp.head_dim) +
                    " must be even, in [2, 1024]");
  }
  if (hp.rot_dim <= 0 || hp.rot_dim > hp.head_dim || hp.rot_dim % 2 != 0) {
    return DataLoss("rope.dimension_count " + std::to_string(hp.rot_dim) +
                    " must be even and at most the head dimension " + std::to_string(hp.head_dim));
  }
  if (!(hp.rope_base > 1.0) || !std::isfinite(hp.rope_base)) {
    return DataLoss("'" + p + "rope.freq_base' is " + std::to_string(hp.rope_base) +
                    ": it must be finite and > 1");
  }
  if (!(hp.rms_eps > 0.0f) || !std::isfinite(hp.rms_eps)) {
    return DataLoss("'" + p + "attention.layer_norm_rms_epsilon' is " + std::to_string(eps) +
                    ": a norm epsilon must be finite and > 0 (as a float)");
  }
  return hp;
}

}  // namespace stet
