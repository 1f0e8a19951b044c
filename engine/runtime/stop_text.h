// StopTextFilter: the stop-string stage of a text stream. It passes text
// through, holds back any tail that could still begin a stop string, and
// cuts the text exactly before the first stop string that appears, across
// token boundaries or inside one piece. One per sequence; not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tc::runtime {

class StopTextFilter {
 public:
  // `stops`: the stop strings; empty ones are ignored. No stops: push()
  // returns its input unchanged.
  explicit StopTextFilter(std::vector<std::string> stops = {});

  // Appends `piece` and returns the text that became safe to emit: the held
  // text up to the point where no suffix of it could begin a stop string,
  // or, once a stop string is complete, everything before its first
  // occurrence. After a match, returns "" and ignores further input.
  std::string push(std::string_view piece);

  // Whether a stop string was found (the text is cut; the stream is over).
  bool found() const { return found_; }
  // Which stop string matched (index into the constructor's list); -1 if none.
  int found_index() const { return found_index_; }

  // End of the stream: returns what is held back ("" after a match).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::vector<size_t> original_index_;  // stops_[i] came from the constructor's list at this index
  std::string pending_;                 // text not yet emitted, no stop string inside
  bool found_ = false;
  int found_index_ = -1;
};

}  // namespace tc::runtime
