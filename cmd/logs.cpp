// vto logs: a TrainingRun's job log from Cloud Logging, read with the user's own kubeconfig and
// Google credentials (never the operator's). Wiring only: the printing and following live in
// cmd/job_logs.h.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/job_logs.h"
#include "cmd/user_access.h"
#include "controller/kube_client.h"
#include "controller/rest_config.h"
#include "crd/duration.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "vertex/api_error.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/logging_client.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {
namespace {

Flags logsFlags() {
  return Flags(
      "logs",
      "vto logs trun/NAME [-n NAMESPACE] [flags]: prints the job log of a TrainingRun's attempt from Cloud\n"
      "Logging, one line per entry: time (UTC), replica, severity, message. The run is read with your\n"
      "kubeconfig, the log and the job with your Google credentials (GOOGLE_APPLICATION_CREDENTIALS, then\n"
      "`gcloud auth application-default login`'s file, then the metadata server): you need\n"
      "roles/logging.viewer and roles/aiplatform.viewer on the run's project. Also `kubectl vto logs`.\n\n"
      "With -f it follows the log until the job ends and exits 0 when the job succeeded, 1 when it failed,\n"
      "was cancelled or expired. Exit status 2: no such run, no job yet, no such attempt, no Google\n"
      "credentials, or a bad flag; 1: another error (e.g. permission denied).\n\n"
      "An emulator: --vertex-endpoint http://127.0.0.1:PORT (or $VERTEX_EMULATOR) serves the log too unless\n"
      "--logging-endpoint says otherwise, and a loopback emulator also answers for the metadata server's\n"
      "token when no other credentials are set.",
      {{"namespace", 'n', "", "the run's namespace (default: the kubeconfig context's)"},
       {"attempt", 0, "", "the attempt whose job to read (default: the newest attempt with a job)"},
       {"follow", 'f', "false", "follow the log until the job ends", true},
       {"since", 0, "", "only entries newer than this, e.g. 10m, 1h30m or 600 (seconds)"},
       {"tail", 0, "", "only the newest N entries (then new ones with -f; default: all)"},
       {"replica", 0, "", "only this replica's entries, e.g. workerpool0-0 (the primary) or workerpool1-2"},
       {"severity", 0, "", "only entries at or above this severity: DEBUG, INFO, WARNING, ERROR, CRITICAL"},
       {"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then ~/.kube/config, then the in-cluster service account"},
       {"vertex-endpoint", 0, "", "Vertex AI base URL (default $VERTEX_EMULATOR, else https://LOCATION-aiplatform.googleapis.com)"},
       {"logging-endpoint", 0, "", "Cloud Logging base URL (default: --vertex-endpoint when set, else https://logging.googleapis.com)"},
       {"allow-insecure-endpoints", 0, "false", "allow plain http (credentials in the clear) to a non-loopback endpoint", true},
       // Tests only: -f's poll interval in seconds (default 10: Cloud Logging's 60 reads a minute are
       // the whole project's).
       {"poll-interval", 0, "10", "", false, false, true}});
}

JobLogOptions optionsFrom(const Flags& flags, const Clock& clock) {
  JobLogOptions options;
  options.follow = flags.getBool("follow");
  options.pollInterval = std::chrono::seconds(std::clamp(flags.getInt("poll-interval"), 1, 600));
  options.replica = flags.get("replica");
  if (!options.replica.empty() && !vertex::isReplicaName(options.replica)) {
    throw UsageError("--replica \"" + options.replica.substr(0, 64) +
                     "\" is not a replica name; write workerpoolN-M, e.g. workerpool0-0 (the primary)");
  }
  if (auto since = flags.get("since"); !since.empty()) {
    auto seconds = crd::parseDurationSeconds(since);
    if (!seconds || *seconds <= 0) {
      throw UsageError("--since \"" + since.substr(0, 64) + "\" is not a positive duration; write e.g. 10m, 2h or 90s");
    }
    options.since = clock.now() - std::chrono::seconds(*seconds);
  }
  if (!flags.get("tail").empty()) {
    options.tail = flags.getInt("tail");
    if (options.tail < 0 || options.tail > 100000) throw UsageError("--tail must be a number from 0 to 100000");
  }
  if (auto severity = flags.get("severity"); !severity.empty()) {
    options.minSeverity = vertex::severityFromName(severity);
    if (!options.minSeverity) {
      throw UsageError("--severity \"" + severity.substr(0, 32) + "\" is not a severity; write DEBUG, INFO, NOTICE, "
                       "WARNING, ERROR, CRITICAL, ALERT or EMERGENCY");
    }
  }
  return options;
}

}  // namespace

