// chat_prompt_variables: what a chat template sees of a request.
#include "server/chat_prompt_variables.h"

namespace tc::server {

nlohmann::json chat_prompt_variables(const ChatRequest& request, const std::string& bos_token,
                                     const std::string& eos_token) {
  nlohmann::json vars = {{"messages", request.messages},
                         {"add_generation_prompt", request.add_generation_prompt},
                         {"bos_token", bos_token},
                         {"eos_token", eos_token}};
  if (!request.tools.is_null()) vars["tools"] = request.tools;
  return vars;
}

}  // namespace tc::server
