// Response schemas compiled from the request's text: properties keep the
// order the client wrote them in (the parsed body sorts them), schemas that
// cannot be enforced are 400s naming the field, and requests without one
// compile nothing.
#include <catch2/catch.hpp>

#include "server/response_schema.h"

using namespace tc::server;

TEST_CASE("response schema: declared order, errors naming the field", "[server][schema]") {
  std::shared_ptr<const tc::text::JsonSchema> schema;
  const std::string openai = R"({"model": "m", "response_format": {"type": "json_schema", "json_schema": {"name": "r",
      "schema": {"type": "object", "properties": {"reasoning": {"type": "string"}, "answer": {"type": "integer"}},
                 "required": ["reasoning", "answer"]}}}})";
  REQUIRE_FALSE(compile_response_schema(openai, SchemaField::ResponseFormat, schema));
  REQUIRE(schema);
  const auto& root = schema->nodes[static_cast<size_t>(schema->root)];
  REQUIRE(root.properties.size() == 2);
  CHECK(root.properties[0].key == "reasoning\"");  // as written, not sorted
  CHECK(root.properties[1].key == "answer\"");

  const std::string ollama = R"({"model": "m", "format": {"type": "object", "properties": {"b": {}, "a": {}}}})";
  REQUIRE_FALSE(compile_response_schema(ollama, SchemaField::OllamaFormat, schema));
  REQUIRE(schema);
  CHECK(schema->nodes[static_cast<size_t>(schema->root)].properties[0].key == "b\"");

  const auto e = compile_response_schema(R"({"format": {"type": "object", "properties": {"d": {"type": "string", "format": "email"}}}})",
                                         SchemaField::OllamaFormat, schema);
  REQUIRE(e);
  CHECK(e->status == 400);
  CHECK(e->param == "format");
  CHECK(e->message.find("'format' \"email\" is not supported (date, time, date-time and uuid are) at /properties/d") !=
        std::string::npos);
  const auto root_string = compile_response_schema(
      R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string"}}}})",
      SchemaField::ResponseFormat, schema);
  REQUIRE(root_string);
  CHECK(root_string->param == "response_format");

  REQUIRE_FALSE(compile_response_schema(R"({"format": "json"})", SchemaField::OllamaFormat, schema));
  CHECK_FALSE(schema);
  REQUIRE_FALSE(compile_response_schema(R"({"messages": []})", SchemaField::ResponseFormat, schema));
  CHECK_FALSE(schema);
}
