#pragma once
// Each `vto` subcommand is one function in its own file; main.cpp only dispatches.
// args holds what follows the subcommand's name.
#include <string>
#include <vector>

namespace vto::cmd {
using Args = std::vector<std::string>;
int version(const Args& args);
int crd(const Args& args);     // print the CRDs
int lint(const Args& args);    // validate manifests offline
int render(const Args& args);  // print the Vertex request bodies
int run(const Args& args);     // the operator
int schedule(const Args& args);  // print the next fire times of a schedule
int logs(const Args& args);      // print (and follow) a TrainingRun's job log
int prices(const Args& args);    // print the price table cost estimates use
int cost(const Args& args);      // a month's spend of the cluster's runs, as a table
int migrate(const Args& args);   // rewrite stored objects at the storage version
int describe(const Args& args);  // whose a TrainingRun's jobs are: cluster identity, run uids, adoption
// As kubectl finds it: the flag, $KUBECONFIG, then ~/.kube/config ("" leaves the in-cluster account to
// resolveRestConfig). For the commands that read the cluster with the user's kubeconfig.
std::string kubeconfigPath(const std::string& flag);
}  // namespace vto::cmd
