#pragma once
// An HttpTransport that answers from a script and records every request, for unit tests of the
// Vertex, GCS and auth clients.
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "vertex/api_error.h"
#include "vertex/http_transport.h"

namespace vto::testing {

class ScriptedTransport final : public vertex::HttpTransport {
 public:
  // A canned answer; `timeout` makes send() throw TransportError instead.
  struct Answer {
    int status = 200;
    std::string body = "{}";
    std::map<std::string, std::string> headers;
    bool timeout = false;
  };

  void enqueue(Answer answer) {
    std::lock_guard lock(mutex_);
    answers_.push_back(std::move(answer));
  }
  void enqueue(int status, std::string body, std::map<std::string, std::string> headers = {}) {
    enqueue(Answer{status, std::move(body), std::move(headers), false});
  }
  // Answers computed from the request, used once the queue is empty.
  void setHandler(std::function<Answer(const vertex::HttpRequest&)> handler) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
  }

  vertex::HttpResponse send(const vertex::HttpRequest& request) override {
    Answer answer;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
      if (!answers_.empty()) {
        answer = answers_.front();
        answers_.pop_front();
      } else if (handler_) {
        answer = handler_(request);
      } else {
        answer = Answer{500, R"({"error":{"code":500,"status":"INTERNAL","message":"no scripted answer"}})", {}, false};
      }
    }
    if (answer.timeout) throw vertex::TransportError("timed out (scripted)");
    return {answer.status, answer.headers, answer.body};
  }

  std::vector<vertex::HttpRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Answer> answers_;
  std::function<Answer(const vertex::HttpRequest&)> handler_;
  std::vector<vertex::HttpRequest> requests_;
};

}  // namespace vto::testing
