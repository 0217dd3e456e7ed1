# Source it (`. clients/go/offline-env.sh`, from anywhere in the checkout) to build and run the Go
# client and its example offline, with no module proxy: GOPATH mode, as Debian builds Go packages,
# over this checkout's module and the Go sources that Debian's golang-google-grpc-dev and
# golang-google-protobuf-dev install in /usr/share/gocode (scripts/install-deps.sh, test set).
# It also generates the stubs (metaoptv1/, never committed) when they are missing or older than
# proto/. Module mode cannot run offline here: grpc 1.33's go.mod requires modules that Debian does
# not ship, whose go.mod files Go would download.
_metaopt_go_dir="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
_metaopt_root="$(cd "$_metaopt_go_dir/../.." && pwd)"
_metaopt_workspace="${METAOPT_BUILD_DIR:-$_metaopt_root/build}/go-offline"
# The import path github.com/metaopt/metaopt/clients/go resolves through this link.
mkdir -p "$_metaopt_workspace/src/github.com/metaopt/metaopt/clients"
ln -sfn "$_metaopt_go_dir" "$_metaopt_workspace/src/github.com/metaopt/metaopt/clients/go"
export GOPATH="$_metaopt_workspace:/usr/share/gocode"
export GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
if [[ ! -f "$_metaopt_go_dir/metaoptv1/optimizer_service_grpc.pb.go" ||
      -n "$(find "$_metaopt_root/proto/metaopt/v1" -name '*.proto' \
              -newer "$_metaopt_go_dir/metaoptv1/optimizer_service_grpc.pb.go")" ]]; then
  bash "$_metaopt_go_dir/generate.sh" "$_metaopt_go_dir" "$_metaopt_root/proto"
fi
unset _metaopt_go_dir _metaopt_root _metaopt_workspace
