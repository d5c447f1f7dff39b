#pragma once
// Why a Vertex job failed, from its state and `error` (google.rpc.Status: rpc code + message), as the
// classes the user names in spec.checkpointing.resumeOn. Table-driven: the first rule that matches
// wins, messages before codes because Vertex reuses codes (a preemption is UNAVAILABLE, and so is a
// passing outage).
#include <optional>
#include <string>

#include "crd/training_run.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

// For a FAILED or EXPIRED job; Unknown when nothing matches (never AnyFailure).
crd::FailureClass classifyFailure(vertex::JobState state, const std::optional<vertex::RpcStatus>& error);
// Whether Vertex refused a create for an accelerator quota of the region (429 RESOURCE_EXHAUSTED
// naming aiplatform.googleapis.com/custom_model_training_*): that place has no capacity for the run.
bool isAcceleratorQuotaRefusal(int httpStatus, const std::string& message);

}  // namespace vto::reconcilers
