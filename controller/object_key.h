#pragma once
// The identity a reconciler receives: namespace and name only, never the object itself, so that
// every pass reads fresh state (reconciliation is level-based).
#include <compare>
#include <string>

namespace vto::controller {

struct ObjectKey {
  std::string ns;  // empty for cluster-scoped objects
  std::string name;

  auto operator<=>(const ObjectKey&) const = default;
  // "namespace/name", or "name" when cluster-scoped: the form kubectl and logs use.
  std::string str() const { return ns.empty() ? name : ns + "/" + name; }
};

}  // namespace vto::controller
