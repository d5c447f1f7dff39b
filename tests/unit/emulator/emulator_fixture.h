#pragma once
// The emulator on a fake clock, driven through handle() as the HTTP server would, with checkpoints
// and model files going to an in-memory bucket. Shared by the emulator's unit tests.
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emulator/emulator.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/gcs_fake_client.h"

namespace vto::emulator {

inline const std::string kParent = "/v1/projects/emu-project/locations/us-central1";

// A CustomJob body with one worker pool; `env` its container's env, outputs under gs://bkt/runs/a.
inline nlohmann::json customJob(const std::string& name = "train", nlohmann::json env = nlohmann::json::array()) {
  return {{"displayName", name},
          {"labels", {{"run", name}}},
          {"jobSpec",
           {{"workerPoolSpecs",
             {{{"machineSpec", {{"machineType", "n1-standard-4"}}},
               {"replicaCount", "1"},
               {"containerSpec", {{"imageUri", "img"}, {"env", env}}}}}},
            {"baseOutputDirectory", {{"outputUriPrefix", "gs://bkt/runs/a"}}}}}};
}

// The in-memory bucket, with uploads that a subclass changes.
class UploadsChangedGcs : public vertex::GcsClient {
 public:
  vertex::ObjectPage listObjectsPage(const std::string& b, const std::string& p, const std::string& token,
                                     const vertex::ListObjectsOptions& options) override {
    return objects.listObjectsPage(b, p, token, options);
  }
  std::optional<vertex::GcsObject> getObject(const std::string& b, const std::string& n) override { return objects.getObject(b, n); }
  std::optional<std::string> readObject(const std::string& b, const std::string& n, std::size_t max) override { return objects.readObject(b, n, max); }
  void ensureBucket(const std::string&, const std::string&) override {}
  testing::FakeGcsClient objects;
};

// Cloud Storage whose uploads (those `gated` names) wait until the test opens the gate: a GCS that
// has fallen behind.
class GatedGcs final : public UploadsChangedGcs {
 public:
  explicit GatedGcs(std::function<bool(const std::string& name)> gated = [](const std::string&) { return true; })
      : gated_(std::move(gated)) {}
  vertex::GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                           const std::string& type) override {
    if (gated_(name)) {
      std::unique_lock lock(mutex_);
      ++waiting_;
      open_.wait(lock, [&] { return isOpen_; });
    }
    return objects.upload(bucket, name, content, type);
  }
  void open() {
    std::lock_guard lock(mutex_);
    isOpen_ = true;
    open_.notify_all();
  }
  int waiting() {
    std::lock_guard lock(mutex_);
    return waiting_;
  }

 private:
  std::function<bool(const std::string& name)> gated_;
  std::mutex mutex_;
  std::condition_variable open_;
  bool isOpen_ = false;
  int waiting_ = 0;
};

class EmulatorFixture : public ::testing::Test {
 protected:
  explicit EmulatorFixture(EmulatorOptions options) : emulator_(clock_, std::move(options), &gcs_) {}

  std::string token() {
    Request request{"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                    {{"metadata-flavor", "Google"}}, ""};
    return emulator_.handle(request).body["access_token"].get<std::string>();
  }

  Response call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr,
                std::map<std::string, std::string> query = {}) {
    if (token_.empty()) token_ = token();
    Request request{method, path, std::move(query), {{"authorization", "Bearer " + token_}},
                    body.is_null() ? "" : body.dump()};
    return emulator_.handle(request);
  }

  // The control API (/emulator/v1/...), which needs no token.
  Response control(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr) {
    return emulator_.handle({method, "/emulator/v1/" + path, {}, {}, body.is_null() ? "" : body.dump()});
  }

  std::string create(const nlohmann::json& job, const std::string& collection = "customJobs") {
    auto response = call("POST", kParent + "/" + collection, job);
    EXPECT_EQ(response.status, 200) << response.body.dump();
    return response.body.value("name", std::string());
  }

  nlohmann::json get(const std::string& name) { return call("GET", "/v1/" + name).body; }

  void advance(std::chrono::milliseconds by) {
    clock_.advance(by);
    emulator_.tick();
  }

  testing::FakeClock clock_;
  testing::FakeGcsClient gcs_;
  Emulator emulator_;
  std::string token_;
};

}  // namespace vto::emulator
