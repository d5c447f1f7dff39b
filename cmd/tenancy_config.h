#pragma once
// Tenancy rules from files: the `tenancy:` section of `vto run --config`, and the file given to
// `vto lint --tenancy` (that same config file, or a bare list of rules).
#include <string>

#include "cmd/flags.h"
#include "crd/validation.h"
#include "governance/tenancy.h"

namespace vto::cmd {

// Call before flags.parse() so that the config file may hold `tenancy:`.
void allowTenancySection(Flags& flags);
// The parsed rules (throws UsageError naming the field); with none, logs the startup warning that
// every namespace may use every project.
governance::TenancyRules tenancyRulesFromConfig(const Flags& flags);
struct TenancyFile {
  governance::TenancyRules rules;
  Location defaults;  // default-project/default-location when the file is the operator's config
};
// Throws UsageError naming the file and the field.
TenancyFile readTenancyFile(const std::string& path);

// `vto lint --tenancy`: the findings for one manifest object (TrainingRuns and RetrainingPolicies). The namespace
// comes from metadata.namespace ("default" when absent, as kubectl would); namespace labels are
// unknown offline, so a rule that selects by label is assumed to match, with a warning saying so.
std::vector<crd::Finding> tenancyFindings(const nlohmann::json& object, const TenancyFile& tenancy);

}  // namespace vto::cmd
