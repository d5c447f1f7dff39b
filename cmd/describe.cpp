// vto describe: a TrainingRun's identity and adoption in words: the cluster identity the operator
// uses, the uids the run has had, who made each attempt's Vertex job and whose it is, and what the
// operator said about adopting or ignoring jobs. Read with the user's kubeconfig and Google credentials
// (as `vto logs`); the formatting is cmd/describe.h's.
#include <iostream>
#include <stop_token>

#include "base/utf8.h"
#include "cmd/cluster_identity.h"
#include "cmd/commands.h"
#include "cmd/describe.h"
#include "cmd/flags.h"
#include "cmd/user_access.h"
#include "controller/api_error.h"
#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {
namespace {

Flags describeFlags() {
  return Flags(
      "describe",
      "vto describe trun/NAME [-n NAMESPACE] [flags]: says, kubectl-describe style, whose a TrainingRun's Vertex\n"
      "jobs are: the cluster identity the operator uses (--cluster-id, else the kube-system namespace's uid, as\n"
      "the operator computes it), the uids the run has had (the annotation vto.dev/run-uids: the runs it was,\n"
      "for a run restored from a backup), and for each attempt's job (the newest 10, one read each) who made\n"
      "it and whose it is, from the job's labels: this cluster for this run, for an earlier run of this name\n"
      "(taken over), the release before, another cluster, or started outside vto (the run's own when its\n"
      "spec.adoptJob names it). Then the run's JobAdopted,\n"
      "AdoptionRefused and ForeignJobIgnored Events (the newest 10). Also `kubectl vto describe`.\n\n"
      "The run and its Events are read with your kubeconfig, the jobs with your Google credentials\n"
      "(roles/aiplatform.viewer on the run's project; as `vto logs`). A job that cannot be read, or Events\n"
      "you may not list, are said so and the rest is printed. Labels say who made a job but anyone who may\n"
      "create a Vertex job can copy them: --ownership-key-file with the operator's key (the chart's\n"
      "<release>-vto-ownership Secret, its ownership.yaml) checks each job's vto-owner tag as the operator does.\n\n"
      "Exit status 2: no such run, or a bad flag; 1: another error reading the run.",
      {{"namespace", 'n', "", "the run's namespace (default: the kubeconfig context's)"},
       {"cluster-id", 0, "", "the operator's cluster identity (the chart's clusterId); default: the kube-system namespace's uid"},
       {"ownership-key-file", 0, "", "the operator's ownership key file (ownership.yaml of its Secret): check the jobs' vto-owner tags"},
       {"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then ~/.kube/config, then the in-cluster service account"},
       {"vertex-endpoint", 0, "", "Vertex AI base URL (default $VERTEX_EMULATOR, else https://LOCATION-aiplatform.googleapis.com)"},
       {"allow-insecure-endpoints", 0, "false", "allow plain http (credentials in the clear) to a non-loopback endpoint", true}});
}

std::string bounded(const std::string& text, size_t max = 300) {
  auto cut = utf8PrefixLength(text, max);
  return escapeControls(std::string_view(text).substr(0, cut)) + (cut < text.size() ? "..." : "");
}

// Why a job could not be read, in words.
std::string jobReadError(const vertex::ApiError& error, const std::string& jobName) {
  if (error.httpStatus() == 404) return "Vertex AI says it does not exist (404)";
  if (error.httpStatus() == 403) {
    std::string project;
    try {
      project = vertex::locationOf(jobName).project;
    } catch (const std::exception&) {
    }
    return "permission denied (403): reading a job takes roles/aiplatform.viewer on " +
           (project.empty() ? std::string("the run's project") : project);
  }
  return bounded(error.what());
}

}  // namespace

