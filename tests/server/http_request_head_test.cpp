// The HTTP layer's request head reader and chunked decoder (server/http/):
// what they accept, what they refuse with which status, and that input
// arriving a byte at a time parses as it does whole.
#include <catch2/catch.hpp>

#include <string>

#include "server/http/chunked_body.h"
#include "server/http/request_head.h"

using namespace tc::server::http;

namespace {

HeadParse parse(const std::string& text, HttpLimits limits = {}) {
  size_t scan_from = 0;
  return parse_request_head(text, limits, scan_from);
}

int error_status(const std::string& text, HttpLimits limits = {}) {
  const HeadParse p = parse(text, limits);
  return p.status == HeadStatus::Error ? p.error.status : 0;
}

}  // namespace

TEST_CASE("a request head is parsed once complete, also a byte at a time", "[server][http]") {
  const std::string text =
      "\r\nPOST /v1/completions?x=1 HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Content-Length: 12\r\nX-Spaced:   padded value \t\r\n\r\nBODY";
  const HeadParse whole = parse(text);
  REQUIRE(whole.status == HeadStatus::Complete);
  const RequestHead& h = whole.head;
  CHECK(h.method == "POST");
  CHECK(h.target == "/v1/completions?x=1");
  CHECK(h.path() == "/v1/completions");
  CHECK(h.minor_version == 1);
  CHECK(h.framing == BodyFraming::Length);
  CHECK(h.content_length == 12);
  CHECK(h.keep_alive);
  CHECK(h.field("x-spaced") == "padded value");
  CHECK(h.head_bytes == text.size() - 4);

  size_t scan_from = 0;
  for (size_t n = 1; n < h.head_bytes; ++n) {
    INFO(n);
    REQUIRE(parse_request_head(std::string_view(text).substr(0, n), HttpLimits{}, scan_from).status ==
            HeadStatus::NeedMore);
  }
  const HeadParse last = parse_request_head(text, HttpLimits{}, scan_from);
  REQUIRE(last.status == HeadStatus::Complete);
  CHECK(last.head.head_bytes == h.head_bytes);
  CHECK(last.head.fields == h.fields);
}

