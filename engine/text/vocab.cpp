// read_vocab / write_vocab: the `tokenizer.*` keys as llama.cpp reads and
// writes them, with llama.cpp's defaults for keys a file leaves out.
#include "engine/text/vocab.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/charsmap.h"
#include "engine/text/pre_tokenizer.h"
#include "engine/text/string_index.h"

namespace tc::text {

namespace {

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTokenType = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kBosId = "tokenizer.ggml.bos_token_id";
constexpr const char* kEosId = "tokenizer.ggml.eos_token_id";
constexpr const char* kUnkId = "tokenizer.ggml.unknown_token_id";
constexpr const char* kPadId = "tokenizer.ggml.padding_token_id";
constexpr const char* kEotId = "tokenizer.ggml.eot_token_id";
constexpr const char* kSepId = "tokenizer.ggml.seperator_token_id";  // llama.cpp's spelling
constexpr const char* kMaskId = "tokenizer.ggml.mask_token_id";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSep = "tokenizer.ggml.add_sep_token";
constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr const char* kChatTemplate = "tokenizer.chat_template";
constexpr const char* kLowercase = "tokenizer.ggml.normalizer.lowercase";
constexpr const char* kStripAccents = "tokenizer.ggml.normalizer.strip_accents";
constexpr const char* kRemoveExtraWs = "tokenizer.ggml.remove_extra_whitespaces";
constexpr const char* kCharsmap = "tokenizer.ggml.precompiled_charsmap";

TokenType token_type_from_int(int32_t v) {
  // llama.cpp maps values outside the enum to "undefined".
  return (v >= 0 && v <= static_cast<int32_t>(TokenType::Byte)) ? static_cast<TokenType>(v)
                                                                 : TokenType::Undefined;
}

// Texts of end-of-generation tokens, as llama.cpp's llama-vocab.cpp lists
// them (its EOT/EOG auto-detection), plus SentencePiece's </s>.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "</s>", "<EOT>", "_<EOT>",
    "<|return|>", "<|call|>",  // o200k_harmony (gpt-oss); its <|end|> is not one (vocab_harmony.h)
    "<eos>", "<turn|>", "<|tool_response>",  // Gemma 4
    "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",  // DeepSeek
};

// Whether llama.cpp runs the vocab with its "gemma4" pre-tokenizer: the
// "gemma4" model, or "gpt2" naming it in tokenizer.ggml.pre.
bool uses_gemma4_pre_tokenizer(const Vocab& v) {
  return v.kind == TokenizerKind::Gemma4 ||
         (v.kind == TokenizerKind::Bpe && pre_tokenizer_from_name(v.pre) == PreTokenizer::Gemma4);
}

}  // namespace

std::string_view tokenizer_model_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::Spm:
      return "llama";
    case TokenizerKind::Bpe:
      return "gpt2";
    case TokenizerKind::Gemma4:
      return "gemma4";
    case TokenizerKind::Wpm:
      return "bert";
    case TokenizerKind::Ugm:
      return "t5";
  }
  return "?";
}

bool is_end_of_generation_text(std::string_view text) {
  if (text.empty() || (text[0] != '<' && text[0] != '_')) return false;  // what every marker starts with
  for (const std::string_view marker : kEndOfGenerationTexts) {
    if (text == marker) return true;
  }
  return false;
}

bool Vocab::is_end_of_generation(TokenId id) const {
  if (id < 0 || id >= n_vocab()) return false;
  if (id == eos_id || id == eot_id || fim.ends_generation(id)) return true;
  const auto i = static_cast<size_t>(id);
  if (i >= types.size() || types[i] != TokenType::Control) return false;
  return is_end_of_generation_text(tokens[i]);
}

