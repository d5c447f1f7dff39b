#pragma once
// The `filter` of ListCustomJobs / ListHyperparameterTuningJobs (AIP-160 subset that Vertex
// documents): terms on display_name, state, create_time, update_time and labels.KEY, joined by AND,
// each optionally negated with NOT.
//   display_name="x"  display_name:"train-*"  state!="JOB_STATE_FAILED"
//   create_time>"2026-05-18T00:00:00Z"  labels.team="ml"  labels.team:*
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::emulator {

// `left op right` for a filter's comparison operator (= != < <= > >=).
template <typename T>
bool compareBy(const T& left, const std::string& op, const T& right) {
  if (op == "=") return left == right;
  if (op == "!=") return left != right;
  if (op == "<") return left < right;
  if (op == "<=") return left <= right;
  if (op == ">") return left > right;
  return left >= right;
}

class ListFilter {
 public:
  // Throws std::invalid_argument with what is wrong and what is supported.
  static ListFilter parse(const std::string& text);
  // `job` in canonical JSON (enum names, RFC 3339 times).
  bool matches(const nlohmann::json& job) const;
  // A label that every matching job carries with exactly this value (a `labels.KEY="VALUE"` term not
  // negated): a store can look its candidates up by it instead of testing every job.
  std::optional<std::pair<std::string, std::string>> requiredLabel() const;
  // Whether every term is on labels (the one field ListModelVersions filters on).
  bool onlyLabels() const;

 private:
  struct Term {
    bool negated = false;
    std::string field;  // display_name, state, create_time, update_time, labels.KEY
    std::string op;     // = != < <= > >= :
    std::string value;
  };
  bool matches(const Term& term, const nlohmann::json& job) const;
  std::vector<Term> terms_;
};

}  // namespace vto::emulator
