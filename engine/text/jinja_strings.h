// Python str operations over UTF-8 for the chat template engine's filters
// and methods. Case mapping covers ASCII only (chat templates apply it to
// role names and keywords).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tc::text::jinja {

enum class StripSide { Left, Right, Both };
// str.strip/lstrip/rstrip: whitespace, or any of `chars` when given.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);
// str.title(): upper after a non-letter, lower after a letter.
std::string py_title(std::string_view s);
// jinja2's |title: words start after whitespace, '-', '(', '{', '[', '<'.
std::string jinja_title(std::string_view s);

// str.replace(old, new, count); count < 0: all.
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, long long count);
// str.split(sep, maxsplit); no sep: runs of whitespace, empty parts dropped.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, long long maxsplit);
// str.rsplit(sep, maxsplit)
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, long long maxsplit);
// str.splitlines() for \n, \r\n and \r.
std::vector<std::string> py_splitlines(std::string_view s);

// markupsafe.escape: & < > " ' as entities.
std::string html_escape(std::string_view s);

}  // namespace tc::text::jinja
