#pragma once
// Which checkpoint a resumed attempt starts from. Training code writes checkpoints under the
// checkpoint directory in many shapes (ckpt-9, ckpt-10.index, step-12/model.pt, run/epoch=3/...).
// The rule, also in docs/resume.md:
//  1. A checkpoint is the path below the directory up to its first component that holds a number;
//     its step is the first number in that component ("ckpt-10.index" -> ckpt-10, step 10).
//  2. The newest is the one with the highest step (numeric: ckpt-10 beats ckpt-9), ties broken by
//     the newest update time.
//  3. Where no component holds a number, the newest by update time wins.
//  4. Nothing under the directory: no checkpoint; the attempt starts from scratch.
// The bucket is the tenant's, so the listing is bounded: pages, wall time, one candidate in memory.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "vertex/gcs_client.h"

namespace vto::reconcilers {

struct Checkpoint {
  std::string uri;                              // gs://bucket/dir/ckpt-10
  std::optional<Clock::time_point> updateTime;  // the newest object in it (unset when GCS gave no time)
};

// The bucket and the object-name prefix to list for a checkpoint directory gs://bucket/path: the
// path with a trailing slash, so that a sibling such as checkpoints-old/ is not listed with it.
vertex::GcsUri checkpointListing(const std::string& directory);

// `directory` is gs://bucket/path (with or without a trailing slash); `objects` are everything listed
// under it.
std::optional<Checkpoint> latestCheckpoint(const std::string& directory, const std::vector<vertex::GcsObject>& objects);

// The step of checkpoint `uri` under `directory` by rule 1 (ckpt-10 -> 10), nullopt when none of
// its components holds a number. A checkpoint outside the directory (it was edited) is read by its
// last component.
std::optional<long long> checkpointStep(const std::string& directory, const std::string& uri);

struct CheckpointSearchLimits {
  int maxPages = 20;                                 // objects.list requests per search, all prefixes together
  Clock::duration maxTime = std::chrono::seconds(20);  // measured on the injected clock
  int pageSize = 1000;
  int maxUnnumberedDirectories = 8;  // subdirectories without a number that are searched below
};

struct CheckpointSearch {
  std::optional<Checkpoint> latest;  // the best seen, even when the search stopped early
  bool complete = true;              // false: a limit stopped the search (see `stoppedBecause`)
  std::string stoppedBecause;
  int pages = 0;  // list requests made
};

// Finds the newest checkpoint under `directory` with bounded listing: the directory is listed with
// delimiter "/" and a partial response (names, update times, prefixes); a numbered subdirectory
// (step-12/) is one candidate without listing its files, except the winners, which are listed
// for their update time; an unnumbered subdirectory is searched in full (up to the limits). Pages
// are streamed: only the best candidate is kept. A repeated page token throws vertex::ApiError.
CheckpointSearch findLatestCheckpoint(vertex::GcsClient& gcs, const std::string& directory, const Clock& clock,
                                      const CheckpointSearchLimits& limits = {});

}  // namespace vto::reconcilers
