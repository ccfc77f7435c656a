// VocabFromTokenizerJson: a Hugging Face tokenizer.json (+ tokenizer_config.json)
// -> VocabData, the way llama.cpp's converter builds a GGUF from them: vocab and
// added tokens by id (holes become unused "[PADn]"), special added tokens as
// control, others user-defined, the pre-tokenizer identified by its Split regex.
// nlohmann::json throws; every exception is caught here and becomes a Status.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace stet {
namespace {

using nlohmann::json;

// llama.cpp's converter treats these added tokens as control even when the
// file does not mark them special.
bool LooksSpecial(std::string_view t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.substr(0, open.size()) == open &&
           t.substr(t.size() - close.size()) == close;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wrapped("<unused", ">");
}

// A special token named in tokenizer_config.json: a string, {"content": ...} or null.
std::string TokenContent(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return "";
}

Result<std::string> IdentifyPreTokenizer(const json& pre) {
  if (pre.is_null()) {
    return Unimplemented("tokenizer.json has no pre_tokenizer; stet supports byte-level BPE only");
  }
  std::vector<const json*> steps;
  if (pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array()) {
    for (const json& p : pre["pretokenizers"]) steps.push_back(&p);
  } else {
    steps.push_back(&pre);
  }
  const json* byte_level = nullptr;
  std::vector<std::string> split_regexes;
  bool individual_digits = false;
  for (const json* p : steps) {
    const std::string type = p->value("type", "");
    if (type == "ByteLevel") {
      byte_level = p;
    } else if (type == "Split") {
      const json& pattern = p->value("pattern", json::object());
      if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
        split_regexes.push_back(pattern["Regex"].get<std::string>());
      } else {
        return Unimplemented("tokenizer.json: Split pre-tokenizer without a Regex pattern");
      }
    } else if (type == "Digits") {
      individual_digits = p->value("individual_digits", false);
    } else {
      return Unimplemented("tokenizer.json: pre-tokenizer '" + type +
                           "' is not supported (byte-level BPE: ByteLevel, Split, Digits)");
    }
  }
  if (byte_level == nullptr) {
    return Unimplemented(
        "tokenizer.json: no ByteLevel pre-tokenizer (a SentencePiece-style BPE?); load this "
        "vocabulary from a GGUF instead");
  }
  if (split_regexes.size() > 1) {
    return Unimplemented("tokenizer.json: more than one Split pre-tokenizer");
  }
  if (split_regexes.size() == 1) {
    for (const char* name : {"llama-bpe", "qwen2", "qwen35", "gpt-4o"}) {
      const tok::PreTokenizerInfo* info = tok::FindPreTokenizer(name);
      if (info != nullptr && info->hf_split_regex != nullptr &&
          split_regexes[0] == info->hf_split_regex) {
        return std::string(name);
      }
    }
    return Unimplemented(
        "tokenizer.json: the Split regex " + split_regexes[0] +
        " matches no known pre-tokenizer; supported: " + tok::SupportedPreTokenizers());
  }
  if (!byte_level->value("use_regex", true)) {
    return Unimplemented("tokenizer.json: ByteLevel with use_regex=false and no Split regex");
  }
  return std::string(individual_digits ? "smollm" : "gpt-2");
}

