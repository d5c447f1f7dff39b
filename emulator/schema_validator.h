#pragma once
// Validates request bodies against the Vertex AI discovery document as strictly as the service's
// proto3 JSON parser: unknown fields, wrong types, bad enum values and missing required fields are
// rejected with the path of the offending field. Accepted bodies come back in canonical form
// (lowerCamelCase names, enum names, int64 as strings, output-only fields dropped).
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::emulator {

class ValidationError : public std::runtime_error {
 public:
  ValidationError(std::string field, const std::string& message)
      : std::runtime_error(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }  // e.g. "jobSpec.workerPoolSpecs[0].replicaCount"

 private:
  std::string field_;
};

class SchemaValidator {
 public:
  // discovery: a Google discovery document; protoText: .proto sources, read for enum numbers.
  SchemaValidator(nlohmann::json discovery, const std::string& protoText);
  // The validator for the embedded aiplatform v1 subset.
  static const SchemaValidator& vertexV1();

  // Throws ValidationError; schemaId such as "GoogleCloudAiplatformV1CustomJob".
  nlohmann::json normalize(const nlohmann::json& body, const std::string& schemaId) const;
  // A field mask (e.g. a list's readMask, "name,studySpec.metrics") as the lowerCamelCase paths of
  // fields of `schemaId`; throws ValidationError naming the first path that is not one.
  std::vector<std::vector<std::string>> fieldMask(const std::string& mask, const std::string& schemaId) const;

 private:
  nlohmann::json normalizeValue(const nlohmann::json& value, const nlohmann::json& property,
                                const std::string& path) const;
  nlohmann::json normalizeObject(const nlohmann::json& body, const std::string& schemaId, const std::string& path) const;
  std::string enumName(const nlohmann::json& value, const nlohmann::json& names, const std::string& path) const;

  nlohmann::json schemas_;
  // Every proto enum value name -> number, per enum (a discovery enum is matched by its names).
  std::vector<std::map<std::string, int>> protoEnums_;
};

const std::string& embeddedDiscovery();
const std::string& embeddedProtos();

// A request body as Google's API front end takes it: JSON, validated and normalized as `schemaId` of
// the embedded aiplatform v1 subset. Throws vertex::ApiError(400 INVALID_ARGUMENT), with a BadRequest
// detail naming the field when the schema refuses it.
nlohmann::json parseRequestBody(const std::string& body, const std::string& schemaId);

}  // namespace vto::emulator
