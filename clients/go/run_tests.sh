#!/usr/bin/env bash
# Runs go vet and go test on the Go client module the CMake build assembled, offline, against the
# real metaopt-server. Exits 77 (ctest: skipped) only when there is no Go toolchain.
#
#   run_tests.sh MODULE_DIR GOPATH_WORKSPACE SERVER_BINARY
set -euo pipefail

module_dir="${1:?usage: run_tests.sh MODULE_DIR GOPATH_WORKSPACE SERVER_BINARY}"
workspace="${2:?}"
server="${3:?}"
debian_gocode=/usr/share/gocode

if ! command -v go >/dev/null 2>&1; then
  echo "go_client_test: skipped: no Go toolchain (scripts/install-deps.sh installs golang-go)"
  exit 77
fi
if [[ ! -f "$module_dir/metaoptv1/optimizer_service_grpc.pb.go" ]]; then
  echo "go_client_test: the stubs were not generated in $module_dir/metaoptv1: install" \
    "protoc-gen-go and protoc-gen-go-grpc (scripts/install-deps.sh), re-run cmake and build" >&2
  exit 1
fi
for package in google.golang.org/grpc google.golang.org/protobuf golang.org/x/net; do
  if [[ ! -d "$debian_gocode/src/$package" ]]; then
    echo "go_client_test: $debian_gocode/src/$package is missing: scripts/install-deps.sh" \
      "installs Debian's Go sources (golang-google-grpc-dev, golang-google-protobuf-dev)" >&2
    exit 1
  fi
done

# GOPATH mode, as Debian's dh-golang builds: the workspace first, then Debian's sources; no
# module downloads, no toolchain downloads.
export GOPATH="$workspace:$debian_gocode"
export GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
export GOCACHE="${GOCACHE:-$workspace/../gocache}"
export METAOPT_SERVER_BINARY="$server"

cd "$module_dir"
go version
go vet ./...
exec go test -count=1 -v ./...