Result<VocabData> Parse(std::string_view tokenizer_json, std::string_view config_json) {
  const json j = json::parse(tokenizer_json);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    return InvalidArgument("tokenizer.json: expected an object with a \"model\" object");
  }
  const json& model = j["model"];
  const std::string type = model.value("type", "BPE");
  if (type != "BPE") {
    return Unimplemented("tokenizer.json: model type '" + type + "' is not supported (BPE only)");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return InvalidArgument("tokenizer.json: model.vocab must be an object of token -> id");
  }

  VocabData v;
  v.model = "gpt2";
  STET_ASSIGN_OR_RETURN(v.pre, IdentifyPreTokenizer(j.value("pre_tokenizer", json())));

  // Ids first, to size the table: vocab entries and added tokens share it.
  std::vector<std::pair<int64_t, std::string>> entries;
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) {
      return InvalidArgument("tokenizer.json: model.vocab['" + text + "'] is not an integer id");
    }
    entries.emplace_back(id.get<int64_t>(), text);
  }
  struct Added {
    int64_t id;
    std::string content;
    bool special, lstrip, rstrip;
  };
  std::vector<Added> added;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const json& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string()) {
        return InvalidArgument(
            "tokenizer.json: added_tokens entries need an integer id and a "
            "string content");
      }
      added.push_back({a["id"].get<int64_t>(), a["content"].get<std::string>(),
                       a.value("special", false), a.value("lstrip", false),
                       a.value("rstrip", false)});
    }
  }
  int64_t max_id = -1;
  for (const auto& e : entries) max_id = std::max(max_id, e.first);
  for (const auto& a : added) max_id = std::max(max_id, a.id);
  for (const auto& e : entries) {
    if (e.first < 0)
      return InvalidArgument("tokenizer.json: negative token id for '" + e.second + "'");
  }
  for (const auto& a : added) {
    if (a.id < 0) return InvalidArgument("tokenizer.json: negative id for '" + a.content + "'");
  }
  if (max_id < 0) return InvalidArgument("tokenizer.json: the vocabulary is empty");
  if (max_id >= INT32_MAX) return OutOfRange("tokenizer.json: token id " + std::to_string(max_id));
  const auto n = static_cast<size_t>(max_id + 1);
  if (n > 4 * (entries.size() + added.size()) + 1024) {
    return InvalidArgument("tokenizer.json: token id " + std::to_string(max_id) +
                           " is far beyond the " + std::to_string(entries.size() + added.size()) +
                           " tokens listed");
  }
  v.tokens.assign(n, std::string());
  v.token_types.assign(n, TokenType::kUnused);
  v.lstrip.assign(n, 0);
  v.rstrip.assign(n, 0);
  for (auto& [id, text] : entries) {
    v.tokens[id] = std::move(text);
    v.token_types[id] = TokenType::kNormal;
  }
  for (const Added& a : added) {
    v.tokens[a.id] = a.content;
    v.token_types[a.id] =
        a.special || LooksSpecial(a.content) ? TokenType::kControl : TokenType::kUserDefined;
    v.lstrip[a.id] = a.lstrip;
    v.rstrip[a.id] = a.rstrip;
  }
  for (size_t i = 0; i < n; ++i) {
    if (v.tokens[i].empty()) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  }

  if (model.contains("merges") && model["merges"].is_array()) {
    const json& merges = model["merges"];
    v.merges.reserve(merges.size());
    for (const json& m : merges) {
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
        if (sp == std::string::npos) {
          v.merges.emplace_back();
        } else {
          v.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        }
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        v.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return InvalidArgument("tokenizer.json: a merge must be \"a b\" or [\"a\", \"b\"]");
      }
    }
  } else {
    return InvalidArgument("tokenizer.json: model.merges must be an array");
  }

  ApplyVocabDefaults(&v);
  if (model.contains("ignore_merges") && model["ignore_merges"].is_boolean()) {
    v.ignore_merges = model["ignore_merges"].get<bool>();
  }

  std::unordered_map<std::string_view, int32_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(v.tokens[i], static_cast<int32_t>(i));
  auto id_of = [&](const std::string& text) -> int32_t {
    auto it = index.find(text);
    return it == index.end() ? -1 : it->second;
  };
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    v.unk_id = id_of(model["unk_token"].get<std::string>());
  }

  // The post-processor template says which specials wrap a single sequence.
  std::vector<const json*> processors;
  if (j.contains("post_processor") && j["post_processor"].is_object()) {
    const json& pp = j["post_processor"];
    if (pp.value("type", "") == "Sequence" && pp.contains("processors") &&
        pp["processors"].is_array()) {
      for (const json& p : pp["processors"]) processors.push_back(&p);
    } else {
      processors.push_back(&pp);
    }
  }
  for (const json* p : processors) {
    if (p->value("type", "") != "TemplateProcessing" || !p->contains("single") ||
        !(*p)["single"].is_array() || (*p)["single"].empty()) {
      continue;
    }
    const json& single = (*p)["single"];
    auto special_id = [&](const json& item) -> int32_t {
      if (!item.is_object() || !item.contains("SpecialToken")) return -1;
      return id_of(item["SpecialToken"].value("id", ""));
    };
    const int32_t first = special_id(single.front());
    const int32_t last = single.size() > 1 ? special_id(single.back()) : -1;
    v.add_bos = first >= 0;
    if (first >= 0) v.bos_id = first;
    v.add_eos = last >= 0;
    if (last >= 0) v.eos_id = last;
  }

  if (!config_json.empty()) {
    const json c = json::parse(config_json);
    if (!c.is_object()) return InvalidArgument("tokenizer_config.json: expected an object");
    auto read_id = [&](const char* key, int32_t* out) -> Status {
      if (!c.contains(key)) return Status::Ok();
      const std::string content = TokenContent(c[key]);
      if (content.empty()) return Status::Ok();
      const int32_t id = id_of(content);
      if (id < 0) {
        return InvalidArgument(std::string("tokenizer_config.json: ") + key + " '" + content +
                               "' is not in the vocabulary");
      }
      *out = id;
      return Status::Ok();
    };
    STET_RETURN_IF_ERROR(read_id("bos_token", &v.bos_id));
    STET_RETURN_IF_ERROR(read_id("eos_token", &v.eos_id));
    STET_RETURN_IF_ERROR(read_id("unk_token", &v.unk_id));
    STET_RETURN_IF_ERROR(read_id("pad_token", &v.pad_id));
    auto read_bool = [&](const char* key, bool* out) {
      if (c.contains(key) && c[key].is_boolean()) *out = c[key].get<bool>();
    };
    read_bool("add_bos_token", &v.add_bos);
    read_bool("add_eos_token", &v.add_eos);
    read_bool("clean_up_tokenization_spaces", &v.clean_spaces);
  }
  return v;
}

}  // namespace

Result<VocabData> VocabFromTokenizerJson(std::string_view tokenizer_json,
                                         std::string_view tokenizer_config_json) {
  try {
    return Parse(tokenizer_json, tokenizer_config_json);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("tokenizer.json / tokenizer_config.json: ") + e.what());
  }
}

}  // namespace stet
