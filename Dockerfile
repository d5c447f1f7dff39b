# The vto operator image: distroless, i.e. `FROM scratch` holding only the binary, the shared libraries
# it links, CA certificates, time zones and a passwd entry (no shell, no package manager). It packages
# the binary that `make build` produced on Debian 12 rather than compiling a second time inside the
# image (two cores make a second full C++ build the slowest step of every CI run), so the libraries are
# gathered in a first stage on the same Debian release.
# Build it with `make image` (buildah; no Docker engine needed).

# The first stage's base, pinned by digest: the build refuses a tag alone (a tag can move under you).
# scripts/image.sh passes the digest of the base it uses; a release pipeline passes the official one.
ARG BASE
FROM ${BASE} AS runtime
ARG BASE
RUN case "${BASE:-}" in *@sha256:*) ;; *) echo "BASE must be pinned by digest (name@sha256:...), got '${BASE:-}'" >&2; exit 1;; esac
# Runtime libraries only: the -dev packages used at build time pull these in on the build machine.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libspdlog1.10 libfmt9 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
      libyaml-cpp0.7 libssl3 libdate-tz3 libjemalloc2 tzdata
COPY build/bin/vto /usr/local/bin/vto
COPY scripts/image-rootfs.sh /usr/local/bin/image-rootfs.sh
RUN /usr/local/bin/image-rootfs.sh /rootfs

FROM scratch
COPY --from=runtime /rootfs /
# Non-root, numeric so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/vto"]
CMD ["run"]
