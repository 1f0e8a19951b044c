// JsonFormatLexer: the JSON Schema string formats a constrained reply can
// be held to byte by byte, as RFC 3339 and RFC 4122 write them:
//   date       YYYY-MM-DD, a day that exists (leap years included)
//   time       HH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), hour 00-23, second 00-59
//   date-time  date "T" time
//   uuid       8-4-4-4-12 hexadecimal digits
// It reads a string's body (after the opening quote, the closing quote not
// included); complete() says the body so far is a whole value. A small
// trivially copyable value, like the other lexers (json_lexers.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tc::text {

enum class JsonFormat : uint8_t { None, Date, Time, DateTime, Uuid };

// "date", "time", "date-time", "uuid"; nullopt for any other name.
std::optional<JsonFormat> json_format_from_name(std::string_view name);

class JsonFormatLexer {
 public:
  static constexpr int kMaxFractionDigits = 9;

  explicit JsonFormatLexer(JsonFormat format = JsonFormat::None) : format_(format) {}

  // Reads one byte: false (unchanged) when the value cannot go on with it.
  bool push(uint8_t byte);
  bool complete() const;

 private:
  bool push_date(uint8_t byte);  // pos_ in [0, 10)
  bool push_time(uint8_t byte);  // pos_ from time_start()
  int time_start() const { return format_ == JsonFormat::DateTime ? 11 : 0; }

  JsonFormat format_;
  uint8_t pos_ = 0;        // bytes read
  uint16_t year_ = 0;      // date: the digits read so far, as numbers
  uint8_t month_ = 0;
  uint8_t day_tens_ = 0;
  uint8_t hour_tens_ = 0;
  uint8_t fraction_ = 0;   // time: fraction digits read (0: no '.', or none yet)
  uint8_t offset_pos_ = 0; // time: bytes of the offset read (0: not begun)
  bool in_fraction_ = false;
};

}  // namespace tc::text
