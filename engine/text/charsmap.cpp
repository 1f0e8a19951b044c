// PrecompiledCharsmap: parsing, validation and the longest-match walk (see
// the header for the layout).
#include "engine/text/charsmap.h"

#include <stdexcept>
#include <unordered_set>

namespace tc::text {

namespace {

uint32_t read_le32(const std::string& bytes, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(bytes[at])) |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 1])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 2])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 3])) << 24;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string bytes) : bytes_(std::move(bytes)) {
  if (bytes_.empty()) return;
  if (bytes_.size() < sizeof(uint32_t)) {
    throw std::invalid_argument("precompiled charsmap of " + std::to_string(bytes_.size()) +
                                " bytes is too small for its 4-byte header");
  }
  const uint32_t xcda_bytes = read_le32(bytes_, 0);
  // llama.cpp refuses a map whose double array leaves no byte for the strings.
  if (static_cast<size_t>(xcda_bytes) + sizeof(uint32_t) >= bytes_.size()) {
    throw std::invalid_argument("precompiled charsmap's double array (" + std::to_string(xcda_bytes) +
                                " bytes) does not fit in its " + std::to_string(bytes_.size()) + " bytes");
  }
  units_.resize(xcda_bytes / sizeof(uint32_t));
  for (size_t i = 0; i < units_.size(); ++i) units_[i] = read_le32(bytes_, sizeof(uint32_t) + i * sizeof(uint32_t));
  replacements_at_ = sizeof(uint32_t) + xcda_bytes;
  validate();
}

// Visits every node an input can reach (depth first, each position once) and
// checks what llama.cpp's walk would read there: the 255 units a byte can
// lead to, and the value and replacement string of each node with a value.
void PrecompiledCharsmap::validate() const {
  if (units_.empty()) return;
  const size_t n = units_.size();
  const size_t n_replacement_bytes = bytes_.size() - replacements_at_;
  std::unordered_set<uint32_t> seen_positions;
  std::unordered_set<uint32_t> checked_values;
  std::vector<uint32_t> stack = {offset(0)};
  seen_positions.insert(stack.back());
  while (!stack.empty()) {
    const uint32_t p = stack.back();
    stack.pop_back();
    for (uint32_t c = 1; c < 256; ++c) {
      const uint32_t q = p ^ c;
      if (q >= n) {
        throw std::invalid_argument("precompiled charsmap: byte " + std::to_string(c) + " leads from position " +
                                    std::to_string(p) + " outside its " + std::to_string(n) + " units");
      }
      if (label(q) != c) continue;
      const uint32_t next = q ^ offset(q);
      if (has_value(q)) {
        if (next >= n) {
          throw std::invalid_argument("precompiled charsmap: the value of unit " + std::to_string(q) +
                                      " lies outside the array");
        }
        const uint32_t v = value(next);
        if (checked_values.insert(v).second) {
          if (v >= n_replacement_bytes) {
            throw std::invalid_argument("precompiled charsmap: replacement offset " + std::to_string(v) +
                                        " is past its " + std::to_string(n_replacement_bytes) +
                                        " bytes of strings");
          }
          if (bytes_.find('\0', replacements_at_ + v) == std::string::npos) {
            throw std::invalid_argument("precompiled charsmap: the replacement at offset " + std::to_string(v) +
                                        " is not NUL-terminated");
          }
        }
      }
      if (seen_positions.insert(next).second) stack.push_back(next);
    }
  }
}

PrecompiledCharsmap::Match PrecompiledCharsmap::longest_match(std::string_view text) const {
  Match m;
  if (units_.empty()) return m;
  uint32_t p = offset(0);
  uint32_t best_value = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c == 0) break;
    const uint32_t q = p ^ c;
    if (label(q) != c) break;  // q is in bounds: validate() saw every reachable p
    const bool leaf = has_value(q);
    p = q ^ offset(q);
    if (leaf) {
      m.length = i + 1;
      best_value = value(p);
    }
  }
  if (m.length > 0) {
    const char* s = bytes_.data() + replacements_at_ + best_value;
    m.replacement = std::string_view(s);  // NUL-terminated inside bytes_ (validate)
  }
  return m;
}

}  // namespace tc::text
