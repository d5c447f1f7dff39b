#pragma once
// Process-wide logging for `vto run`: spdlog as text or JSON lines, at a chosen level.
#include <string>

namespace vto::cmd {
// format: "json" | "text"; level: trace|debug|info|warn|error. Throws std::invalid_argument.
void setupLogging(const std::string& format, const std::string& level);
}  // namespace vto::cmd
