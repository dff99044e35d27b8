#!/usr/bin/env bash
# The structure-aware fuzz of both listeners of a real gregor process
# (test/fuzz_listeners_test.go, TestFuzzListeners): requests of every API
# key and version each listener serves, filled with edge values and half
# of them damaged, against a well-behaved producer and consumer. It fails
# on a panic in the log, resident memory over 1 GiB, a fresh client not
# served, or an acknowledged record not readable, and prints its figures.
#
#   test/fuzz-listeners.sh [duration]     default 10m; CI runs 90s
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10m}
GREGOR_FUZZ_LISTENERS=$dur go test -count=1 -tags e2e -run '^TestFuzzListeners$' \
	-timeout 3h -v ./test | grep -E '^(=== RUN|--- |PASS|FAIL|ok|fuzz-listeners:)|fuzz_listeners_test.go'
