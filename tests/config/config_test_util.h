// Helpers of the config tests: parse a `serve` command line with CLI11 and
// resolve it against a fake environment.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "config/serve_config.h"

namespace tc::test {

// A fake environment for resolve_serve_options.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  config::GetEnv fn() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

// Parses `args` (after the program name) as the flags of a serve command.
inline std::shared_ptr<config::ServeFlags> parse_serve_flags(std::vector<std::string> args) {
  CLI::App app{"test"};
  auto* serve = app.add_subcommand("serve", "serve");
  auto flags = config::add_serve_flags(*serve);
  args.insert(args.begin(), "serve");
  std::reverse(args.begin(), args.end());  // CLI11's vector parse takes argv reversed
  app.parse(args);
  return flags;
}

// Resolves a command line and an environment.
inline config::ServeOptions resolve(const std::vector<std::string>& args, const FakeEnv& env = {}) {
  return config::resolve_serve_options(*parse_serve_flags(args), env.fn());
}

// The ConfigError a resolve throws; fails the test when none is thrown.
struct CaughtError {
  std::string key, source, message;
};
inline CaughtError resolve_error(const std::vector<std::string>& args, const FakeEnv& env = {}) {
  try {
    resolve(args, env);
  } catch (const config::ConfigError& e) {
    return {e.key(), e.source(), e.what()};
  }
  return {"<no error>", "", ""};
}

}  // namespace tc::test
