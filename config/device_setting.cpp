// parse_device_setting / device_setting_string.
#include "config/device_setting.h"

#include <charconv>
#include <stdexcept>

namespace tc::config {

DeviceSetting parse_device_setting(std::string_view text) {
  constexpr int kMaxIndex = 63;
  const std::string accepted = "expected cpu, cuda or cuda:N (N a CUDA device index, 0.." +
                               std::to_string(kMaxIndex) + ")";
  if (text == "cpu") return {false, 0};
  if (text == "cuda") return {true, 0};
  constexpr std::string_view kCuda = "cuda:";
  if (!text.starts_with(kCuda)) {
    throw std::invalid_argument("'" + std::string(text) + "' is not a device; " + accepted);
  }
  const std::string_view number = text.substr(kCuda.size());
  int index = -1;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), index);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || index < 0 ||
      index > kMaxIndex) {
    throw std::invalid_argument("'" + std::string(text) + "' names no CUDA device index; " + accepted);
  }
  return {true, index};
}

std::string device_setting_string(const DeviceSetting& setting) {
  if (!setting.cuda) return "cpu";
  return setting.index == 0 ? "cuda" : "cuda:" + std::to_string(setting.index);
}

}  // namespace tc::config
