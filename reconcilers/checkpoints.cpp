#include "reconcilers/checkpoints.h"

#include <cctype>
#include <map>

namespace vto::reconcilers {
namespace {

struct Candidate {
  std::string path;               // below the directory
  std::optional<long long> step;  // the first number of the component that names it
  std::string updated;            // newest object
};

// The checkpoint an object belongs to (below the directory) and its step, per the rule in the header.
Candidate candidateOf(const std::string& relative) {
  size_t start = 0;
  while (start < relative.size()) {
    size_t end = relative.find('/', start);
    bool last = end == std::string::npos;
    std::string component = relative.substr(start, last ? std::string::npos : end - start);
    size_t digit = 0;
    while (digit < component.size() && !std::isdigit(static_cast<unsigned char>(component[digit]))) ++digit;
    if (digit < component.size()) {
      size_t digitEnd = digit;
      while (digitEnd < component.size() && std::isdigit(static_cast<unsigned char>(component[digitEnd]))) ++digitEnd;
      long long step = std::stoll(component.substr(digit, std::min<size_t>(digitEnd - digit, 18)));
      // A file such as ckpt-10.index names the checkpoint ckpt-10 (TensorFlow's prefix form).
      std::string name = last ? component.substr(0, digitEnd) : component;
      return {relative.substr(0, start) + name, step, ""};
    }
    if (last) break;
    start = end + 1;
  }
  return {relative.substr(0, relative.find('/')), std::nullopt, ""};
}

}  // namespace

vertex::GcsUri checkpointListing(const std::string& directory) {
  auto listing = vertex::parseGcsUri(directory);
  if (!listing.object.empty() && listing.object.back() != '/') listing.object += '/';
  return listing;
}

std::optional<Checkpoint> latestCheckpoint(const std::string& directory, const std::vector<vertex::GcsObject>& objects) {
  auto dir = checkpointListing(directory);
  const std::string& prefix = dir.object;
  std::map<std::string, Candidate> candidates;
  for (const auto& object : objects) {
    if (object.name.rfind(prefix, 0) != 0 || object.name.size() == prefix.size()) continue;
    auto candidate = candidateOf(object.name.substr(prefix.size()));
    auto& held = candidates.try_emplace(candidate.path, candidate).first->second;
    if (object.updated > held.updated) held.updated = object.updated;  // RFC 3339 UTC sorts as text
  }
  const Candidate* best = nullptr;
  for (const auto& [path, c] : candidates) {
    if (best == nullptr) {
      best = &c;
      continue;
    }
    if (c.step.has_value() != best->step.has_value()) {
      if (c.step) best = &c;  // numbered checkpoints win over unnumbered files (a "checkpoint" index file)
      continue;
    }
    if (c.step && *c.step != *best->step) {
      if (*c.step > *best->step) best = &c;
      continue;
    }
    if (c.updated > best->updated) best = &c;
  }
  if (best == nullptr) return std::nullopt;
  return Checkpoint{"gs://" + dir.bucket + "/" + prefix + best->path, best->updated};
}

}  // namespace vto::reconcilers
