#include "reconcilers/jobs/checkpoints.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <spdlog/spdlog.h>

#include "base/rfc3339.h"

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

// A candidate is better with a step than without, then with a higher step, then newer.
bool better(const Candidate& a, const Candidate& b) {
  if (a.step.has_value() != b.step.has_value()) return a.step.has_value();
  if (a.step && *a.step != *b.step) return *a.step > *b.step;
  return a.updated > b.updated;  // RFC 3339 UTC sorts as text
}

// Keeps only the best candidate seen, so memory does not grow with the listing. Comparing each
// object as its own candidate picks the same winner as grouping objects first: the best object
// belongs to the best checkpoint, and its update time is that checkpoint's newest.
class Picker {
 public:
  void offer(Candidate candidate) {
    if (!best_ || better(candidate, *best_)) best_ = std::move(candidate);
  }
  const std::optional<Candidate>& best() const { return best_; }

 private:
  std::optional<Candidate> best_;
};

bool hasDigit(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

class Search {
 public:
  Search(vertex::GcsClient& gcs, const Clock& clock, const CheckpointSearchLimits& limits, std::string bucket)
      : gcs_(gcs), clock_(clock), limits_(limits), bucket_(std::move(bucket)), started_(clock.now()) {}

  // Lists `prefix` page by page, calling onPage for each, while the limits allow.
  template <typename OnPage>
  void list(const std::string& prefix, const vertex::ListObjectsOptions& options, OnPage onPage) {
    vertex::PageTokenGuard tokens("listing gs://" + bucket_ + "/" + prefix);
    std::string pageToken;
    do {
      if (!withinLimits()) return;
      auto page = gcs_.listObjectsPage(bucket_, prefix, pageToken, options);
      ++result.pages;
      onPage(page);
      if (!page.nextPageToken.empty()) tokens.next(page.nextPageToken);
      pageToken = page.nextPageToken;
    } while (!pageToken.empty());
  }

  void stop(std::string why) {
    if (!result.complete) return;
    result.complete = false;
    result.stoppedBecause = std::move(why);
  }

  CheckpointSearch result;

 private:
  bool withinLimits() {
    if (result.pages >= limits_.maxPages) {
      stop("more than " + std::to_string(limits_.maxPages) + " pages of objects");
      return false;
    }
    if (clock_.now() - started_ >= limits_.maxTime) {
      stop("listing took longer than " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limits_.maxTime).count()) + " s");
      return false;
    }
    return true;
  }

  vertex::GcsClient& gcs_;
  const Clock& clock_;
  const CheckpointSearchLimits& limits_;
  std::string bucket_;
  Clock::time_point started_;
};

}  // namespace

vertex::GcsUri checkpointListing(const std::string& directory) {
  auto listing = vertex::parseGcsUri(directory);
  if (!listing.object.empty() && listing.object.back() != '/') listing.object += '/';
  return listing;
}

std::optional<long long> checkpointStep(const std::string& directory, const std::string& checkpoint) {
  std::string uri = checkpoint.empty() || checkpoint.back() != '/' ? checkpoint : checkpoint.substr(0, checkpoint.size() - 1);
  std::string prefix = directory.empty() || directory.back() == '/' ? directory : directory + "/";
  std::string relative = !prefix.empty() && uri.rfind(prefix, 0) == 0 ? uri.substr(prefix.size())
                                                                      : uri.substr(uri.rfind('/') + 1);
  return candidateOf(relative).step;
}

std::optional<Checkpoint> latestCheckpoint(const std::string& directory, const std::vector<vertex::GcsObject>& objects) {
  auto dir = checkpointListing(directory);
  const std::string& prefix = dir.object;
  Picker picker;
  for (const auto& object : objects) {
    if (object.name.rfind(prefix, 0) != 0 || object.name.size() == prefix.size()) continue;
    auto candidate = candidateOf(object.name.substr(prefix.size()));
    candidate.updated = object.updated;
    picker.offer(std::move(candidate));
  }
  if (!picker.best()) return std::nullopt;
  return Checkpoint{"gs://" + dir.bucket + "/" + prefix + picker.best()->path, parseRfc3339OrNone(picker.best()->updated)};
}

