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
#include <optional>
#include <string>
#include <vector>

#include "vertex/gcs_client.h"

namespace vto::reconcilers {

struct Checkpoint {
  std::string uri;         // gs://bucket/dir/ckpt-10
  std::string updateTime;  // RFC 3339: the newest object in it
};

// The bucket and the object-name prefix to list for a checkpoint directory gs://bucket/path: the
// path with a trailing slash, so that a sibling such as checkpoints-old/ is not listed with it.
vertex::GcsUri checkpointListing(const std::string& directory);

// `directory` is gs://bucket/path (with or without a trailing slash); `objects` are everything listed
// under it.
std::optional<Checkpoint> latestCheckpoint(const std::string& directory, const std::vector<vertex::GcsObject>& objects);

}  // namespace vto::reconcilers
