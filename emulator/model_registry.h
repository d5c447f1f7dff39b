#pragma once
// Vertex AI Model Registry (ModelService v1), the methods vto uses, with Vertex's rules:
//   POST .../models:upload                      UploadModelRequest -> Operation, done after uploadTime
//   GET  .../models/M/operations/OP             (and /ui/...) the upload's Operation
//   GET  .../models/M, models/M@3, models/M@alias   a version (M alone: the one with alias "default")
//   GET  .../models/M:listVersions              filter labels.KEY="VALUE", pageSize, pageToken, orderBy, readMask
//   POST .../models/M@3:mergeVersionAliases     {"versionAliases": ["champion", "-candidate"]} -> the Model
//   POST .../models/M[@V]/evaluations:import    {"modelEvaluation": {...}} -> the ModelEvaluation
//   GET  .../models/M[@V]/evaluations           a version's evaluations (M alone: the default version's)
//   GET  .../models/M/evaluations/E             one evaluation
// Versions are numbered 1, 2, ...; the first gets the alias "default", which stays on exactly one version.
// An alias is on at most one version of a model: applying it to one takes it from the other, as Google
// documents for the console (RegistryBehaviour::strictAliasMove refuses instead, the undocumented
// alternative for the API). A model keeps the labels of the upload that created it; every version is
// returned with those merged into its own (docs/google-fidelity.md, "Model Registry").
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "emulator/request.h"
#include "vertex/vertex_client.h"

namespace vto::emulator {

// Where Google does not document what it does, the emulator takes the answer that breaks naive
// clients by default and offers the other one.
struct RegistryBehaviour {
  // mergeVersionAliases adding an alias another version holds: false moves it (the console's documented
  // behaviour), true answers 400 FAILED_PRECONDITION until the holder gives it up.
  bool strictAliasMove = false;
  // A key set both on the model (by the upload that created it) and on a version: the model's value is
  // returned (true), or the version's.
  bool modelLabelsWin = true;
};

class ModelRegistry {
 public:
  ModelRegistry(const Clock& clock, std::chrono::milliseconds uploadTime, RegistryBehaviour behaviour = {});

  // A request under /v1/projects/P/locations/L/ whose collection is "models" or "models:upload":
  // `rest` holds the path segments from that collection on. Throws vertex::ApiError.
  Response handle(const Request& request, const vto::Location& where, const std::vector<std::string>& rest);
  // Completes the uploads whose time has come.
  void advance();

 private:
  struct Version {
    nlohmann::json resource;                // the Model as GET answers it (labels merged with the model's)
    std::vector<nlohmann::json> evaluations;  // in import order
  };
  struct Model {
    std::map<int, Version> versions;  // completed uploads, by version ID
    int nextVersion = 1;              // IDs are given at upload time, so concurrent uploads get distinct ones
    Clock::time_point created;
    nlohmann::json labels = nlohmann::json::object();  // model-level: those of the upload that created it
  };
  struct PendingUpload {
    std::string operation, model;
    int versionId = 0;
    nlohmann::json resource;  // the request's model, validated
    Clock::time_point doneAt;
  };

  nlohmann::json upload(const vto::Location& where, const std::string& body);
  nlohmann::json listVersions(const std::string& model, const std::map<std::string, std::string>& query) const;
  nlohmann::json mergeVersionAliases(const std::string& model, const std::string& version, const std::string& body);
  nlohmann::json importEvaluation(const std::string& model, const std::string& version, const std::string& body);
  nlohmann::json listEvaluations(const std::string& model, const std::string& version,
                                 const std::map<std::string, std::string>& query) const;
  nlohmann::json evaluation(const std::string& model, const std::string& id) const;
  // The version `reference` names ("" for the default, an ID or an alias); throws NOT_FOUND.
  Version& find(const std::string& model, const std::string& reference);
  const Version& find(const std::string& model, const std::string& reference) const;
  // Puts `alias` on `version` of `model`, taking it from the version that had it.
  void moveAlias(Model& model, Version& version, const std::string& alias, Clock::time_point now);
  void complete(PendingUpload& upload, Clock::time_point at);
  void completeDue(Clock::time_point now);  // with mutex_ held

  const Clock& clock_;
  std::chrono::milliseconds uploadTime_;
  RegistryBehaviour behaviour_;
  mutable std::mutex mutex_;
  // By name, projects/P/locations/L/models/M; an entry exists from the first upload on, but the model
  // is found (GET, parentModel) only once it has a version.
  std::map<std::string, Model> models_;
  std::map<std::string, nlohmann::json> operations_;  // by name
  std::vector<PendingUpload> pending_;
  long long nextId_ = 1;
};

}  // namespace vto::emulator
