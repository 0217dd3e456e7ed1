#!/usr/bin/env bash
# Every example program prints its usage for --help and exits 0: the Python examples, the Node
# example, the C++ example and the Go example (built offline through clients/go/offline-env.sh).
#   examples_help_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

root="${1:?usage: examples_help_test.sh SOURCE_DIR BUILD_DIR}"
build="${2:?usage: examples_help_test.sh SOURCE_DIR BUILD_DIR}"
failed=0 passed=0

# check NAME COMMAND...: COMMAND --help exits 0 and prints a line with "usage" (any case).
check() {
  local name="$1" output status
  shift
  output="$("$@" --help 2>&1)"
  status=$?
  if [[ $status -ne 0 ]] || ! grep -qi usage <<<"$output"; then
    echo "FAILED: $name --help (exit $status):"
    echo "$output" | head -20
    failed=$((failed + 1))
  else
    echo "ok: $name --help"
    passed=$((passed + 1))
  fi
}

export PYTHONPATH="$build/clients/python"
for example in "$root"/clients/python/examples/*.py; do
  check "clients/python/examples/$(basename "$example")" /usr/bin/python3 "$example"
done
for example in "$root"/clients/node/examples/*.mjs; do
  check "clients/node/examples/$(basename "$example")" node "$example"
done
check clients/cpp/ask_tell_example "$build/clients/cpp/ask_tell_example"
go_example="$(mktemp -d)/ask_tell"
if (export METAOPT_BUILD_DIR="$build" && . "$root/clients/go/offline-env.sh" &&
    cd "$root/clients/go/examples/ask_tell" && go build -o "$go_example" .); then
  check clients/go/examples/ask_tell "$go_example"
else
  echo "FAILED: clients/go/examples/ask_tell does not build offline"
  failed=$((failed + 1))
fi
rm -rf "$(dirname "$go_example")"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