int describe(const Args& args) {
  auto flags = describeFlags();
  std::vector<std::string> positionals;
  if (!flags.parse(args, &positionals)) return 0;
  if (positionals.size() != 1) {
    throw UsageError("give one TrainingRun: vto describe trun/NAME [-n NAMESPACE] ('vto describe --help' lists the flags)");
  }
  auto name = runNameOf(positionals[0], "describe");
  bool allowInsecure = flags.getBool("allow-insecure-endpoints");
  auto vertexEndpoint = userVertexEndpoint(flags.get("vertex-endpoint"), allowInsecure);

  // The run, as the user may read it.
  auto restConfig = controller::resolveRestConfig(kubeconfigPath(flags.get("kubeconfig")), allowInsecure);
  auto ns = flags.get("namespace").empty() ? restConfig.defaultNamespace : flags.get("namespace");
  controller::RestKubeClient kube(restConfig);
  DescribeInput input;
  try {
    input.run = kube.get(reconcilers::trainingRunResource(), ns, name);
  } catch (const controller::ApiError& error) {
    if (error.isNotFound()) throw UsageError("trainingrun " + name + " not found in namespace " + ns);
    throw;
  }
  RealClock clock;
  input.now = clock.now();

  // The cluster identity, as the operator computes it (one try: a command does not wait for the API server).
  std::stop_source stopped;
  stopped.request_stop();
  if (!flags.get("cluster-id").empty()) {
    input.clusterId = resolveClusterId(kube, flags.get("cluster-id"), stopped.get_token());  // UsageError when invalid
    input.clusterIdSource = "--cluster-id";
  } else {
    try {
      input.clusterId = resolveClusterId(kube, "", stopped.get_token());
      input.clusterIdSource = "the kube-system namespace's uid, the operator's default; pass --cluster-id if it runs with clusterId";
    } catch (const std::exception&) {
      input.clusterIdSource = "the kube-system namespace's uid could not be read (your access may not get "
                              "namespaces/kube-system); pass --cluster-id (the chart's clusterId)";
    }
  }
  std::unique_ptr<reconcilers::JobOwnership> ownership;
  if (auto keyFile = flags.get("ownership-key-file"); !keyFile.empty()) {
    if (input.clusterId.empty()) throw UsageError("--ownership-key-file checks tags of a cluster identity: pass --cluster-id too");
    ownership = jobOwnership(input.clusterId, keyFile);
    input.ownership = ownership.get();
  }

  // Each attempt's job, with the user's Google credentials: at most kDescribeMaxJobReads GETs.
  auto toRead = jobsToRead(input.run);
  vertex::PooledHttpTransport http;
  std::unique_ptr<vertex::CachedTokenSource> tokens;
  if (!toRead.empty()) {
    try {
      tokens = userTokenSource(http, clock, vertexEndpoint);
    } catch (const vertex::AuthError& error) {
      input.jobsNote = "the jobs were not read: no Google credentials (" + bounded(error.what(), 200) +
                       "; run `gcloud auth application-default login`)";
    }
  }
  if (tokens) {
    vertex::VertexClientOptions options;
    options.endpoint = vertexEndpoint;
    options.allowInsecure = allowInsecure;
    options.timeout = std::chrono::seconds(15);
    vertex::RestVertexClient vertexClient(http, *tokens, clock, options);
    std::string silent;  // once Vertex does not answer, the later reads are not tried
    for (const auto& [attempt, jobName] : toRead) {
      JobRead read;
      if (!silent.empty()) {
        read.error = silent;
      } else {
        try {
          auto job = vertexClient.getJob(jobName);
          read.read = true;
          read.labels = std::move(job.labels);
          read.state = std::string(vertex::jobStateName(job.state));
          read.createTime = job.createTime;
        } catch (const vertex::ApiError& error) {
          read.error = jobReadError(error, jobName);
        } catch (const TransportError& error) {
          read.error = "no answer from Vertex AI (" + bounded(error.what(), 200) + ")";
          silent = "not tried: Vertex AI did not answer an earlier read";
        } catch (const std::exception& error) {
          read.error = bounded(error.what());
        }
      }
      input.jobs[attempt] = std::move(read);
    }
  }

  // The run's Events, if the user may list them.
  static const controller::Resource events{"", "v1", "events", true};
  controller::ListOptions options;
  options.fieldSelector = "involvedObject.kind=TrainingRun,involvedObject.name=" + name;
  options.limit = 500;
  try {
    nlohmann::json items = nlohmann::json::array();
    for (int page = 0; page < 4; ++page) {
      auto listed = kube.list(events, ns, options);
      for (auto& item : listed.items) items.push_back(std::move(item));
      options.continueToken = listed.continueToken;
      if (options.continueToken.empty()) break;
    }
    input.events = std::move(items);
  } catch (const controller::ApiError& error) {
    input.eventsNote = error.httpStatus() == 403
                           ? "your Kubernetes access may not list Events in namespace " + ns + " (403 Forbidden)"
                           : "listing Events failed: " + bounded(error.what(), 200);
  } catch (const std::exception& error) {
    input.eventsNote = "listing Events failed: " + bounded(error.what(), 200);
  }

  std::cout << describeRun(input);
  return 0;
}

}  // namespace vto::cmd
