#include "reconcilers/jobs/failure_class.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace vto::reconcilers {
namespace {

using crd::FailureClass;

struct Rule {
  FailureClass failure;
  std::vector<const char*> messageContains;  // lower case; any one matches
  std::vector<int> codes;                    // google.rpc.Code numbers; any one matches (empty: any code)
};

// Message fragments are the ones Vertex and Compute Engine write; see docs/resume.md for examples.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {FailureClass::Preemption, {"preempt", "reclaimed by compute engine", "spot vm was terminated"}, {}},
      {FailureClass::Stockout,
       {"resources are insufficient", "does not have enough resources", "zone_resource_pool_exhausted",
        "resource_pool_exhausted", "stockout", "quota exceeded", "insufficient capacity"},
       {}},
      {FailureClass::Timeout, {"timeout", "timed out", "deadline exceeded", "exceeded the maximum duration"}, {}},
      {FailureClass::UserError, {"exited with a non-zero status", "non-zero exit", "oomkilled", "out of memory"}, {}},
      {FailureClass::InternalError, {"internal error"}, {}},
      // Codes alone, when no message said more.
      {FailureClass::Stockout, {}, {8}},        // RESOURCE_EXHAUSTED
      {FailureClass::Timeout, {}, {4}},         // DEADLINE_EXCEEDED
      {FailureClass::InternalError, {}, {13, 14, 2}},  // INTERNAL, UNAVAILABLE, UNKNOWN
      {FailureClass::UserError, {}, {3, 9, 11}},       // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
  };
  return table;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

bool isAcceleratorQuotaRefusal(int httpStatus, const std::string& message) {
  return httpStatus == 429 && message.find("custom_model_training") != std::string::npos;
}

crd::FailureClass classifyFailure(vertex::JobState state, const std::optional<vertex::RpcStatus>& error) {
  if (state == vertex::JobState::Expired) return FailureClass::Timeout;
  if (!error) return FailureClass::Unknown;
  std::string message = lower(error->message);
  for (const auto& rule : rules()) {
    bool messageMatches = rule.messageContains.empty() ||
                          std::any_of(rule.messageContains.begin(), rule.messageContains.end(),
                                      [&](const char* fragment) { return message.find(fragment) != std::string::npos; });
    bool codeMatches = rule.codes.empty() || std::find(rule.codes.begin(), rule.codes.end(), error->code) != rule.codes.end();
    if (messageMatches && codeMatches) return rule.failure;
  }
  return FailureClass::Unknown;
}

}  // namespace vto::reconcilers