TEST_CASE("body framing: Content-Length, chunked, and everything ambiguous refused", "[server][http]") {
  const std::string req = "POST / HTTP/1.1\r\nHost: t\r\n";
  CHECK(parse(req + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n").head.content_length == 5);
  CHECK(parse(req + "Content-Length: 7, 7\r\n\r\n").head.content_length == 7);
  CHECK(parse(req + "Content-Length: 0\r\n\r\n").head.framing == BodyFraming::None);
  CHECK(parse(req + "\r\n").head.framing == BodyFraming::None);
  CHECK(parse(req + "Transfer-Encoding: Chunked\r\n\r\n").head.framing == BodyFraming::Chunked);
  CHECK(parse(req + "Content-Length: 999999999999999999\r\n\r\n").head.content_length == 999999999999999999ull);

  CHECK(error_status(req + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: 5, 6\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: -1\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: +5\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: 0x10\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: 1 2\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length:\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: 9999999999999999999\r\n\r\n") == 400);
  CHECK(error_status(req + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n") == 400);
  CHECK(error_status(req + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n") == 400);
  CHECK(error_status(req + "Transfer-Encoding: chunked, chunked\r\n\r\n") == 400);
  CHECK(error_status(req + "Transfer-Encoding: chunked, gzip\r\n\r\n") == 400);
  CHECK(error_status(req + "Transfer-Encoding: gzip, chunked\r\n\r\n") == 501);
  CHECK(error_status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n") == 400);
}

TEST_CASE("request lines and fields: strict syntax, statuses per fault", "[server][http]") {
  CHECK(parse("GET / HTTP/1.1\nHost: t\n\n").status == HeadStatus::Complete);  // bare LF line ends
  CHECK(parse("GET http://t/health?a=b HTTP/1.1\r\nHost: t\r\n\r\n").head.target == "/health?a=b");
  CHECK(parse("GET http://t HTTP/1.1\r\nHost: t\r\n\r\n").head.target == "/");
  CHECK(parse("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n").status == HeadStatus::Complete);
  CHECK(parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive == false);
  CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  CHECK_FALSE(parse("GET / HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, Close\r\n\r\n").head.keep_alive);
  CHECK(parse("GET / HTTP/1.1\r\nHost: t\r\nExpect: 100-Continue\r\n\r\n").head.expect_continue);

  CHECK(error_status("GET /\r\n\r\n") == 400);  // HTTP/0.9
  CHECK(error_status("GET /\r\n") == 400);      // known from the request line alone
  // Garbage is refused as it arrives, before any line end: a TLS hello, a long "method".
  CHECK(error_status(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)) == 400);
  CHECK(error_status(std::string(40, 'A')) == 400);
  CHECK(parse("GET").status == HeadStatus::NeedMore);
  CHECK(parse("GET /x\r").status == HeadStatus::NeedMore);
  CHECK(error_status("GET  / HTTP/1.1\r\nHost: t\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1 \r\nHost: t\r\n\r\n") == 400);
  CHECK(error_status("GET / http/1.1\r\nHost: t\r\n\r\n") == 400);
  CHECK(error_status("GET relative HTTP/1.1\r\nHost: t\r\n\r\n") == 400);
  CHECK(error_status("GET /\x7f HTTP/1.1\r\nHost: t\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/2.0\r\nHost: t\r\n\r\n") == 505);
  CHECK(error_status("TRACE / HTTP/1.1\r\nHost: t\r\n\r\n") == 501);
  CHECK(error_status("G@T / HTTP/1.1\r\nHost: t\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\n\r\n") == 400);  // no Host
  CHECK(error_status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n") == 400);  // folded
  CHECK(error_status("GET / HTTP/1.1\r\nHost : t\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\r\nNoColon\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\r\nX: a\x01z\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\rX: b\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\r\nExpect: later\r\n\r\n") == 417);
}

TEST_CASE("head size limits: 414 for the request line, 431 for the headers", "[server][http]") {
  HttpLimits limits;
  limits.max_header_bytes = 4096;
  limits.max_headers = 10;
  // Known as soon as the bytes arrive, before the head ends.
  CHECK(error_status("GET /" + std::string(5000, 'a'), limits) == 414);
  CHECK(error_status("GET /" + std::string(3000, 'a') + " HTTP/1.1\r\nHost: t\r\nX: " + std::string(2000, 'b'),
                     limits) == 431);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\r\nX: " + std::string(5000, 'b'), limits) == 431);
  std::string eleven = "GET / HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 10; ++i) eleven.append("X").append(std::to_string(i)).append(": v\r\n");  // (GCC 12 -Wrestrict: not "X" + string)
  CHECK(error_status(eleven + "\r\n", limits) == 431);
  // A header line over 8 KiB whatever the total limit.
  limits.max_header_bytes = 65536;
  CHECK(error_status("GET / HTTP/1.1\r\nHost: t\r\nX: " + std::string(9000, 'b') + "\r\n\r\n", limits) == 431);
  CHECK(error_status("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", limits) == 414);
}

TEST_CASE("the canonical head is what httplib reads: CRLF, Content-Length, no Transfer-Encoding", "[server][http]") {
  const HeadParse p = parse(
      "POST /tokenize HTTP/1.1\nHost: t\nTransfer-Encoding: chunked\nExpect: 100-continue\nX-A:  b \n\n");
  REQUIRE(p.status == HeadStatus::Complete);
  CHECK(canonical_head(p.head, 42) == "POST /tokenize HTTP/1.1\r\nHost: t\r\nX-A: b\r\nContent-Length: 42\r\n\r\n");
  const HeadParse g = parse("GET /health HTTP/1.0\r\n\r\n");
  CHECK(canonical_head(g.head, 0) == "GET /health HTTP/1.0\r\n\r\n");
}

TEST_CASE("chunked bodies decode strictly, also a byte at a time", "[server][http]") {
  const std::string body = "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
  std::string whole;
  size_t consumed = 0;
  ChunkedDecoder d(1 << 20, 4096);
  REQUIRE(d.feed(body, consumed, whole) == ChunkedDecoder::Status::Done);
  CHECK(whole == "hello world");
  CHECK(body.substr(consumed) == "NEXT");  // a pipelined request's bytes stay

  ChunkedDecoder bytewise(1 << 20, 4096);
  std::string out, pending;
  ChunkedDecoder::Status status = ChunkedDecoder::Status::NeedMore;
  for (const char c : body) {
    pending += c;
    size_t used = 0;
    status = bytewise.feed(pending, used, out);
    pending.erase(0, used);
    if (status != ChunkedDecoder::Status::NeedMore) break;
  }
  CHECK(status == ChunkedDecoder::Status::Done);
  CHECK(out == "hello world");

  const auto fails = [](const std::string& text, uint64_t max_body = 1 << 20) {
    ChunkedDecoder dec(max_body, 4096);
    std::string o;
    size_t used = 0;
    return dec.feed(text, used, o) == ChunkedDecoder::Status::Error ? dec.error().status : 0;
  };
  CHECK(fails("zz\r\nabc\r\n0\r\n\r\n") == 400);
  CHECK(fails("-1\r\nabc\r\n0\r\n\r\n") == 400);
  CHECK(fails("\r\nabc\r\n0\r\n\r\n") == 400);
  CHECK(fails("1FFFFFFFFFFFFFFFF\r\n") == 400);
  CHECK(fails("3\r\nabcdef\r\n") == 400);
  CHECK(fails("3 x\r\nabc\r\n") == 400);
  CHECK(fails("3;" + std::string(2000, 'e') + "\r\n") == 400);
  CHECK(fails("0\r\n bad trailer\r\n\r\n") == 400);
  CHECK(fails("400\r\n", 1000) == 413);
  CHECK(fails("200\r\n" + std::string(512, 'a') + "\r\n200\r\n", 1000) == 413);
  CHECK(fails("0000000000000000000003\r\nabc\r\n0\r\n\r\n") == 0);  // leading zeros are not digits that count
}
