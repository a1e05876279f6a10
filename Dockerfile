# berth built with the FoundationDB driver (-tags fdb). The build needs the
# FoundationDB client's headers and library, the runtime its library: both
# come from the foundationdb-clients package of the same 7.3 release as the
# server (API version 730).
ARG FDB_VERSION=7.3.69

FROM golang:1.26-bookworm AS build
ARG FDB_VERSION
RUN curl -fsSL -o /tmp/fdb-clients.deb \
      "https://github.com/apple/foundationdb/releases/download/${FDB_VERSION}/foundationdb-clients_${FDB_VERSION}-1_amd64.deb" \
 && dpkg -i /tmp/fdb-clients.deb
WORKDIR /src
# The Go SDK is a module of its own that go.mod replaces with ./sdk: its go.mod must be there
# for the download to resolve.
COPY go.mod go.sum ./
COPY sdk/go.mod sdk/go.sum ./sdk/
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -tags fdb -trimpath -o /out/berth ./engine/cmd/berth

FROM debian:bookworm-slim
COPY --from=build /tmp/fdb-clients.deb /tmp/fdb-clients.deb
RUN dpkg -i /tmp/fdb-clients.deb && rm /tmp/fdb-clients.deb
COPY --from=build /out/berth /usr/local/bin/berth
EXPOSE 6420 6421 6430
ENTRYPOINT ["berth"]
CMD ["start"]
