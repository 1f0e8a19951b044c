// Compiling a JSON Schema into SchemaNodes (see json_schema.h).
#include "engine/text/json_schema.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include "engine/text/regex_to_gbnf.h"

namespace tc::text {
namespace {

using json = nlohmann::ordered_json;

// Keywords that constrain in ways the sampler cannot enforce.
constexpr const char* kUnsupported[] = {
    "multipleOf", "not",
    "if", "then", "else", "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas",
    "dependencies", "prefixItems", "contains", "minContains", "maxContains", "uniqueItems", "minProperties",
    "maxProperties", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"};

// Keywords that only describe, allowed beside $ref and anyOf.
constexpr const char* kAnnotations[] = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                        "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "$anchor"};

using ByteSet = std::bitset<256>;

class Compiler {
 public:
  explicit Compiler(const json& document) : document_(document) {}

  std::shared_ptr<const JsonSchema> run() {
    out_.root = compile(document_, "", 0);
    for (size_t i = 0; i < out_.nodes.size(); ++i) first_bytes(static_cast<int>(i));
    const ByteSet root = first_bytes(out_.root);
    ByteSet containers;
    containers.set('{');
    containers.set('[');
    if ((root & ~containers).any()) throw SchemaError("the schema's root must be an object or an array");
    return std::make_shared<const JsonSchema>(std::move(out_));
  }

 private:
  [[noreturn]] static void fail(const std::string& what, const std::string& path) {
    throw SchemaError(what + " at " + (path.empty() ? "the root" : path));
  }

  int add(SchemaNode node, const std::string& path) {
    if (out_.nodes.size() >= JsonSchema::kMaxNodes) fail("the schema is too large", path);
    out_.nodes.push_back(std::move(node));
    paths_.push_back(path);
    return static_cast<int>(out_.nodes.size()) - 1;
  }

  static SchemaNode literals(std::vector<std::string> texts) {
    SchemaNode n;
    n.kind = SchemaNode::Kind::Literals;
    std::sort(texts.begin(), texts.end());
    texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
    n.literals = std::move(texts);
    return n;
  }

  static SchemaNode choice(std::vector<int> alternatives) {
    SchemaNode n;
    n.kind = SchemaNode::Kind::Choice;
    n.alternatives = std::move(alternatives);
    return n;
  }

  static SchemaNode of_kind(SchemaNode::Kind kind) {
    SchemaNode n;
    n.kind = kind;
    return n;
  }

  // Any JSON value (the schema `true` or `{}`): one node set, made once.
  int any() {
    if (any_ >= 0) return any_;
    any_ = add(choice({}), "(any value)");
    SchemaNode object = of_kind(SchemaNode::Kind::Object);
    object.additional = any_;
    SchemaNode array = of_kind(SchemaNode::Kind::Array);
    array.items = any_;
    const std::vector<int> alts = {add(std::move(object), "(any value)"), add(std::move(array), "(any value)"),
                                   add(of_kind(SchemaNode::Kind::String), "(any value)"),
                                   add(of_kind(SchemaNode::Kind::Number), "(any value)"),
                                   add(literals({"true", "false", "null"}), "(any value)")};
    out_.nodes[static_cast<size_t>(any_)].alternatives = alts;
    return any_;
  }

  static uint32_t count(const json& s, const char* key, uint32_t fallback, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 1000000) {
      fail(std::string("'") + key + "' must be an integer in [0, 1000000]", path);
    }
    return static_cast<uint32_t>(it->get<uint64_t>());
  }

  // minimum, maximum and their exclusive forms (a number, or draft 4's
  // boolean beside minimum / maximum); an integer's rounded inward.
  static NumberBounds bounds(const json& s, bool integer, const std::string& path) {
    NumberBounds b;
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      auto it = s.find(key);
      const bool draft4 = it != s.end() && it->is_boolean() && key[0] == 'e';
      if (it != s.end() && !it->is_number() && !draft4) fail(std::string("'") + key + "' must be a number", path);
    }
    auto number = [&](const char* key) -> std::optional<double> {
      auto it = s.find(key);
      if (it == s.end() || !it->is_number()) return std::nullopt;
      return it->get<double>();
    };
    if (auto v = number("minimum")) b.minimum = *v;
    if (auto v = number("maximum")) b.maximum = *v;
    if (auto v = number("exclusiveMinimum"); v && *v >= b.minimum) {
      b.minimum = *v;
      b.exclusive_minimum = true;
    }
    if (auto v = number("exclusiveMaximum"); v && *v <= b.maximum) {
      b.maximum = *v;
      b.exclusive_maximum = true;
    }
    for (auto [key, flag] : {std::pair{"exclusiveMinimum", &b.exclusive_minimum},
                             std::pair{"exclusiveMaximum", &b.exclusive_maximum}}) {
      if (auto it = s.find(key); it != s.end() && it->is_boolean() && it->get<bool>()) *flag = true;
    }
    if (integer) {
      if (std::isfinite(b.minimum)) {
        b.minimum = b.exclusive_minimum ? std::floor(b.minimum) + 1.0 : std::ceil(b.minimum);
      }
      if (std::isfinite(b.maximum)) {
        b.maximum = b.exclusive_maximum ? std::ceil(b.maximum) - 1.0 : std::floor(b.maximum);
      }
      b.exclusive_minimum = b.exclusive_maximum = false;
    }
    if (b.minimum > b.maximum || (b.minimum == b.maximum && (b.exclusive_minimum || b.exclusive_maximum))) {
      fail("the bounds leave no number ('minimum' above 'maximum')", path);
    }
    return b;
  }

