#pragma once
// Parsing the API server's answers (objects, lists, watch events) for a client that never reads
// metadata.managedFields: the field ownership of server-side apply, about half of a TrainingRun's
// bytes. Leaving it out while parsing, instead of building it and then erasing it, halves the
// parsing of every watch event and write answer.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vto::controller {

// Every JSON value; the members named "managedFields" of any member named "metadata" are left
// out. A malformed text gives a discarded value (is_discarded()), as json::parse without exceptions.
nlohmann::json parseWithoutManagedFields(std::string_view text);

// The object's metadata.resourceVersion, read without building anything and stopping there (the API
// server writes metadata before spec and status); empty when the text has none or is malformed.
std::string resourceVersionOf(std::string_view text);

}  // namespace vto::controller
