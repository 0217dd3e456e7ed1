#!/usr/bin/env bash
# Generates the Go stubs of proto/metaopt/v1 (package metaoptv1) into OUT_DIR/metaoptv1 with
# protoc, protoc-gen-go and protoc-gen-go-grpc (Debian: protobuf-compiler, protoc-gen-go,
# protoc-gen-go-grpc). The CMake build calls it for its copy of the module; in a checkout,
# `go generate` in clients/go writes them next to the sources (they are never committed).
#
#   generate.sh OUT_DIR [PROTO_DIR]     (PROTO_DIR: ../../proto from this script)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: generate.sh OUT_DIR [PROTO_DIR]}"
proto="${2:-$here/../../proto}"
module="github.com/metaopt/metaopt/clients/go"
protoc="${PROTOC:-protoc}"

for tool in "$protoc" protoc-gen-go protoc-gen-go-grpc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "generate.sh: $tool not found (Debian: apt install protobuf-compiler protoc-gen-go" \
      "protoc-gen-go-grpc)" >&2
    exit 1
  fi
done

# Every file maps to the one Go package; the service stubs come from optimizer_service.proto.
files=()
mappings=()
for path in "$proto"/metaopt/v1/*.proto; do
  file="metaopt/v1/$(basename "$path")"
  files+=("$file")
  mappings+=("M$file=$module/metaoptv1;metaoptv1")
done
opts="module=$module,$(IFS=,; echo "${mappings[*]}")"

mkdir -p "$out"
"$protoc" -I "$proto" --go_out="$out" --go_opt="$opts" "${files[@]}"
"$protoc" -I "$proto" --go-grpc_out="$out" --go-grpc_opt="$opts" metaopt/v1/optimizer_service.proto
