// JsonFormatLexer: date, time, date-time and uuid byte by byte (see
// json_formats.h).
#include "engine/text/json_formats.h"

namespace tc::text {
namespace {

constexpr uint8_t kOffsetDone = 100;  // offset_pos_ once the offset (Z or +HH:MM) is whole

bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
bool is_hex(uint8_t b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

int days_in_month(int year, int month) {
  if (month == 2) return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28;
  return (month == 4 || month == 6 || month == 9 || month == 11) ? 30 : 31;
}

// An hour's two digits (00-23): the first in [0, 2], the second up to 3 after a 2.
bool hour_digit(uint8_t byte, int index, uint8_t tens) {
  if (!is_digit(byte)) return false;
  if (index == 0) return byte <= '2';
  return tens < 2 || byte <= '3';
}

}  // namespace

std::optional<JsonFormat> json_format_from_name(std::string_view name) {
  if (name == "date") return JsonFormat::Date;
  if (name == "time") return JsonFormat::Time;
  if (name == "date-time") return JsonFormat::DateTime;
  if (name == "uuid") return JsonFormat::Uuid;
  return std::nullopt;
}

bool JsonFormatLexer::push_date(uint8_t byte) {
  const int d = byte - '0';
  switch (pos_) {
    case 0: case 1: case 2: case 3:
      if (!is_digit(byte)) return false;
      year_ = static_cast<uint16_t>(year_ * 10 + d);
      return true;
    case 4: case 7:
      return byte == '-';
    case 5:
      if (byte != '0' && byte != '1') return false;
      month_ = static_cast<uint8_t>(d * 10);
      return true;
    case 6:
      if (!is_digit(byte) || (month_ == 0 && d == 0) || (month_ == 10 && d > 2)) return false;
      month_ = static_cast<uint8_t>(month_ + d);
      return true;
    case 8:
      if (!is_digit(byte) || d > days_in_month(year_, month_) / 10) return false;
      day_tens_ = static_cast<uint8_t>(d);
      return true;
    case 9: {
      if (!is_digit(byte)) return false;
      const int day = day_tens_ * 10 + d;
      return day >= 1 && day <= days_in_month(year_, month_);
    }
    default:
      return false;
  }
}

bool JsonFormatLexer::push_time(uint8_t byte) {
  const int t = pos_ - time_start();
  switch (t) {
    case 0: case 1:
      if (!hour_digit(byte, t, hour_tens_)) return false;
      if (t == 0) hour_tens_ = static_cast<uint8_t>(byte - '0');
      return true;
    case 2: case 5:
      return byte == ':';
    case 3: case 6:
      return byte >= '0' && byte <= '5';
    case 4: case 7:
      return is_digit(byte);
    default:
      break;
  }
  // After the seconds: a fraction, then the offset.
  if (offset_pos_ == kOffsetDone) return false;
  if (offset_pos_ > 0) {
    // +HH:MM after the sign (offset_pos_ bytes read, the sign first).
    bool ok = false;
    switch (offset_pos_) {
      case 1: case 2:
        ok = hour_digit(byte, offset_pos_ - 1, hour_tens_);
        if (ok && offset_pos_ == 1) hour_tens_ = static_cast<uint8_t>(byte - '0');
        break;
      case 3: ok = byte == ':'; break;
      case 4: ok = byte >= '0' && byte <= '5'; break;
      case 5: ok = is_digit(byte); break;
      default: break;
    }
    if (!ok) return false;
    offset_pos_ = offset_pos_ == 5 ? kOffsetDone : static_cast<uint8_t>(offset_pos_ + 1);
    return true;
  }
  if (in_fraction_ && is_digit(byte)) {
    if (fraction_ >= kMaxFractionDigits) return false;
    ++fraction_;
    return true;
  }
  if (in_fraction_ && fraction_ == 0) return false;  // a '.' needs a digit
  if (!in_fraction_ && byte == '.') {
    in_fraction_ = true;
    return true;
  }
  if (byte == 'Z') {
    offset_pos_ = kOffsetDone;
    return true;
  }
  if (byte == '+' || byte == '-') {
    offset_pos_ = 1;
    return true;
  }
  return false;
}

bool JsonFormatLexer::push(uint8_t byte) {
  const JsonFormatLexer saved = *this;
  bool ok = false;
  switch (format_) {
    case JsonFormat::None:
      return false;
    case JsonFormat::Date:
      ok = push_date(byte);
      break;
    case JsonFormat::Time:
      ok = push_time(byte);
      break;
    case JsonFormat::DateTime:
      ok = pos_ < 10 ? push_date(byte) : pos_ == 10 ? byte == 'T' : push_time(byte);
      break;
    case JsonFormat::Uuid:
      ok = pos_ < 36 && ((pos_ == 8 || pos_ == 13 || pos_ == 18 || pos_ == 23) ? byte == '-' : is_hex(byte));
      break;
  }
  if (!ok) {
    *this = saved;
    return false;
  }
  ++pos_;
  return true;
}

bool JsonFormatLexer::complete() const {
  switch (format_) {
    case JsonFormat::None: return false;
    case JsonFormat::Date: return pos_ == 10;
    case JsonFormat::Time:
    case JsonFormat::DateTime: return offset_pos_ == kOffsetDone;
    case JsonFormat::Uuid: return pos_ == 36;
  }
  return false;
}

}  // namespace tc::text
