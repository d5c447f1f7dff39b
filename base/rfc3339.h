#pragma once
// RFC 3339 times, the one text form of a time in every API vto speaks (Kubernetes, Vertex, GCS):
// one parser and one formatter for all layers. Written in UTC with a `Z`; the precision is the one the
// receiving field expects.
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace vto {

// 2026-05-18T03:00:00Z: whole seconds (Kubernetes metav1.Time: conditions, Events, status times).
std::string rfc3339(Clock::time_point t);
// 2026-05-18T03:00:00.123Z: milliseconds (Vertex resource times and list filters).
std::string rfc3339Millis(Clock::time_point t);
// 2026-05-18T03:00:00.123456Z: microseconds (Kubernetes metav1.MicroTime: Leases).
std::string rfc3339Micro(Clock::time_point t);
// Whole seconds, or the fraction without trailing zeros when there is one (2026-05-18T03:00:00.1234Z):
// a decoded time written back gives the same text (a data watermark keeps GCS's fraction).
std::string rfc3339Exact(Clock::time_point t);

// RFC 3339 with `Z` or a numeric offset and an optional fraction of up to 9 digits. Throws
// std::invalid_argument saying what is expected. No stream or locale: a cache of 1,000 jobs parses
// four times each per list.
Clock::time_point parseRfc3339(std::string_view text);
// The same for text that may be empty or not a time (an annotation, a field read leniently): nullopt.
std::optional<Clock::time_point> parseRfc3339OrNone(std::string_view text);

}  // namespace vto
