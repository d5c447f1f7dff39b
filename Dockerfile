# The vto operator image. It packages the binary that `make build` produced on Debian 12 (the same
# release as this base, so the shared libraries match) rather than compiling a second time inside the
# image: two cores make a second full C++ build the slowest step of every CI run.
# Build it with `make image` (buildah; no Docker engine needed).
FROM docker.io/library/debian:bookworm-slim

# Runtime libraries only: the -dev packages used at build time pull these in on the build machine.
# libdate-tz3 and tzdata: RetrainingPolicy schedules read IANA time zones from /usr/share/zoneinfo.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcpprest2.10 libspdlog1.10 libfmt9 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
      libyaml-cpp0.7 libssl3 libdate-tz3 tzdata \
 && rm -rf /var/lib/apt/lists/*

COPY build/bin/vto /usr/local/bin/vto

# Non-root, numeric so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/vto"]
CMD ["run"]
