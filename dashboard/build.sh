#!/usr/bin/env bash
# Bundles the dashboard into OUT_DIR (index.html, assets/app.js, assets/app.css):
#   bash build.sh OUT_DIR [--if-available] [--stamp=FILE]
# With Node and dashboard/node_modules (scripts/install-deps.sh's test set) through build.mjs and
# the esbuild that package-lock.json pins; otherwise with Debian's esbuild command (the build set),
# so that scripts/serve.sh serves the page without Node. With --if-available (the CMake build) no
# bundler at all is a warning, not an error; --stamp touches FILE after a successful build only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="" optional=false stamp=""
for arg in "$@"; do
  case "$arg" in
    --if-available) optional=true ;;
    --stamp=*) stamp="${arg#--stamp=}" ;;
    *) out="$arg" ;;
  esac
done
[[ -n "$out" ]] || { echo "usage: build.sh OUT_DIR [--if-available] [--stamp=FILE]" >&2; exit 2; }
[[ -z "$stamp" ]] || rm -f "$stamp"

if command -v node >/dev/null 2>&1 && [[ -d "$here/node_modules/esbuild" ]]; then
  exec node "$here/build.mjs" "$@"
fi
if ! command -v esbuild >/dev/null 2>&1; then
  prefix="dashboard: "; [[ "$optional" == true ]] && prefix+="warning: not built: "
  echo "${prefix}neither dashboard/node_modules (with node) nor" \
    "an esbuild command is installed; run scripts/install-deps.sh" >&2
  [[ "$optional" == true ]] && exit 0 || exit 1
fi
rm -rf "$out"
mkdir -p "$out/assets"
# The same options as build.mjs.
esbuild "app=$here/src/main.js" --bundle --format=esm --target=es2020 --minify --sourcemap \
  "--outdir=$out/assets" --log-level=warning
cp "$here/index.html" "$out/index.html"
[[ -z "$stamp" ]] || date -u +%FT%TZ >"$stamp"
echo "dashboard: built $out (esbuild $(esbuild --version))"
