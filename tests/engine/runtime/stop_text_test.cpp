// StopTextFilter: holdback of possible stop-string prefixes, exact cuts
// across pieces and inside one, several stops, overlapping prefixes, UTF-8.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/runtime/stop_text.h"

using tc::runtime::StopTextFilter;

namespace {

struct Run {
  std::vector<std::string> outputs;  // what each push returned
  std::string text;                  // everything emitted, flush included
  bool found = false;
};

Run feed(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopTextFilter f(std::move(stops));
  Run r;
  for (const auto& p : pieces) {
    r.outputs.push_back(f.push(p));
    r.text += r.outputs.back();
  }
  r.found = f.found();
  r.text += f.flush();
  return r;
}

}  // namespace

TEST_CASE("stop text: no stops passes text through", "[engine][stop]") {
  const Run r = feed({}, {"Hello", ", ", "world"});
  CHECK(r.outputs == std::vector<std::string>{"Hello", ", ", "world"});
  CHECK(r.text == "Hello, world");
  CHECK_FALSE(r.found);
}

TEST_CASE("stop text: a stop across piece boundaries is cut exactly", "[engine][stop]") {
  const Run r = feed({"END"}, {"abc E", "N", "D tail", " more"});
  CHECK(r.found);
  CHECK(r.text == "abc ");
  // "E" and then "EN" were held back, never emitted.
  CHECK(r.outputs[0] == "abc ");
  CHECK(r.outputs[1].empty());
  CHECK(r.outputs[2].empty());
  CHECK(r.outputs[3].empty());
}

TEST_CASE("stop text: a stop starting in the middle of a piece", "[engine][stop]") {
  SECTION("inside one piece") {
    const Run r = feed({"</answer>"}, {"the answer is 42</answer> and more"});
    CHECK(r.found);
    CHECK(r.text == "the answer is 42");
  }
  SECTION("starting mid-piece, ending in the next") {
    const Run r = feed({"STOP"}, {"xyzST", "OPabc"});
    CHECK(r.found);
    CHECK(r.outputs[0] == "xyz");
    CHECK(r.text == "xyz");
  }
}

TEST_CASE("stop text: overlapping prefixes", "[engine][stop]") {
  SECTION("aab in aaab, one character at a time") {
    const Run r = feed({"aab"}, {"a", "a", "a", "b", "c"});
    CHECK(r.found);
    CHECK(r.text == "a");
  }
  SECTION("aab in aaab, one piece") {
    const Run r = feed({"aab"}, {"aaab"});
    CHECK(r.found);
    CHECK(r.text == "a");
  }
  SECTION("a false start is released") {
    const Run r = feed({"abc"}, {"ab", "ab", "x"});
    CHECK_FALSE(r.found);
    CHECK(r.outputs[0].empty());
    CHECK(r.outputs[1] == "ab");
    CHECK(r.outputs[2] == "abx");
    CHECK(r.text == "ababx");
  }
}

TEST_CASE("stop text: several stops, the earliest complete match wins", "[engine][stop]") {
  SECTION("the earlier occurrence") {
    const Run r = feed({"world", "lo"}, {"hello world"});
    CHECK(r.found);
    CHECK(r.text == "hel");
  }
  SECTION("found_index names the stop") {
    StopTextFilter f({"xx", "", "yy"});
    CHECK(f.push("a y") == "a ");
    CHECK(f.push("y b") == "");
    CHECK(f.found());
    CHECK(f.found_index() == 2);
  }
  SECTION("a longer stop's prefix does not hide a shorter complete one") {
    const Run r = feed({"abcd", "c"}, {"ab", "c", "d"});
    CHECK(r.found);
    CHECK(r.text == "ab");
  }
  SECTION("holdback covers the longest possible prefix of any stop") {
    StopTextFilter f({"xyz", "yzw"});
    CHECK(f.push("axy") == "a");
    CHECK(f.push("z") == "");
    CHECK(f.found());
  }
}

TEST_CASE("stop text: a stop at the very start", "[engine][stop]") {
  const Run r = feed({"<|stop|>"}, {"<|st", "op|>", "rest"});
  CHECK(r.found);
  CHECK(r.text.empty());
  CHECK(r.outputs == std::vector<std::string>{"", "", ""});
}

TEST_CASE("stop text: held-back text is released at the end", "[engine][stop]") {
  StopTextFilter f({"\n\nUser:"});
  CHECK(f.push("Hi there") == "Hi there");
  CHECK(f.push("\n\nUs") == "");
  CHECK_FALSE(f.found());
  CHECK(f.flush() == "\n\nUs");
  CHECK(f.flush().empty());
}

TEST_CASE("stop text: multi-byte UTF-8", "[engine][stop]") {
  SECTION("a multi-byte stop across pieces") {
    // "π≈3" with stop "≈" (E2 89 88).
    const Run r = feed({"\xE2\x89\x88"}, {"\xCF\x80", "\xE2\x89\x88", "3"});
    CHECK(r.found);
    CHECK(r.text == "\xCF\x80");
  }
  SECTION("a stop sharing a lead byte with the text does not split characters") {
    // Text "€€" (E2 82 AC twice), stop "≈x": no match, whole characters out.
    const Run r = feed({"\xE2\x89\x88x"}, {"\xE2\x82\xAC", "\xE2\x82\xAC"});
    CHECK_FALSE(r.found);
    CHECK(r.outputs[0] == "\xE2\x82\xAC");
    CHECK(r.text == "\xE2\x82\xAC\xE2\x82\xAC");
  }
  SECTION("emoji and CJK around a stop") {
    const Run r = feed({"\xE7\xB5\x82"}, {"\xF0\x9F\x98\x80 \xE4\xBD\xA0", "\xE7\xB5\x82\xE4\xBA\x86"});
    CHECK(r.found);
    CHECK(r.text == "\xF0\x9F\x98\x80 \xE4\xBD\xA0");
  }
}

TEST_CASE("stop text: emitted text concatenated equals the text cut at the stop", "[engine][stop]") {
  const std::string full = "one two three four five six";
  const std::vector<std::string> stops = {"four", "thr x", "e f"};
  const size_t cut = full.find("e f");  // "three four": "e f" ends first, at "thre|e f|our"
  for (size_t step = 1; step <= 5; ++step) {
    INFO("piece size " << step);
    std::vector<std::string> pieces;
    for (size_t i = 0; i < full.size(); i += step) pieces.push_back(full.substr(i, step));
    const Run r = feed(stops, pieces);
    CHECK(r.found);
    CHECK(r.text == full.substr(0, cut));
  }
}
