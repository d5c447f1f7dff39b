#!/bin/sh
# Conformance of vto-emulator with the official Vertex AI and Cloud Logging Node.js clients (REST mode).
# usage: tests/conformance/run.sh BIN_DIR   (BIN_DIR holds vto-emulator, e.g. build/bin)
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
bin_dir=$(cd "$1" && pwd)
cd "$(dirname "$0")"
# package-lock.json pins the client; install it once.
if [ ! -d node_modules/@google-cloud/aiplatform ] || [ ! -d node_modules/@google-cloud/logging ]; then
  npm ci --no-audit --no-fund
fi
VTO_BIN_DIR="$bin_dir" exec node --test --test-reporter=spec conformance.test.js
