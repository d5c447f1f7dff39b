#include "cmd/manifest_input.h"

#include <fstream>
#include <iostream>
#include <stdexcept>

namespace vto::cmd {
namespace {
// Manifests are small; a larger input is a mistake (or an attack on a CI runner), not a manifest.
constexpr size_t kMaxManifestBytes = 16 * 1024 * 1024;

std::string readBounded(std::istream& in, const std::string& name) {
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxManifestBytes)
      throw std::runtime_error(name + ": larger than 16 MiB; split the manifests into several files");
  }
  return text;
}
}  // namespace

std::string readManifestInput(const std::string& path) {
  if (path == "-") return readBounded(std::cin, "stdin");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the file; check the path, or use -f - to read stdin");
  return readBounded(in, path);
}
}  // namespace vto::cmd
