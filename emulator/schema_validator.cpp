#include "emulator/schema_validator.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "base/rfc3339.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"

namespace vto::emulator {
namespace {

using nlohmann::json;

// proto3 JSON parsers accept the proto field name too: worker_pool_specs -> workerPoolSpecs.
std::string toLowerCamel(const std::string& name) {
  std::string out;
  bool upper = false;
  for (char c : name) {
    if (c == '_') {
      upper = true;
    } else {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return out;
}

std::string describe(const json& value) {
  auto text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

std::string child(const std::string& path, const std::string& field) { return path.empty() ? field : path + "." + field; }

// The discovery document has no `required` list; Google marks required fields by starting their
// description with "Required." (the proto's REQUIRED field_behavior).
bool isRequired(const json& property) {
  return property.value("description", std::string()).rfind("Required", 0) == 0;
}

std::vector<std::map<std::string, int>> parseProtoEnums(const std::string& text) {
  std::vector<std::map<std::string, int>> enums;
  static const std::regex enumBlock(R"(enum\s+\w+\s*\{([^}]*)\})");
  static const std::regex value(R"(([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+))");
  for (std::sregex_iterator block(text.begin(), text.end(), enumBlock), end; block != end; ++block) {
    std::map<std::string, int> values;
    auto body = (*block)[1].str();
    for (std::sregex_iterator item(body.begin(), body.end(), value); item != end; ++item) {
      values[(*item)[1].str()] = std::stoi((*item)[2].str());
    }
    if (!values.empty()) enums.push_back(std::move(values));
  }
  return enums;
}

}  // namespace

SchemaValidator::SchemaValidator(json discovery, const std::string& protoText)
    : schemas_(std::move(discovery.at("schemas"))), protoEnums_(parseProtoEnums(protoText)) {}

const SchemaValidator& SchemaValidator::vertexV1() {
  static const SchemaValidator validator(json::parse(embeddedDiscovery()), embeddedProtos());
  return validator;
}

json SchemaValidator::normalize(const json& body, const std::string& schemaId) const {
  if (!body.is_object()) {
    throw ValidationError("", "Invalid JSON payload received. Expected an object, got " + describe(body) + ".");
  }
  return normalizeObject(body, schemaId, "");
}

std::vector<std::vector<std::string>> SchemaValidator::fieldMask(const std::string& mask,
                                                                const std::string& schemaId) const {
  std::vector<std::vector<std::string>> paths;
  size_t start = 0;
  while (!mask.empty() && start <= mask.size()) {
    auto end = std::min(mask.find(',', start), mask.size());
    auto text = mask.substr(start, end - start);
    start = end + 1;
    text.erase(0, text.find_first_not_of(' '));
    text.erase(text.find_last_not_of(' ') + 1);
    std::vector<std::string> path;
    const json* schema = &schemas_.at(schemaId);
    size_t at = 0;
    while (true) {
      auto dot = std::min(text.find('.', at), text.size());
      auto name = toLowerCamel(text.substr(at, dot - at));
      const json* property = schema != nullptr && schema->contains("properties") && (*schema)["properties"].contains(name)
                                 ? &(*schema)["properties"][name]
                                 : nullptr;
      if (name.empty() || property == nullptr) {
        throw ValidationError("read_mask", "Invalid field mask: \"" + text.substr(0, 200) + "\" is not a field of " + schemaId + ".");
      }
      path.push_back(name);
      if (dot == text.size()) break;
      // Deeper names are fields of the message this one holds (or of a list's items).
      const json& inner = property->contains("items") ? (*property)["items"] : *property;
      schema = inner.contains("$ref") ? &schemas_.at(inner["$ref"].get<std::string>()) : nullptr;
      at = dot + 1;
    }
    paths.push_back(std::move(path));
  }
  return paths;
}

json SchemaValidator::normalizeObject(const json& body, const std::string& schemaId, const std::string& path) const {
  const auto& schema = schemas_.at(schemaId);
  const auto& properties = schema.at("properties");
  json out = json::object();
  for (const auto& [rawName, value] : body.items()) {
    auto name = properties.contains(rawName) ? rawName : toLowerCamel(rawName);
    if (!properties.contains(name)) {
      throw ValidationError(child(path, rawName), "Invalid JSON payload received. Unknown name \"" + rawName + "\"" +
                                                      (path.empty() ? "" : " at '" + path + "'") +
                                                      ": Cannot find field.");
    }
    const auto& property = properties.at(name);
    if (property.value("readOnly", false) || value.is_null()) continue;  // output only / default: ignored
    out[name] = normalizeValue(value, property, child(path, name));
  }
  for (const auto& [name, property] : properties.items()) {
    if (!isRequired(property) || property.value("readOnly", false)) continue;
    bool present = out.contains(name) && !(out[name].is_string() && out[name].get<std::string>().empty()) &&
                   !(out[name].is_array() && out[name].empty());
    if (!present) {
      throw ValidationError(child(path, name), "Required field \"" + child(path, name) + "\" is not set.");
    }
  }
  return out;
}

std::string SchemaValidator::enumName(const json& value, const json& names, const std::string& path) const {
  if (value.is_string()) {
    for (const auto& name : names) {
      if (name == value) return value.get<std::string>();
    }
  } else if (value.is_number_integer()) {
    // The official clients send `enum-encoding=int`: find the proto enum holding these names.
    auto number = value.get<long long>();
    for (const auto& values : protoEnums_) {
      bool matches = std::all_of(names.begin(), names.end(),
                                 [&](const json& name) { return values.count(name.get<std::string>()) > 0; });
      if (!matches) continue;
      for (const auto& name : names) {
        if (values.at(name.get<std::string>()) == number) return name.get<std::string>();
      }
      break;
    }
  }
  std::string allowed;
  for (const auto& name : names) allowed += (allowed.empty() ? "" : ", ") + name.get<std::string>();
  throw ValidationError(path, "Invalid value at '" + path + "', " + describe(value) + ": expected one of " + allowed + ".");
}

json SchemaValidator::normalizeValue(const json& value, const json& property, const std::string& path) const {
  auto fail = [&](const std::string& expected) {
    return ValidationError(path, "Invalid value at '" + path + "' (" + expected + "), " + describe(value));
  };
  if (property.contains("$ref")) {
    if (!value.is_object()) throw fail("an object");
    return normalizeObject(value, property["$ref"].get<std::string>(), path);
  }
  auto type = property.value("type", std::string());
  auto format = property.value("format", std::string());
  if (type == "any") return value;
  if (type == "array") {
    if (!value.is_array()) throw fail("a list");
    json out = json::array();
    for (std::size_t i = 0; i < value.size(); ++i) {
      out.push_back(normalizeValue(value[i], property.at("items"), path + "[" + std::to_string(i) + "]"));
    }
    return out;
  }
  if (type == "object") {
    if (!value.is_object()) throw fail("an object");
    if (!property.contains("additionalProperties")) return value;
    json out = json::object();
    for (const auto& [key, item] : value.items()) {
      out[key] = normalizeValue(item, property["additionalProperties"], path + "[\"" + key + "\"]");
    }
    return out;
  }
  if (type == "boolean") {
    if (!value.is_boolean()) throw fail("TYPE_BOOL");
    return value;
  }
  if (type == "integer") {
    try {
      auto number = vertex::int64FromJson(value);
      if (number < INT32_MIN || number > INT32_MAX) throw fail("TYPE_INT32, out of range");
      return static_cast<int>(number);
    } catch (const std::invalid_argument&) {
      throw fail("TYPE_INT32");
    }
  }
  if (type == "number") {
    if (value.is_number()) return value;
    if (value.is_string()) {
      try {
        std::size_t used = 0;
        auto text = value.get<std::string>();
        auto number = std::stod(text, &used);
        if (used == text.size()) return number;
      } catch (const std::exception&) {
      }
    }
    throw fail("TYPE_DOUBLE");
  }
  if (type == "string") {
    if (format == "int64" || format == "uint64") {
      try {
        return std::to_string(vertex::int64FromJson(value));
      } catch (const std::invalid_argument&) {
        throw fail("TYPE_INT64");
      }
    }
    if (property.contains("enum")) return enumName(value, property["enum"], path);
    if (!value.is_string()) throw fail("TYPE_STRING");
    const auto& text = value.get_ref<const std::string&>();
    if (format == "google-duration") {
      static const std::regex duration(R"(-?\d+(\.\d{1,9})?s)");
      if (!std::regex_match(text, duration)) throw fail("google.protobuf.Duration such as \"3600s\"");
    } else if (format == "google-datetime") {
      try {
        parseRfc3339(text);
      } catch (const std::invalid_argument&) {
        throw fail("google.protobuf.Timestamp in RFC 3339");
      }
    }
    return value;
  }
  return value;
}

json parseRequestBody(const std::string& body, const std::string& schemaId) {
  auto parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    throw vertex::ApiError(400, "INVALID_ARGUMENT", "Invalid JSON payload received. The body is not JSON.");
  }
  try {
    return SchemaValidator::vertexV1().normalize(parsed, schemaId);
  } catch (const ValidationError& error) {
    json violation = {{"@type", "type.googleapis.com/google.rpc.BadRequest"},
                      {"fieldViolations", {{{"field", error.field()}, {"description", error.what()}}}}};
    throw vertex::ApiError(400, "INVALID_ARGUMENT", error.what(), json::array({violation}));
  }
}

}  // namespace vto::emulator