std::string kubeconfigPath(const std::string& flag) {
  if (!flag.empty() || vertex::processEnv("KUBECONFIG")) return flag;
  auto home = vertex::processEnv("HOME");
  if (home && std::filesystem::exists(*home + "/.kube/config")) return *home + "/.kube/config";
  return "";
}

int logs(const Args& args) {
  auto flags = logsFlags();
  std::vector<std::string> positionals;
  if (!flags.parse(args, &positionals)) return 0;
  if (positionals.size() != 1) {
    throw UsageError("give one TrainingRun: vto logs trun/NAME [-n NAMESPACE] ('vto logs --help' lists the flags)");
  }
  auto name = runNameOf(positionals[0], "logs");
  RealClock clock;
  auto options = optionsFrom(flags, clock);
  int attempt = flags.get("attempt").empty() ? 0 : flags.getInt("attempt");
  if (attempt < 0 || (attempt == 0 && !flags.get("attempt").empty())) throw UsageError("--attempt must be 1 or more");
  bool allowInsecure = flags.getBool("allow-insecure-endpoints");
  auto vertexEndpoint = userVertexEndpoint(flags.get("vertex-endpoint"), allowInsecure);
  auto loggingEndpoint = flags.get("logging-endpoint");
  if (loggingEndpoint.empty()) loggingEndpoint = vertexEndpoint.empty() ? "https://logging.googleapis.com" : vertexEndpoint;
  checkedEndpoint(loggingEndpoint, "--logging-endpoint", allowInsecure);

  // The run, as the user may read it.
  auto restConfig = controller::resolveRestConfig(kubeconfigPath(flags.get("kubeconfig")), allowInsecure);
  auto ns = flags.get("namespace").empty() ? restConfig.defaultNamespace : flags.get("namespace");
  controller::RestKubeClient kube(restConfig);
  nlohmann::json run;
  try {
    run = kube.get(reconcilers::trainingRunResource(), ns, name);
  } catch (const controller::ApiError& error) {
    if (error.isNotFound()) throw UsageError("trainingrun " + name + " not found in namespace " + ns);
    throw;
  }
  auto jobName = jobOfAttempt(runJobsOf(run), attempt);

  // Google, with the user's own credentials.
  vertex::PooledHttpTransport http;
  // A first token: missing credentials are one clear message.
  auto tokens = userTokensOrSignIn(http, clock, vertexEndpoint, "to read logs as yourself");
  vertex::VertexClientOptions vertexOptions;
  vertexOptions.endpoint = vertexEndpoint;
  vertexOptions.allowInsecure = allowInsecure;
  vertex::RestVertexClient vertexClient(http, *tokens, clock, vertexOptions);
  vertex::LoggingClientOptions loggingOptions;
  loggingOptions.endpoint = loggingEndpoint;
  loggingOptions.allowInsecure = allowInsecure;
  vertex::RestLoggingClient logging(http, *tokens, clock, loggingOptions);
  vertex::RealSleeper sleeper;
  try {
    return printJobLogs(jobName, options, {logging, vertexClient, clock, sleeper, std::cout, std::cerr});
  } catch (const vertex::ApiError& error) {
    if (error.httpStatus() != 403) throw;
    throw std::runtime_error(std::string(error.what()) + " (reading a job's log takes roles/logging.viewer, and -f "
                             "also roles/aiplatform.viewer, on " + vertex::locationOf(jobName).project + ")");
  }
}

}  // namespace vto::cmd
