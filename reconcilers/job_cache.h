#pragma once
// The newest state of each Vertex job vto manages, as the JobPoller last listed it. Vertex has no
// watch, so this cache stands in for an informer: the reconciler reads jobs from here and asks
// Vertex directly only for a job the poller has not seen yet.
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "vertex/vertex_client.h"

namespace vto::reconcilers {

class JobCache {
 public:
  std::optional<vertex::Job> get(const std::string& jobName) const;
  // Stores `job` unless the cache already holds a newer update of it; returns whether it changed.
  bool put(const vertex::Job& job);
  void erase(const std::string& jobName);
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, vertex::Job> jobs_;
};

}  // namespace vto::reconcilers
