# berth's default image: the static binary (embedded store, PostgreSQL, NATS; FoundationDB is
# in Dockerfile.fdb) on an empty base, run as an unprivileged user (65532), data in /data.
#
#   docker build -t berth --build-arg VERSION=$(git describe --always) .
#   podman build --format docker -t berth .     # the OCI format drops HEALTHCHECK
#   docker run -d -p 6420:6420 -v berth-data:/data --stop-timeout 30 \
#       -e BERTH__auth__admin_token=... berth
#
# docs/deploy.md explains each choice. deploy/container/Dockerfile.prebuilt makes the same
# image around a binary built outside (tests/image uses it): keep the instructions after
# `FROM scratch` alike in both files; the test compares them.
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
ARG VERSION=dev
ARG GIT_SHA=unknown
WORKDIR /src
# The Go SDK is a module of its own that go.mod replaces with ./sdk: its go.mod must be there
# for the download to resolve.
COPY go.mod go.sum ./
COPY sdk/go.mod sdk/go.sum ./sdk/
RUN go mod download
COPY . .
RUN mkdir -p /rootfs/etc/ssl/certs /data \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.gitSHA=${GIT_SHA} -X main.buildTimestamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      -o /rootfs/berth ./engine/cmd/berth

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /data /data
# The guard port on every IPv4 address: without auth.admin_token (or auth.allow_anonymous)
# berth then refuses to start, instead of serving only the container's loopback.
ENV BERTH__database__url=file:///data/berth \
    BERTH__guard__host=0.0.0.0 \
    BERTH_ENDPOINT=http://127.0.0.1:6420
USER 65532:65532
VOLUME ["/data"]
EXPOSE 6420 6421 6430
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 CMD ["/berth", "health"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/berth"]
CMD ["start"]
