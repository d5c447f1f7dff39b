#pragma once
// A TokenSource that hands out numbered tokens ("token-1", "token-2", ...) and counts its calls.
#include <atomic>
#include <string>

#include "vertex/auth.h"

namespace vto::testing {

class CountingTokenSource final : public vertex::TokenSource {
 public:
  vertex::AccessToken token() override {
    ++calls;
    return {"token-" + std::to_string(generation.load()), Clock::time_point::max()};
  }
  void invalidate() override {
    ++invalidations;
    ++generation;
  }
  std::atomic<int> calls{0}, invalidations{0}, generation{1};
};

}  // namespace vto::testing
