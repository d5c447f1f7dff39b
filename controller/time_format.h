#pragma once
// Kubernetes timestamps: metav1.Time (RFC 3339, seconds) and metav1.MicroTime (microseconds), UTC.
#include <string>

#include "base/clock.h"

namespace vto::controller {

std::string rfc3339(Clock::time_point t);
std::string rfc3339Micro(Clock::time_point t);

}  // namespace vto::controller
