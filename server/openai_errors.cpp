// Serialising OpenAI error bodies (invalid UTF-8 in messages replaced).
#include "server/openai_errors.h"

#include <nlohmann/json.hpp>

namespace tc::server {

std::string error_body(const ApiError& e) {
  nlohmann::json j = {{"error",
                       {{"message", e.message},
                        {"type", e.type},
                        {"param", e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param)},
                        {"code", e.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.code)}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tc::server
