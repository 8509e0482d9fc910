# syntax=docker/dockerfile:1
#
# AeroStream's image: one static binary (CGO off) on Alpine, run as a
# non-root user. Alpine rather than distroless because the Kubernetes
# manifests and the Helm chart compute node ids and run the store's
# preStop drain in a small sh script, and that preStop asks the Kubernetes
# API (with curl) whether the pod is being scaled away.
#
#   docker build -t aerostream:dev .           (or: make docker-build)
#   docker run --rm -p 9092:9092 -p 9091:9091 -p 9001:9001 aerostream:dev
#
# The default command is `serve`, the single-node AeroStream; the same image
# runs `controller`, `store` and `gateway kafka|native` for a cluster.

ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
# Modules first, so that a source change reuses the downloaded modules.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/aerostream/aerostream/tools/cli.version=${VERSION}" \
      -o /out/aerostream ./tools/aerostream

FROM alpine:${ALPINE_VERSION}
# ca-certificates: the cloud buckets are reached over https. curl: the
# Kubernetes store preStop asks the API server for its StatefulSet's scale.
RUN apk add --no-cache ca-certificates curl tzdata \
 && addgroup -S -g 10001 aerostream \
 && adduser -S -D -H -u 10001 -G aerostream -h /var/lib/aerostream aerostream \
 && mkdir -p /var/lib/aerostream \
 && chown aerostream:aerostream /var/lib/aerostream
COPY --from=build /out/aerostream /usr/local/bin/aerostream

# Inside a container the admin API (console, /api, /metrics, /healthz) must
# listen beyond loopback to be published at all; which ports reach the
# outside is then the `-p` and the network's business. Every key can still
# be overridden by its AEROSTREAM_* variable or a mounted config file
# (AEROSTREAM_CONFIG=/etc/aerostream/aerostream.toml).
ENV AEROSTREAM_DATA_DIR=/var/lib/aerostream \
    AEROSTREAM_LISTENERS_HTTP=0.0.0.0:9001 \
    AEROSTREAM_LOG_FORMAT=json

USER 10001:10001
WORKDIR /var/lib/aerostream
VOLUME ["/var/lib/aerostream"]
# Kafka, native, HTTP admin, shard ring, controller, schema registry.
EXPOSE 9092 9091 9001 7001 8001 8081

# `aerostream health` GETs /healthz on listeners.http (loopback when it
# binds every interface) and exits 0 only on 2xx, so the container is
# healthy when the node is ready, not merely running.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["aerostream", "health", "--timeout", "4s"]

ENTRYPOINT ["aerostream"]
CMD ["serve"]
