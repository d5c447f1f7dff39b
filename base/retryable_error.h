#pragma once
// The one error type the work queue understands: any remote API (kube, Vertex, GCS) throws a
// subclass of it, and the controller requeues the key with backoff, never sooner than retryAfter.
// Clients fail fast: they do not sleep and retry on a reconcile worker; the queue is the one
// backoff layer.
#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace vto {

class RetryableError : public std::runtime_error {
 public:
  explicit RetryableError(const std::string& what,
                          std::optional<std::chrono::milliseconds> retryAfter = std::nullopt)
      : std::runtime_error(what), retryAfter_(retryAfter) {}

  // The server's (or the client's own quota pacer's) "come back no sooner than this", already
  // clamped to a sane maximum by whoever parsed it.
  std::optional<std::chrono::milliseconds> retryAfter() const { return retryAfter_; }
  void setRetryAfter(std::optional<std::chrono::milliseconds> retryAfter) { retryAfter_ = retryAfter; }
  // False for answers that another try without a change will not fix (400, 403, 404): the queue
  // still backs off, but callers may stop early or report the error instead.
  virtual bool isRetryable() const { return true; }

 private:
  std::optional<std::chrono::milliseconds> retryAfter_;
};

// An answer from a remote API that is not success (the kube API server's, Vertex's, Cloud Storage's):
// one interface, so that every client's errors are asked the same questions the same way.
class RemoteApiError : public RetryableError {
 public:
  using RetryableError::RetryableError;
  // The HTTP status of the answer.
  virtual int httpStatus() const = 0;
  bool isNotFound() const { return httpStatus() == 404; }
  bool isForbidden() const { return httpStatus() == 403; }
};

// The longest any Retry-After is honoured: a server (or a proxy in front of it) asking for a day
// must not park a run for a day. Matches the work queue's longest per-key backoff order of magnitude.
inline constexpr std::chrono::milliseconds kMaxRetryAfter = std::chrono::minutes(5);

// Parses a Retry-After header value given in seconds ("120", "1.5"); nullopt for anything else
// (an HTTP-date, garbage, negative, NaN). Huge values (86400, 1e300) are clamped to `max`.
inline std::optional<std::chrono::milliseconds> parseRetryAfterSeconds(
    const std::string& text, std::chrono::milliseconds max = kMaxRetryAfter) {
  std::size_t used = 0;
  double seconds = 0;
  try {
    seconds = std::stod(text, &used);
  } catch (const std::exception&) {  // not a number, or out of double's range
    return std::nullopt;
  }
  while (used < text.size() && (text[used] == ' ' || text[used] == '\t')) ++used;
  if (used != text.size() || !(seconds >= 0)) return std::nullopt;  // trailing junk, negative, NaN
  // Compared as doubles before any conversion: casting 1e300 to an integer is undefined behaviour.
  double millis = seconds * 1000.0;
  if (millis >= static_cast<double>(max.count())) return max;
  return std::chrono::milliseconds(static_cast<long long>(millis));
}

}  // namespace vto
