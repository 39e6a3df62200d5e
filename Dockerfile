# dynafold's container image: one static binary (no cgo) on distroless,
# running as a non-root user. See docs/kubernetes.md.
#
#   docker build -t dynafold:dev .
#   docker run --rm dynafold:dev version
#
# Entrypoint: /dynafold, so the arguments are a dynafold command line
# (default: --help). Port 9464 is the conventional --metrics-addr port
# (/metrics, /healthz, /readyz); nothing listens unless --metrics-addr is
# given. The working directory, /var/lib/dynafold, is where sync and
# migrate keep their local state (.dynafold/), writable by the user.
#
# The build line is `make static`'s (TestDockerfileBuildsAStaticBinary
# holds them together and, in the full tier, runs it and checks that the
# binary is static), so the binary can be reproduced without Docker.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o /out/dynafold ./cmd/dynafold
RUN mkdir -p /out/state

# distroless/static: CA certificates (for DynamoDB, S3 and TLS to the
# source), tzdata and /etc/passwd with nonroot (65532), no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dynafold /dynafold
COPY --from=build --chown=65532:65532 /out/state /var/lib/dynafold
USER 65532:65532
WORKDIR /var/lib/dynafold
EXPOSE 9464
ENTRYPOINT ["/dynafold"]
CMD ["--help"]
