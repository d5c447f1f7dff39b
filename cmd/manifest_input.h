#pragma once
// Reading manifests for `vto lint` and `vto render`: -f FILE or -f - (stdin).
#include <string>

namespace vto::cmd {
// The whole text of `path`, or of stdin for "-", up to 16 MiB; throws std::runtime_error naming the file.
std::string readManifestInput(const std::string& path);
}  // namespace vto::cmd
