#!/usr/bin/env bash
# The project's CI, the same everywhere: .ci/run and .github/workflows/ci.yaml both call this.
# It installs what the tests need beyond Python and Go (lua5.4 for the Argo CD health check,
# redis-server for Argo CD's cache) and runs the README's test command, which also builds the
# pinned toolchain (cached by version) that the control-plane tests run; CI=true makes a missing
# tool fail its test instead of skipping it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true
# Argo CD 3.6 needs Go 1.27; the go command fetches this release through the module proxy.
export GOTOOLCHAIN=go1.27.3
if ! command -v lua5.4 >/dev/null || ! command -v redis-server >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq lua5.4 redis-server >/dev/null
fi
make test