CheckpointSearch findLatestCheckpoint(vertex::GcsClient& gcs, const std::string& directory, const Clock& clock,
                                      const CheckpointSearchLimits& limits) {
  auto dir = checkpointListing(directory);
  const std::string& prefix = dir.object;
  Search search(gcs, clock, limits, dir.bucket);
  Picker picker;
  auto offerObject = [&](const vertex::GcsObject& object) {
    if (object.name.rfind(prefix, 0) != 0 || object.name.size() == prefix.size()) return;
    auto candidate = candidateOf(object.name.substr(prefix.size()));
    candidate.updated = object.updated;
    picker.offer(std::move(candidate));
  };

  // 1. The directory itself, one level deep: files are candidates; numbered subdirectories are
  //    candidates by name (their files are not listed); unnumbered ones are searched below.
  std::optional<long long> topDirStep;
  std::vector<std::string> topDirs;        // numbered subdirectories with the highest step
  std::vector<std::string> unnumberedDirs;  // capped
  vertex::ListObjectsOptions level{"/", "items(name,updated),prefixes,nextPageToken", limits.pageSize, ""};
  search.list(prefix, level, [&](const vertex::ObjectPage& page) {
    for (const auto& object : page.objects) offerObject(object);
    for (const auto& sub : page.prefixes) {
      if (sub.rfind(prefix, 0) != 0 || sub.size() <= prefix.size() + 1) continue;
      std::string name = sub.substr(prefix.size(), sub.size() - prefix.size() - 1);
      if (!hasDigit(name)) {
        if (static_cast<int>(unnumberedDirs.size()) < limits.maxUnnumberedDirectories) {
          unnumberedDirs.push_back(sub);
        } else {
          search.stop("more than " + std::to_string(limits.maxUnnumberedDirectories) +
                      " subdirectories without a step number");
        }
        continue;
      }
      auto step = candidateOf(name + "/").step;
      if (!topDirStep || *step > *topDirStep) {
        topDirStep = step;
        topDirs = {name};
      } else if (*step == *topDirStep && topDirs.size() < 4) {
        topDirs.push_back(name);
      }
    }
  });

  // 2. Unnumbered subdirectories (run/epoch=3/...): every object below them, streamed.
  vertex::ListObjectsOptions flat{"", "items(name,updated),nextPageToken", limits.pageSize, ""};
  for (const auto& sub : unnumberedDirs) {
    search.list(sub, flat, [&](const vertex::ObjectPage& page) {
      for (const auto& object : page.objects) offerObject(object);
    });
  }

  // 3. The numbered subdirectories that can win: their newest update time decides ties and is the
  //    checkpoint's updateTime.
  const auto& best = picker.best();
  if (topDirStep && (!best || !best->step || *topDirStep >= *best->step)) {
    for (const auto& name : topDirs) {
      Candidate candidate{name, topDirStep, ""};
      search.list(prefix + name + "/", {"", "items(updated),nextPageToken", limits.pageSize, ""},
                  [&](const vertex::ObjectPage& page) {
                    for (const auto& object : page.objects) candidate.updated = std::max(candidate.updated, object.updated);
                  });
      picker.offer(std::move(candidate));
    }
  }

  auto result = std::move(search.result);
  if (picker.best()) {
    result.latest = Checkpoint{"gs://" + dir.bucket + "/" + prefix + picker.best()->path, parseRfc3339OrNone(picker.best()->updated)};
  }
  if (!result.complete) {
    spdlog::warn("checkpoint search under {} stopped early ({}); using the best found so far", directory,
                 result.stoppedBecause);
  }
  return result;
}

}  // namespace vto::reconcilers
