#pragma once
// The shapes of Google Cloud project IDs, Vertex AI regions, model IDs and version aliases. They are checked in three places
// with the same message: the CRD schema (kubectl apply), crd/validation.cpp (vto lint) and inside
// the Vertex client before any request (defence in depth: these values end up in the host name and
// path of a request that carries the operator's access token).
#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace vto {

// Where a Vertex resource lives: a project (ID or number) and a region. The one type for it: the
// defaults and a spec's project/location (crd), a job's place read from its name and every request's
// path (vertex).
struct Location {
  std::string project;
  std::string location;  // e.g. us-central1
  std::string parent() const { return "projects/" + project + "/locations/" + location; }
  auto operator<=>(const Location&) const = default;
};

// ^[a-z][a-z0-9-]{4,28}[a-z0-9]$
bool isProjectId(std::string_view project);
// ^[0-9]{1,20}$: the project number Vertex writes into the names it returns.
bool isProjectNumber(std::string_view project);
// ^[a-z]+-[a-z]+[0-9]+$ (us-central1, europe-west4). "global" is not accepted: Vertex runs
// CustomJobs and HyperparameterTuningJobs only in regions.
bool isVertexRegion(std::string_view location);

// A Model Registry model ID (UploadModelRequest.modelId): 1 to 63 of [a-z0-9_-], not starting with a
// digit or a hyphen.
bool isModelId(std::string_view id);
// The model a run registers into: a model ID as above, or the number Vertex gave a model made without
// one (by the console or the SDK), 1 to 20 digits.
bool isModelReference(std::string_view id);
// A model version alias as Model.versionAliases documents it: [a-z][a-z0-9-]{0,126}[a-z0-9] (lower
// case, never a trailing '-', never a version ID).
bool isVersionAlias(std::string_view alias);

// A Google Cloud label key ([a-z][a-z0-9_-]{0,62}) and value ([a-z0-9_-]{0,63}), ASCII only.
bool isValidGcpLabelKey(std::string_view key);
bool isValidGcpLabelValue(std::string_view value);

// The messages, shared with the CRD's pattern messages (helm/vto/files/crds/trainingruns.vto.dev.yaml).
inline constexpr std::string_view kProjectIdRule =
    "must be a Google Cloud project ID: 6-30 lower-case letters, digits or hyphens, starting with a letter and "
    "not ending with a hyphen, e.g. my-project-123";
inline constexpr std::string_view kRegionRule =
    "must be a Vertex AI region such as us-central1 or europe-west4 (letters, a hyphen, letters, a number)";

inline constexpr std::string_view kModelIdRule =
    "must be a Vertex model ID: 1 to 63 lower-case letters, digits, underscores or hyphens, not starting with a "
    "digit or a hyphen, e.g. fraud-detector";
inline constexpr std::string_view kModelReferenceRule =
    "must be a Vertex model ID (1 to 63 lower-case letters, digits, underscores or hyphens, not starting with a "
    "digit or a hyphen, e.g. fraud) or the number of an existing model";
inline constexpr std::string_view kVersionAliasRule =
    "must be a Vertex version alias: 2 to 128 lower-case letters, digits or hyphens, starting with a letter and "
    "ending with a letter or a digit, e.g. champion";

// nullopt when valid, else "<field> \"<value>\" <rule>". The value is quoted but cut to 64 bytes.
std::optional<std::string> checkProjectId(std::string_view field, std::string_view project);
std::optional<std::string> checkVertexRegion(std::string_view field, std::string_view location);
std::optional<std::string> checkModelId(std::string_view field, std::string_view id);
std::optional<std::string> checkVersionAlias(std::string_view field, std::string_view alias);
std::optional<std::string> checkModelReference(std::string_view field, std::string_view id);

}  // namespace vto
