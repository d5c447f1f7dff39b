#pragma once
// Times in manifests and status: RFC 3339 (metav1.Time) on the wire, Clock::time_point in C++.
// Written in UTC with a `Z`, whole seconds unless the time has a fraction (GCS creation times do, and
// a data watermark must keep it), so writing a decoded time back gives the same text.
#include <string>

#include "base/clock.h"
#include "crd/strict_json.h"

namespace vto::crd {

// 2026-10-25T00:30:00Z, or 2026-10-25T00:30:00.123456Z when the time has a fraction.
std::string formatTimestamp(Clock::time_point time);
// RFC 3339 with `Z` or a numeric offset and an optional fraction of up to 9 digits; throws
// std::invalid_argument saying what is expected.
Clock::time_point parseTimestamp(const std::string& text);
// Decodes a JSON string with parseTimestamp; throws DecodeError naming `path`.
Clock::time_point readTimestamp(const json& value, const std::string& path);

}  // namespace vto::crd
