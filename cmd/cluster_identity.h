#pragma once
// Which operator instance this is, and the key that proves which Vertex jobs it made
// (reconcilers/jobs/ownership.h): `vto run --cluster-id` and `--ownership-key-file`.
#include <memory>
#include <stop_token>
#include <string>

#include "controller/kube_client.h"
#include "reconcilers/jobs/ownership.h"

namespace vto::cmd {

// `flag` when set, else the uid of the kube-system namespace: stable for the cluster's life, and
// different in a rebuilt one (which then adopts its runs' jobs only through what the runs carry).
// An API server that does not answer yet is asked again (a second apart, then up to 10 s) until
// `stop`. Throws UsageError saying what to grant or set when the answer is a refusal.
std::string resolveClusterId(controller::KubeClient& kube, const std::string& flag, std::stop_token stop);

// The operator's job ownership: the cluster id with the keys of `keyFile` ("" : no key, so jobs
// are told apart by their vto-cluster label alone, with a warning at start). Throws UsageError
// naming the file and what is wrong with it.
std::unique_ptr<reconcilers::JobOwnership> jobOwnership(const std::string& clusterId, const std::string& keyFile);

}  // namespace vto::cmd
