// parse_json_body: a SAX pass (nlohmann's, iterative) that counts nesting
// and stops at the first level too deep, then the DOM parse.
#include "server/request_body.h"

#include <string>

#include "server/openai_schema.h"

namespace tc::server {
namespace {

using nlohmann::json;

// nlohmann's parse error text for a client: "parse error at line L,
// column C: syntax error while parsing value - REASON", without the
// exception's id prefix and the "last read" token (the body's own bytes,
// possibly invalid UTF-8); any byte outside printable ASCII left becomes '?'
// so that the error body is valid JSON.
std::string describe_parse_error(const std::string& what) {
  std::string text = what;
  if (const size_t id_end = text.find("] "); text.rfind("[json.exception.", 0) == 0 && id_end != std::string::npos) {
    text.erase(0, id_end + 2);
  }
  if (const size_t token = text.find("; last read: '"); token != std::string::npos) {
    const size_t expected = text.rfind("'; expected ");
    text.erase(token, expected != std::string::npos && expected > token ? expected + 1 - token : std::string::npos);
  }
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  return text;
}

// Accepts every event and tracks the depth; returns false (stopping the
// parse) on a syntax error, keeping its description, or at the first array
// or object too deep.
struct DepthCheck : nlohmann::json_sax<json> {
  int depth = 0;
  bool too_deep = false;
  std::string syntax_error;

  bool open() {
    if (++depth <= kMaxJsonDepth) return true;
    too_deep = true;
    return false;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override {
    --depth;
    return true;
  }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    syntax_error = describe_parse_error(e.what());
    return false;
  }
};

}  // namespace

ApiError body_too_large_error() {
  return ApiError{413, "invalid_request_error", "request body is larger than the server's limit", "", ""};
}

ParsedBody parse_json_body(std::string_view body, int64_t max_bytes) {
  ParsedBody out;
  if (body.size() > static_cast<size_t>(max_bytes)) {
    out.error = body_too_large_error();
    return out;
  }
  DepthCheck check;
  if (!json::sax_parse(body, &check)) {
    out.error = check.too_deep ? invalid_request("request body nests arrays and objects more than " +
                                                 std::to_string(kMaxJsonDepth) + " levels deep")
                               : invalid_request("request body is not valid JSON: " + check.syntax_error);
    return out;
  }
  out.json = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.json.is_discarded()) out.error = invalid_request("request body is not valid JSON");
  return out;
}

}  // namespace tc::server
