// ModelRegistry's view of the files: the models folder's scan (NAME.gguf,
// or a split model's NAME-00001-of-0000N.gguf and its other shards; its
// NAME.toml, NAME.stats.gguf and .generated.gpuidx sidecars; each entry's
// fingerprint of sizes and mtimes; vision projectors, mmproj*.gguf, are no
// models: one alone beside one model is that model's --mmproj) and, with
// one --model, the check that its file changed.
#include "server/model_registry.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "config/serve_config.h"
#include "engine/gguf/gguf_split.h"
#include "server/model_registry_entry.h"

namespace tc::server {
namespace {

namespace fs = std::filesystem;

// A vision model's projector (llama.cpp's mmproj files, downloaded beside
// the model): no language model, but the model's --mmproj.
bool is_projector_file(const fs::path& p) {
  std::string lower = p.filename().string();
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.starts_with("mmproj") && p.extension() == ".gguf";
}

bool is_model_file(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name.empty() || name.front() == '.') return false;
  if (p.extension() != ".gguf" || is_projector_file(p)) return false;
  // `thermocline profile` writes NAME.stats.gguf beside the model: a sidecar, not a model.
  return !name.ends_with(".stats.gguf");
}

}  // namespace

int64_t mtime_ns(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

ModelFiles model_files(const fs::path& p) {
  ModelFiles out;
  out.name = p.stem().string();
  out.base = p.parent_path() / out.name;
  const auto split = gguf::parse_split_name(p);
  if (!split) {
    out.files = {p};
  } else if (split->no == 1) {
    for (int i = 1; i <= split->count; ++i) out.files.push_back(gguf::split_shard_path(split->prefix, i, split->count));
    // Named without "-00001-of-0000N", unless a plain file has that name.
    std::error_code ec;
    if (!fs::exists(split->prefix.string() + ".gguf", ec)) {
      out.name = split->prefix.filename().string();
      out.base = split->prefix;
    }
  }
  for (const fs::path& file : out.files) {
    std::error_code ec;
    const bool there = fs::exists(file, ec);
    const uint64_t bytes = there ? fs::file_size(file, ec) : 0;
    out.bytes += ec ? 0 : bytes;
    if (!out.fingerprint.empty()) out.fingerprint += ":";
    out.fingerprint += std::to_string(there ? static_cast<int64_t>(bytes) : -1) + ":" +
                       std::to_string(there ? mtime_ns(file) : -1);
  }
  return out;
}

std::string model_fingerprint(const fs::path& p, bool in_folder) {
  const ModelFiles files = model_files(p);
  std::string out = files.fingerprint;
  if (!in_folder) return out;
  std::error_code ec;
  for (const fs::path& side : {fs::path(files.base.string() + ".toml"), fs::path(files.base.string() + ".stats.gguf"),
                              fs::path(p.string() + ".generated.gpuidx")}) {
    out += ":" + std::to_string(fs::exists(side, ec) ? mtime_ns(side) : -1);
  }
  return out;
}

void ModelRegistry::scan_folder() {
  struct Found {
    std::string name;
    fs::path path;
    fs::path base;  // sidecars: base + ".toml", base + ".stats.gguf"
    std::string fingerprint;
    uint64_t bytes = 0;
    int64_t mtime = 0;
  };
  std::vector<Found> found;
  std::error_code ec;
  const fs::path& dir = options_.serve.models_dir;
  // Subfolders too, as LM Studio (publisher/repo/FILE.gguf) and the Hugging
  // Face cache (models--org--repo/snapshots/REV/FILE.gguf) keep them; a
  // model there is named by its path from the folder, "publisher/repo/FILE".
  constexpr int kMaxDepth = 3;
  // Per folder: its projectors and how many models it holds. A folder of
  // one model and one projector (a vision model as downloaded) pairs them.
  std::map<fs::path, std::vector<fs::path>> projectors;
  std::map<fs::path, int> models_in;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    std::error_code fec;
    if (it->is_directory(fec)) {
      const std::string name = p.filename().string();
      if (it.depth() >= kMaxDepth || name.empty() || name.front() == '.' || it->is_symlink(fec)) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (is_projector_file(p) && fs::is_regular_file(p, fec)) projectors[p.parent_path()].push_back(p);
    if (!is_model_file(p) || !fs::is_regular_file(p, fec)) continue;
    ++models_in[p.parent_path()];
    ModelFiles files = model_files(p);
    if (files.files.empty()) continue;  // a split model's later shard
    Found f;
    f.path = p;
    f.name = it.depth() == 0 ? std::move(files.name) : files.base.lexically_relative(dir).generic_string();
    f.base = std::move(files.base);
    f.bytes = files.bytes;
    f.mtime = mtime_ns(p);
    f.fingerprint = model_fingerprint(p, true);
    found.push_back(std::move(f));
  }
  std::set<std::string> present;
  for (const auto& f : found) present.insert(f.name);

  // Entries to (re)configure: new ones and changed ones; their NAME.toml is read outside the lock.
  std::vector<const Found*> changed;
  {
    std::lock_guard lock(mutex_);
    for (const auto& f : found) {
      const Entry* e = find(f.name);
      if (e == nullptr || e->fingerprint != f.fingerprint || e->removed) changed.push_back(&f);
    }
  }
  struct Configured {
    config::ServeOptions options;
    std::vector<std::string> aliases;
    std::string error;
  };
  std::vector<Configured> configured;
  for (const Found* f : changed) {
    Configured c{options_.serve, {}, {}};
    const fs::path toml = f->base.string() + ".toml";
    if (fs::exists(toml, ec)) {
      try {
        auto side = config::read_model_sidecar(toml, c.options);
        c.options = std::move(side.options);
        c.aliases = std::move(side.aliases);
      } catch (const std::exception& ex) {
        c.error = ex.what();
      }
    }
    c.options.model = f->path;
    const auto pair = projectors.find(f->path.parent_path());
    if (c.options.mmproj.empty() && pair != projectors.end() && pair->second.size() == 1 &&
        models_in[f->path.parent_path()] == 1) {
      c.options.mmproj = pair->second.front();
      c.options.mmproj_beside = true;
    }
    const fs::path stats = f->base.string() + ".stats.gguf";
    if (c.options.stats.empty() && fs::exists(stats, ec)) c.options.stats = stats;
    const fs::path gpuidx = f->path.string() + ".generated.gpuidx";
    if (c.options.placement.empty() && c.options.device != "cpu" && c.options.offload_layers < 0 &&
        fs::exists(gpuidx, ec)) {
      c.options.placement = gpuidx;
    }
    configured.push_back(std::move(c));
  }

  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < changed.size(); ++i) {
      const Found& f = *changed[i];
      Entry* e = find(f.name);
      if (e == nullptr) {
        auto fresh = std::make_unique<Entry>();
        fresh->name = f.name;
        e = fresh.get();
        entries_[f.name] = std::move(fresh);
        spdlog::info("model {}: found {}", f.name, f.path.string());
      } else if (e->state == ModelState::Failed) {
        spdlog::info("model {}: its files changed; the next request loads it again", f.name);
        e->state = ModelState::Unloaded;
        e->failure.clear();
      } else if (e->state == ModelState::Loaded || e->state == ModelState::Loading) {
        if (!e->removed) {
          spdlog::info("model {}: its files changed; it reloads once idle", f.name);
          e->stale = true;
        }
      }
      e->removed = false;
      e->path = f.path;
      e->fingerprint = f.fingerprint;
      e->file_bytes = f.bytes;
      e->file_mtime_ns = f.mtime;
      e->options = std::move(configured[i].options);
      e->aliases = std::move(configured[i].aliases);
      e->config_error = std::move(configured[i].error);
    }
    for (auto& [name, e] : entries_) {
      if (!present.count(name) && !e->removed) {
        spdlog::info("model {}: its file was removed", name);
        e->removed = true;
      }
    }
  }
  changed_.notify_all();
}

void ModelRegistry::recheck_model_file() {
  // One model: a failed file that changed is tried again.
  std::lock_guard lock(mutex_);
  for (auto& [name, e] : entries_) {
    if (e->path.empty()) continue;
    const std::string fp = model_fingerprint(e->path, false);
    if (fp != e->fingerprint) {
      e->fingerprint = fp;
      if (e->state == ModelState::Failed) {
        spdlog::info("model {}: its file changed; the next request loads it again", name);
        e->state = ModelState::Unloaded;
        e->failure.clear();
      }
    }
  }
}

}  // namespace tc::server
