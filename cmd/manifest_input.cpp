#include "cmd/manifest_input.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace vto::cmd {
std::string readManifestInput(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the file; check the path, or use -f - to read stdin");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace vto::cmd
