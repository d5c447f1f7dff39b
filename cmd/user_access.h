#pragma once
// What the commands that act as the user (`vto logs`, `vto describe`) share: the run named on the
// command line, the endpoints that receive the user's credentials, and the user's own Google token
// (never the operator's).
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"

namespace vto::cmd {

// trun/NAME, trainingrun/NAME, trainingruns.vto.dev/NAME or NAME; throws UsageError for another kind
// ("`vto COMMAND` reads TrainingRuns: write trun/NAME, not ...") or a name that is not a Kubernetes name.
std::string runNameOf(const std::string& argument, const std::string& command);

// `url` when it may receive a credential (https, or http to loopback or with `allowInsecure`); throws
// UsageError naming `flag` otherwise.
std::string checkedEndpoint(const std::string& url, const char* flag, bool allowInsecure);

// A Vertex emulator on this machine also plays the metadata server (as in tests and `make demo`):
// its host:port, when the Vertex endpoint is plain http to a loopback host (Google's are https).
std::optional<std::string> emulatorMetadataHost(const std::string& vertexEndpoint);

// The user's Google credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default file, the
// metadata server, or the emulator's for a loopback `vertexEndpoint`), with a first token already
// fetched, so that missing credentials are one clear vertex::AuthError here.
std::unique_ptr<vertex::CachedTokenSource> userTokenSource(vertex::HttpTransport& http, const Clock& clock,
                                                           const std::string& vertexEndpoint);

// The Vertex endpoint a command sends the user's token to: `flag` (--vertex-endpoint), else
// $VERTEX_EMULATOR, checked as checkedEndpoint does; "" for Google's regional endpoints.
std::string userVertexEndpoint(const std::string& flag, bool allowInsecure);

// userTokenSource, with missing credentials a UsageError that says how to sign in; `purpose` says what
// the token is for ("to read logs as yourself").
std::unique_ptr<vertex::CachedTokenSource> userTokensOrSignIn(vertex::HttpTransport& http, const Clock& clock,
                                                              const std::string& vertexEndpoint, const std::string& purpose);

}  // namespace vto::cmd