Vocab read_vocab(const gguf::GgufFile& file) {
  Vocab v;
  if (!file.has(kModel)) throw file.error(kModel, "missing; the file has no tokenizer");
  const std::string model = file.get_string(kModel);
  if (model == "llama") {
    v.kind = TokenizerKind::Spm;
  } else if (model == "gpt2") {
    v.kind = TokenizerKind::Bpe;
  } else if (model == "gemma4") {
    v.kind = TokenizerKind::Gemma4;
  } else if (model == "bert") {
    v.kind = TokenizerKind::Wpm;
  } else if (model == "t5") {
    v.kind = TokenizerKind::Ugm;
  } else {
    throw file.error(kModel, "unsupported tokenizer model '" + model +
                                 "'; supported: \"llama\" (SentencePiece BPE), \"gpt2\" "
                                 "(byte-level BPE), \"gemma4\" (BPE over UTF-8, Gemma 4), "
                                 "\"bert\" (WordPiece), \"t5\" (SentencePiece unigram)");
  }
  v.pre = file.get_string(kPre, "");

  if (!file.has(kTokens)) throw file.error(kTokens, "missing; the tokenizer needs its token list");
  v.tokens = file.get_string_array(kTokens);
  const size_t n = v.tokens.size();
  if (n == 0) throw file.error(kTokens, "is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw file.error(kTokens, "has too many tokens");
  const auto count_msg = [&](size_t got) {
    return "has " + std::to_string(got) + " entries but " + std::string(kTokens) + " has " +
           std::to_string(n);
  };

  if (file.has(kScores)) {
    v.scores = file.get_f32_array(kScores);
    if (v.scores.size() != n) throw file.error(kScores, count_msg(v.scores.size()));
  }
  if (file.has(kTokenType)) {
    const std::vector<int32_t> types = file.get_i32_array(kTokenType);
    if (types.size() != n) throw file.error(kTokenType, count_msg(types.size()));
    v.types.reserve(n);
    for (const int32_t t : types) v.types.push_back(token_type_from_int(t));
  } else {
    v.types.assign(n, TokenType::Normal);
  }

  // Empty texts are renamed and duplicates rejected, as llama.cpp does.
  for (size_t i = 0; i < n; ++i) {
    if (v.tokens[i].empty()) v.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";
  }
  if (const auto [first, second] = detail::StringIndex(v.tokens).first_duplicate(); first >= 0) {
    throw file.error(kTokens, "duplicate token '" + v.tokens[static_cast<size_t>(second)] + "' at ids " +
                                  std::to_string(first) + " and " + std::to_string(second));
  }

  if (v.kind == TokenizerKind::Bpe) {
    if (!file.has(kMerges)) throw file.error(kMerges, "missing; a \"gpt2\" tokenizer needs its merges");
    v.merges = file.get_string_array(kMerges);
    const auto pre = pre_tokenizer_from_name(v.pre);
    if (!pre) {
      if (const std::string_view why = pre_tokenizer_refusal(v.pre); !why.empty()) {
        throw file.error(kPre, "unsupported pre-tokenizer '" + v.pre + "': it " + std::string(why));
      }
      throw file.error(kPre, "unsupported pre-tokenizer '" + v.pre + "'; supported: " +
                                 std::string(supported_pre_tokenizer_names()));
    }
    // llama.cpp's "gpt2" defaults: BOS = EOS = 11 (no BOS for "glm4" and
    // "chatglm-bpe"), no unknown token, no space prefix, add_bos for the
    // pre-tokenizers that set it (Llama-3, Tekken, Chameleon, Gemma 4).
    v.bos_id = pre_tokenizer_has_default_bos(*pre) ? 11 : -1;
    v.eos_id = 11;
    v.unk_id = -1;
    v.add_bos = pre_tokenizer_default_add_bos(*pre);
    v.add_space_prefix = false;
  } else if (v.kind == TokenizerKind::Gemma4) {
    // llama.cpp reads "gemma4" with the "gemma4" pre-tokenizer whatever
    // tokenizer.ggml.pre says, and no default special ids.
    if (!file.has(kMerges)) throw file.error(kMerges, "missing; a \"gemma4\" tokenizer needs its merges");
    v.merges = file.get_string_array(kMerges);
    v.bos_id = -1;
    v.eos_id = -1;
    v.unk_id = -1;
    v.add_bos = true;
    v.add_space_prefix = false;
  } else if (v.kind == TokenizerKind::Wpm) {
    // llama.cpp's "bert" defaults: [CLS] 101 as BOS, [UNK] 100, [SEP] 102,
    // [PAD] 0, [MASK] 103, no EOS; [CLS] ... [SEP] added.
    v.bos_id = 101;
    v.eos_id = -1;
    v.unk_id = 100;
    v.sep_id = 102;
    v.pad_id = 0;
    v.mask_id = 103;
    v.add_bos = true;
    v.add_sep = true;
    v.add_space_prefix = false;
  } else if (v.kind == TokenizerKind::Ugm) {
    // llama.cpp's "t5" defaults: </s> 1 as EOS, <unk> 2, <pad> 0, no BOS;
    // EOS added, no space prefix unless the file says so.
    v.bos_id = -1;
    v.eos_id = 1;
    v.unk_id = 2;
    v.pad_id = 0;
    v.add_bos = false;
    v.add_eos = true;
    v.add_space_prefix = false;
    if (const gguf::Value* map = file.find(kCharsmap)) {
      // llama.cpp takes an array of u8 or i8 and refuses one under 4 bytes.
      const gguf::Value::Array* items = map->as_array();
      if (!items || (map->array_type() != gguf::ValueType::UINT8 && map->array_type() != gguf::ValueType::INT8)) {
        throw file.error(kCharsmap, "is not an array of u8 or i8");
      }
      if (items->size() < 4) throw file.error(kCharsmap, "is too small for its 4-byte header");
      v.precompiled_charsmap.reserve(items->size());
      for (const gguf::Value& b : *items) {
        int64_t byte = 0;
        b.to_i64(byte);
        v.precompiled_charsmap.push_back(static_cast<char>(static_cast<uint8_t>(byte)));
      }
      try {
        PrecompiledCharsmap check(v.precompiled_charsmap);
      } catch (const std::invalid_argument& e) {
        throw file.error(kCharsmap, e.what());
      }
    }
  } else {
    if (file.has(kMerges)) v.merges = file.get_string_array(kMerges);
    // llama.cpp's "llama" defaults.
    v.bos_id = 1;
    v.eos_id = 2;
    v.unk_id = 0;
    v.add_bos = true;
    v.add_space_prefix = true;
  }
  v.eot_id = -1;
  if (v.kind != TokenizerKind::Ugm) v.add_eos = false;

  const auto read_id = [&](const char* key, TokenId& id) {
    if (!file.has(key)) {
      if (id >= static_cast<TokenId>(n)) id = -1;  // a default outside the vocab is disabled
      return;
    }
    const uint64_t value = file.get_u64(key);
    if (value >= n) {
      throw file.error(key, "token id " + std::to_string(value) + " is out of range [0, " +
                                std::to_string(n) + ")");
    }
    id = static_cast<TokenId>(value);
  };
  read_id(kBosId, v.bos_id);
  read_id(kEosId, v.eos_id);
  read_id(kUnkId, v.unk_id);
  read_id(kPadId, v.pad_id);
  read_id(kEotId, v.eot_id);
  read_id(kSepId, v.sep_id);
  read_id(kMaskId, v.mask_id);

  v.add_bos = file.get_bool(kAddBos, v.add_bos);
  v.add_eos = file.get_bool(kAddEos, v.add_eos);
  v.add_sep = file.get_bool(kAddSep, v.add_sep);
  // llama.cpp reads the BertNormalizer keys for every kind; only WPM uses them.
  v.normalizer_lowercase = file.get_bool(kLowercase, false);
  v.normalizer_strip_accents = file.get_bool(kStripAccents, v.normalizer_lowercase);
  v.add_space_prefix = file.get_bool(kAddSpacePrefix, v.add_space_prefix);
  v.remove_extra_whitespaces = file.get_bool(kRemoveExtraWs, false);
  if (uses_gemma4_pre_tokenizer(v)) {
    // llama.cpp adds BOS for Gemma 4 even when the file says not to.
    v.add_bos = true;
    if (v.bos_id < 0) throw file.error(kBosId, "missing; Gemma 4's tokenizer always adds BOS");
  }
  if (v.add_bos && v.bos_id < 0) {
    throw file.error(kAddBos, std::string("is true but ") + kBosId + " is not set");
  }
  if (v.add_eos && v.eos_id < 0) {
    throw file.error(kAddEos, std::string("is true but ") + kEosId + " is not set");
  }
  if (file.has(kChatTemplate)) v.chat_template = file.get_string(kChatTemplate);
  v.fim = read_fim_keys(file, n);
  return v;
}

void write_vocab(const Vocab& vocab, gguf::GgufWriter& writer) {
  using gguf::Value;
  writer.set(kModel, Value(std::string(tokenizer_model_name(vocab.kind))));
  if (!vocab.pre.empty()) writer.set(kPre, Value(vocab.pre));
  writer.set(kTokens, Value::string_array(vocab.tokens));
  if (!vocab.scores.empty()) writer.set(kScores, Value::f32_array(vocab.scores));
  if (!vocab.types.empty()) {
    std::vector<int32_t> types;
    types.reserve(vocab.types.size());
    for (const TokenType t : vocab.types) types.push_back(static_cast<int32_t>(t));
    writer.set(kTokenType, Value::i32_array(types));
  }
  if (vocab.kind == TokenizerKind::Bpe || vocab.kind == TokenizerKind::Gemma4 || !vocab.merges.empty()) {
    writer.set(kMerges, Value::string_array(vocab.merges));
  }
  const auto write_id = [&](const char* key, TokenId id) {
    if (id >= 0) writer.set(key, Value(static_cast<uint32_t>(id)));
  };
  write_id(kBosId, vocab.bos_id);
  write_id(kEosId, vocab.eos_id);
  write_id(kUnkId, vocab.unk_id);
  write_id(kPadId, vocab.pad_id);
  write_id(kEotId, vocab.eot_id);
  write_id(kSepId, vocab.sep_id);
  write_id(kMaskId, vocab.mask_id);
  writer.set(kAddBos, Value(vocab.add_bos));
  writer.set(kAddEos, Value(vocab.add_eos));
  if (vocab.kind == TokenizerKind::Wpm || vocab.add_sep) writer.set(kAddSep, Value(vocab.add_sep));
  if (vocab.kind == TokenizerKind::Wpm) {
    writer.set(kLowercase, Value(vocab.normalizer_lowercase));
    writer.set(kStripAccents, Value(vocab.normalizer_strip_accents));
  }
  writer.set(kAddSpacePrefix, Value(vocab.add_space_prefix));
  if (vocab.kind == TokenizerKind::Ugm || vocab.remove_extra_whitespaces) {
    writer.set(kRemoveExtraWs, Value(vocab.remove_extra_whitespaces));
  }
  if (!vocab.precompiled_charsmap.empty()) {
    Value::Array bytes;
    bytes.reserve(vocab.precompiled_charsmap.size());
    for (const char c : vocab.precompiled_charsmap) bytes.emplace_back(static_cast<uint8_t>(c));
    writer.set(kCharsmap, Value::array(gguf::ValueType::UINT8, std::move(bytes)));
  }
  if (vocab.chat_template) writer.set(kChatTemplate, Value(*vocab.chat_template));
  write_fim_keys(vocab.fim, writer);
}

}  // namespace tc::text
