#pragma once
// The HTTP client lives in base/ (the kube client uses it too); the Vertex layer's names for it.
#include "base/http_transport.h"

namespace vto::vertex {

using vto::HttpRequest;
using vto::HttpResponse;
using vto::HttpTransport;
using vto::HttpTransportOptions;
using vto::PooledHttpTransport;
using vto::TimeoutError;
using vto::TransportError;
// The former name (the transport was cpprestsdk's client): kept so that callers compile unchanged.
using CppRestTransport = PooledHttpTransport;

// Percent-encoding lives with the URL builder in base/url.h.
using vto::urlEncode;

}  // namespace vto::vertex
