#include "crd/crd_yaml.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "crd/embedded.h"

namespace vto::crd {

std::string trainingRunCrdYaml() { return std::string(embedded::trainingRunCrdYaml); }

std::string customResourceDefinitionsYaml() {
  std::string out(embedded::trainingRunCrdYaml);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "---\n";
  out += embedded::retrainingPolicyCrdYaml;
  return out;
}

namespace {
// The catalog's rules, joined: one rule per field they report on, in pieces small enough for the API
// server's limit on an expression's length. It evaluates every rule of a schema node on every write of
// every run (status writes and finalizer patches too), each as its own program with its own
// activation and cost tracking: the CEL rules are what a run's writes cost it over the same writes
// through a version without rules. A conjunction evaluates the same tests once; its message is the
// first failing rule's, so each mistake reads as before (two catalog mistakes on one field now report
// the first).
std::vector<CelRule> joinedPerField(const std::vector<CelRule>& rules) {
  std::vector<CelRule> joined;
  std::vector<std::vector<const CelRule*>> groups;  // per field, in the order fields first appear
  for (const auto& r : rules) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.front()->fieldPath == r.fieldPath; });
    if (same == groups.end()) groups.push_back({&r});
    else same->push_back(&r);
  }
  for (const auto& group : groups) {
    // !(r1) ? m1 : !(r2) ? m2 : ... : mN: the message of the first rule of the piece that fails.
    std::vector<const CelRule*> piece;
    auto flush = [&] {
      if (piece.empty()) return;
      CelRule one{"", "", piece.front()->fieldPath, "", ""};
      for (size_t i = 0; i < piece.size();) {
        // Neighbours under one guard test it once: !(guard) || ((b1) && (b2) ...).
        size_t end = i + 1;
        const auto& guard = piece[i]->guard;
        while (!guard.empty() && end < piece.size() && piece[end]->guard == guard) ++end;
        std::string term;
        if (guard.empty()) {
          term = piece[i]->rule;
        } else {
          std::string bodies;
          for (size_t j = i; j < end; ++j) bodies += (j == i ? "(" : " && (") + piece[j]->body + ")";
          term = "!(" + guard + ") || (" + bodies + ")";
        }
        one.rule += (one.rule.empty() ? "(" : " && (") + term + ")";
        i = end;
      }
      for (size_t i = 0; i < piece.size(); ++i) {
        one.messageExpression += i + 1 == piece.size() ? "(" + piece[i]->messageExpression + ")"
                                                       : "!(" + piece[i]->rule + ") ? (" + piece[i]->messageExpression + ") : ";
      }
      joined.push_back(std::move(one));
      piece.clear();
    };
    size_t length = 0;
    for (const auto* r : group) {
      size_t adds = 2 * r->rule.size() + r->messageExpression.size() + 16;
      if (!piece.empty() && length + adds > kMaxJoinedCelExpression) {
        flush();
        length = 0;
      }
      piece.push_back(r);
      length += adds;
    }
    flush();
  }
  return joined;
}

// `crdYaml` with the block between `beginMarker` and `endMarker` replaced by `rules`, indented like
// the BEGIN marker.
std::string withRulesBlockAt(const std::string& crdYaml, size_t from, const std::string& beginMarker,
                             const std::string& endMarker, const std::vector<CelRule>& rules, size_t& next) {
  size_t begin = crdYaml.find(beginMarker, from);
  size_t end = crdYaml.find(endMarker, begin == std::string::npos ? 0 : begin);
  if (begin == std::string::npos || end == std::string::npos)
    throw std::runtime_error("the CRD has no '" + beginMarker + "' ... '" + endMarker +
                             "' block in an x-kubernetes-validations list; add the two comment lines there");
  size_t lineStart = crdYaml.rfind('\n', begin);
  lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
  const std::string indent = crdYaml.substr(lineStart, begin - lineStart);
  size_t afterBeginLine = crdYaml.find('\n', begin) + 1;
  // JSON strings are YAML double-quoted scalars: CEL's quotes and backslashes survive unchanged.
  auto quoted = [](const std::string& text) { return nlohmann::json(text).dump(); };
  std::string block;
  for (const auto& r : rules) {
    block += indent + "- rule: " + quoted(r.rule) + "\n";
    block += indent + "  messageExpression: " + quoted(r.messageExpression) + "\n";
    block += indent + "  fieldPath: " + quoted(r.fieldPath) + "\n";
  }
  next = afterBeginLine + block.size() + indent.size() + endMarker.size();
  return crdYaml.substr(0, afterBeginLine) + block + indent + crdYaml.substr(end);
}

// The same in every block: each served version of the CRD has its own copy of the schema.
std::string withRulesBlock(const std::string& crdYaml, const std::string& beginMarker, const std::string& endMarker,
                           const std::vector<CelRule>& rules) {
  size_t next = 0;
  auto out = withRulesBlockAt(crdYaml, 0, beginMarker, endMarker, rules, next);
  while (out.find(beginMarker, next) != std::string::npos) out = withRulesBlockAt(out, next, beginMarker, endMarker, rules, next);
  return out;
}
}  // namespace

std::string withCatalogRules(const std::string& crdYaml, const MachineCatalog& catalog) {
  auto onResources = withRulesBlock(crdYaml, kCatalogRulesBegin, kCatalogRulesEnd, joinedPerField(catalog.celRules()));
  // A fallback rule's message repeats its rule (it names the first offending fallback): joined, they
  // would grow the CRD past what client-side kubectl apply takes; each already stops at its first test
  // for a run without fallbacks.
  return withRulesBlock(onResources, kFallbackCatalogRulesBegin, kFallbackCatalogRulesEnd, catalog.fallbackCelRules());
}

}  // namespace vto::crd
