#pragma once
// What the metrics layer learns about each request vto sends to Google: an ObservedTransport wraps
// the HttpTransport a client uses and reports every HTTP exchange (retries included) to a
// RequestObserver; RestVertexClient also reports the time it waited for its own pacer. The
// interface keeps vertex/ free of Prometheus; cmd/ wires in metrics::ApiRequestMetrics.
#include <chrono>
#include <string>

#include "base/clock.h"
#include "vertex/http_transport.h"

namespace vto::vertex {

class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  // One HTTP exchange. `method` is the API method (e.g. "CreateCustomJob"); `code` the HTTP status,
  // or "<error>" when no answer arrived (as client-go and controller-runtime say).
  virtual void requestDone(const std::string& method, const std::string& code, Clock::duration took) = 0;
  // Time one call spent waiting for the client-side pacer before its first request.
  virtual void quotaWaited(Clock::duration waited) = 0;
  // The exchange just reported as "<error>" got no answer before its deadline (a TimeoutError).
  virtual void timedOut() {}
};

// The Vertex AI REST method an HTTP request calls, from its verb and path: "CreateCustomJob",
// "GetHyperparameterTuningJob", "ListCustomJobs", "CancelCustomJob", "DeleteCustomJob",
// "GetOperation", and the Model Registry's "UploadModel", "GetModel", "ListModelVersions",
// "MergeVersionAliases", "ImportModelEvaluation", "ListModelEvaluations"; "Other" for anything else
// (a bounded label set whatever the URL).
std::string vertexMethodOf(const HttpRequest& request);
// The Cloud Logging method: "ListLogEntries" (POST /v2/entries:list), or "Other".
std::string loggingMethodOf(const HttpRequest& request);
// The Cloud Storage JSON API method: "ListObjects", "GetObject", "InsertObject", "InsertBucket",
// "GetBucket", or "Other".
std::string gcsMethodOf(const HttpRequest& request);

// Forwards to `inner` and reports each exchange to `observer`, timed on `clock`.
class ObservedTransport final : public HttpTransport {
 public:
  using MethodOf = std::string (*)(const HttpRequest&);
  ObservedTransport(HttpTransport& inner, const Clock& clock, RequestObserver& observer, MethodOf methodOf)
      : inner_(inner), clock_(clock), observer_(observer), methodOf_(methodOf) {}
  HttpResponse send(const HttpRequest& request) override;

 private:
  HttpTransport& inner_;
  const Clock& clock_;
  RequestObserver& observer_;
  MethodOf methodOf_;
};

}  // namespace vto::vertex