  static bool only_annotations_beside(const json& s, const char* keyword) {
    return std::all_of(s.items().begin(), s.items().end(), [&](const auto& item) {
      return item.key() == keyword ||
             std::any_of(std::begin(kAnnotations), std::end(kAnnotations),
                         [&](const char* a) { return item.key() == a; });
    });
  }

  int compile(const json& s, const std::string& path, int depth) {
    if (depth > 64) fail("the schema nests too deep", path);
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("the schema 'false' (nothing matches)", path);
      return any();
    }
    if (!s.is_object()) fail("a schema must be an object or a boolean", path);
    for (const char* k : kUnsupported) {
      if (s.contains(k)) fail(std::string("'") + k + "' is not supported", path);
    }
    // allOf of one schema (as Pydantic 1 and zod-to-json-schema write a
    // referenced model with a description) is that schema; more than one
    // would have to be merged, which is not supported.
    if (auto all = s.find("allOf"); all != s.end()) {
      if (!all->is_array() || all->size() != 1) fail("'allOf' of more than one schema is not supported", path);
      if (!only_annotations_beside(s, "allOf")) fail("'allOf' beside other constraints is not supported", path);
      return compile((*all)[0], path + "/allOf/0", depth + 1);
    }
    if (auto ref = s.find("$ref"); ref != s.end()) {
      if (!only_annotations_beside(s, "$ref")) fail("'$ref' beside other constraints is not supported", path);
      return reference(*ref, path, depth);
    }
    if (auto c = s.find("const"); c != s.end()) return add(literals({c->dump()}), path);
    if (auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array() || e->empty()) fail("'enum' must be a non-empty array", path);
      std::vector<std::string> texts;
      for (const auto& v : *e) texts.push_back(v.dump());
      return add(literals(std::move(texts)), path);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      auto it = s.find(key);
      if (it == s.end()) continue;
      if (!it->is_array() || it->empty()) fail(std::string("'") + key + "' must be a non-empty array", path);
      if (!only_annotations_beside(s, key)) {
        fail(std::string("'") + key + "' beside other constraints is not supported", path);
      }
      std::vector<int> alts;
      for (size_t i = 0; i < it->size(); ++i) {
        alts.push_back(compile((*it)[i], path + "/" + key + "/" + std::to_string(i), depth + 1));
      }
      return add(choice(std::move(alts)), path);
    }
    std::vector<std::string> types;
    if (auto t = s.find("type"); t != s.end()) {
      if (t->is_string()) {
        types.push_back(t->get<std::string>());
      } else if (t->is_array() && !t->empty() &&
                 std::all_of(t->begin(), t->end(), [](const json& x) { return x.is_string(); })) {
        for (const auto& x : *t) types.push_back(x.get<std::string>());
      } else {
        fail("'type' must be a string or a non-empty array of strings", path);
      }
    } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
      types = {"object"};
    } else if (s.contains("items")) {
      types = {"array"};
    } else {
      return any();
    }
    const auto nullable = s.find("nullable");
    if (nullable != s.end() && !nullable->is_boolean()) fail("'nullable' must be true or false", path);
    if (nullable != s.end() && nullable->get<bool>() && std::find(types.begin(), types.end(), "null") == types.end()) {
      types.push_back("null");
    }
    std::vector<int> nodes;
    for (const auto& type : types) nodes.push_back(typed(s, type, path, depth));
    return nodes.size() == 1 ? nodes[0] : add(choice(std::move(nodes)), path);
  }

  int typed(const json& s, const std::string& type, const std::string& path, int depth) {
    if (type == "object") return object(s, path, depth);
    if (type == "array") {
      SchemaNode n = of_kind(SchemaNode::Kind::Array);
      if (auto items = s.find("items"); items != s.end()) {
        if (items->is_array()) fail("'items' as an array (tuple form) is not supported", path);
        n.items = compile(*items, path + "/items", depth + 1);
      } else {
        n.items = any();
      }
      n.min_items = count(s, "minItems", 0, path);
      n.max_items = count(s, "maxItems", n.max_items, path);
      if (n.min_items > n.max_items) fail("'minItems' is above 'maxItems'", path);
      return add(std::move(n), path);
    }
    if (type == "string") {
      SchemaNode n = of_kind(SchemaNode::Kind::String);
      n.min_length = count(s, "minLength", 0, path);
      n.max_length = count(s, "maxLength", n.max_length, path);
      if (n.min_length > n.max_length) fail("'minLength' is above 'maxLength'", path);
      if (auto f = s.find("format"); f != s.end()) {
        const auto format = f->is_string() ? json_format_from_name(f->get<std::string>()) : std::nullopt;
        if (!format) {
          fail("'format' " + f->dump() + " is not supported (date, time, date-time and uuid are)", path);
        }
        if (s.contains("minLength") || s.contains("maxLength")) {
          fail("'format' beside 'minLength' or 'maxLength' is not supported", path);
        }
        n.format = *format;
      }
      if (auto p = s.find("pattern"); p != s.end()) {
        if (!p->is_string()) fail("'pattern' must be a string", path);
        if (n.format != JsonFormat::None) fail("'pattern' beside 'format' is not supported", path);
        try {
          n.pattern = GbnfGrammar::parse(regex_to_gbnf(p->get<std::string>()));
        } catch (const std::invalid_argument& e) {
          fail(std::string("'pattern' ") + p->dump() + ": " + e.what(), path);
        } catch (const GbnfError& e) {
          fail(std::string("'pattern' ") + p->dump() + " cannot be enforced: " + e.what(), path);
        }
      }
      return add(std::move(n), path);
    }
    if (s.contains("format") && type != "null") fail("'format' on a " + type + " is not supported", path);
    if (type == "number" || type == "integer") {
      SchemaNode n = of_kind(type == "number" ? SchemaNode::Kind::Number : SchemaNode::Kind::Integer);
      n.bounds = bounds(s, type == "integer", path);
      return add(std::move(n), path);
    }
    if (type == "boolean") return add(literals({"true", "false"}), path);
    if (type == "null") return add(literals({"null"}), path);
    fail("unknown type '" + type + "'", path);
  }

  int object(const json& s, const std::string& path, int depth) {
    SchemaNode n = of_kind(SchemaNode::Kind::Object);
    std::vector<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) fail("'required' must be an array of strings", path);
      for (const auto& name : *r) {
        if (!name.is_string()) fail("'required' must be an array of strings", path);
        required.push_back(name.get<std::string>());
      }
    }
    const json* props = nullptr;
    if (auto p = s.find("properties"); p != s.end()) {
      if (!p->is_object()) fail("'properties' must be an object", path);
      props = &*p;
    }
    if (props != nullptr && !props->empty()) {
      if (props->size() > JsonSchema::kMaxProperties) fail("more than 64 properties in one object", path);
      for (const auto& [key, sub] : props->items()) {
        SchemaNode::Property p;
        p.key = json(key).dump().substr(1);
        if (p.key.size() > 1024) fail("a property name longer than 1024 bytes", path);
        p.required = std::find(required.begin(), required.end(), key) != required.end();
        p.node = compile(sub, path + "/properties/" + key, depth + 1);
        n.properties.push_back(std::move(p));
      }
    }
    for (const auto& name : required) {
      const bool declared = props != nullptr && props->contains(name);
      if (!declared) fail("the required property '" + name + "' is not in 'properties'", path);
    }
    if (n.properties.empty()) {
      auto extra = s.find("additionalProperties");
      if (extra == s.end() || (extra->is_boolean() && extra->get<bool>())) {
        n.additional = any();
      } else if (extra->is_object()) {
        n.additional = compile(*extra, path + "/additionalProperties", depth + 1);
      }  // false: only {}
    }
    return add(std::move(n), path);
  }

  int reference(const json& ref, const std::string& path, int depth) {
    if (!ref.is_string()) fail("'$ref' must be a string", path);
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#') fail("'$ref' '" + target + "' is not within this schema", path);
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const int node = add(choice({}), path);  // filled below; recursion finds it in refs_
    refs_[target] = node;
    const json* resolved = nullptr;
    try {
      resolved = &document_.at(json::json_pointer(target.substr(1)));
    } catch (const json::exception&) {
      fail("'$ref' '" + target + "' points at nothing", path);
    }
    const int compiled = compile(*resolved, target.substr(1), depth + 1);
    out_.nodes[static_cast<size_t>(node)].alternatives = {compiled};
    return node;
  }

  // The bytes a node's value can start with; fills Choice nodes' tables.
  ByteSet first_bytes(int index) {
    auto& cached = first_[static_cast<size_t>(index)];
    if (state_[static_cast<size_t>(index)] == 2) return cached;
    if (state_[static_cast<size_t>(index)] == 1) {
      fail("a '$ref' cycle that writes nothing", paths_[static_cast<size_t>(index)]);
    }
    state_[static_cast<size_t>(index)] = 1;
    ByteSet set;
    SchemaNode& n = out_.nodes[static_cast<size_t>(index)];
    switch (n.kind) {
      case SchemaNode::Kind::Object: set.set('{'); break;
      case SchemaNode::Kind::Array: set.set('['); break;
      case SchemaNode::Kind::String: set.set('"'); break;
      case SchemaNode::Kind::Number:
      case SchemaNode::Kind::Integer:
        set.set('-');
        for (int d = '0'; d <= '9'; ++d) set.set(static_cast<size_t>(d));
        break;
      case SchemaNode::Kind::Literals:
        for (const auto& text : n.literals) set.set(static_cast<uint8_t>(text[0]));
        break;
      case SchemaNode::Kind::Choice:
        n.by_first_byte.fill(-1);
        for (size_t a = 0; a < n.alternatives.size(); ++a) {
          const ByteSet alt = first_bytes(n.alternatives[a]);
          if ((set & alt).any()) {
            fail("alternatives that can start alike (two objects, two strings, a number and an integer) are not "
                 "supported",
                 paths_[static_cast<size_t>(index)]);
          }
          set |= alt;
          for (size_t b = 0; b < 256; ++b) {
            if (alt.test(b)) out_.nodes[static_cast<size_t>(index)].by_first_byte[b] = static_cast<int16_t>(a);
          }
        }
        break;
    }
    state_[static_cast<size_t>(index)] = 2;
    first_[static_cast<size_t>(index)] = set;
    return set;
  }

  const json& document_;
  JsonSchema out_;
  std::vector<std::string> paths_;  // per node, for errors
  std::map<std::string, int> refs_;
  int any_ = -1;
  std::vector<ByteSet> first_ = std::vector<ByteSet>(JsonSchema::kMaxNodes);
  std::vector<uint8_t> state_ = std::vector<uint8_t>(JsonSchema::kMaxNodes, 0);  // 0 new, 1 visiting, 2 done
};

}  // namespace

std::shared_ptr<const JsonSchema> JsonSchema::compile(const nlohmann::ordered_json& schema) {
  Compiler compiler(schema);
  return compiler.run();
}

}  // namespace tc::text
