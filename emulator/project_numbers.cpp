#include "emulator/project_numbers.h"

#include <cctype>
#include <cstdint>

namespace vto::emulator {
namespace {

constexpr std::string_view kProjects = "projects/";

bool allDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Where the project segment after "projects/" at `at` ends.
size_t segmentEnd(const std::string& text, size_t at) {
  size_t end = at;
  while (end < text.size() && text[end] != '/' && text[end] != '"' && text[end] != '?' && text[end] != '&' &&
         text[end] != ':' && text[end] != '\\')
    ++end;
  return end;
}

}  // namespace

std::string ProjectNumbers::numberOf(const std::string& id) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : id) hash = (hash ^ c) * 1099511628211ULL;
  return std::to_string(100000000000ULL + hash % 900000000000ULL);
}

std::string ProjectNumbers::toIds(const std::string& text) {
  std::lock_guard lock(mutex_);
  std::string out;
  out.reserve(text.size());
  size_t from = 0;
  for (size_t at = text.find(kProjects); at != std::string::npos; at = text.find(kProjects, from)) {
    size_t begin = at + kProjects.size();
    size_t end = segmentEnd(text, begin);
    std::string project = text.substr(begin, end - begin);
    out.append(text, from, begin - from);
    if (allDigits(project)) {
      auto id = idOfNumber_.find(project);
      out += id == idOfNumber_.end() ? project : id->second;
    } else {
      if (!project.empty() && !numberOfId_.count(project)) {
        auto number = numberOf(project);
        numberOfId_[project] = number;
        idOfNumber_[number] = project;
      }
      out += project;
    }
    from = end;
  }
  out.append(text, from, std::string::npos);
  return out;
}

void ProjectNumbers::toNumbers(nlohmann::json& body) {
  if (body.is_string()) {
    const auto& text = body.get_ref<const std::string&>();
    if (text.rfind(kProjects, 0) != 0) return;
    size_t end = segmentEnd(text, kProjects.size());
    std::string project = text.substr(kProjects.size(), end - kProjects.size());
    std::lock_guard lock(mutex_);
    if (auto number = numberOfId_.find(project); number != numberOfId_.end())
      body = std::string(kProjects) + number->second + text.substr(end);
    return;
  }
  if (body.is_object() || body.is_array())
    for (auto& item : body) toNumbers(item);
}

}  // namespace vto::emulator
