#!/usr/bin/env bash
# The whole test suite: vet, unit and in-process tests, a short run of every
# fuzz target and of the structure-aware fuzz of both listeners
# (test/fuzz-listeners.sh), then the suites that start real gregor
# processes and drive them with third-party clients (sarama, kcat/librdkafka, kafka-python,
# confluent-kafka), and a short run of the fault suite (test/chaos, as root:
# network namespaces and tmpfs mounts). Needs kcat, python3-kafka and python3-confluent-kafka
# (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 -timeout 15m ./...

# A count of executions, not a duration: Go 1.26's fuzz coordinator can
# report a bare "context deadline exceeded" at the end of a -fuzztime
# duration when its workers are slow on a loaded machine (golang/go#75804,
# fixed in Go 1.27); a count has no deadline to race.
echo "== fuzz (${FUZZTIME:=100000x} each)"
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for fn in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "-- $pkg $fn"
		go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "$pkg"
	done
done

echo "== structure-aware fuzz of both listeners of a real process, short run (test/fuzz-listeners.sh 10m by hand)"
./test/fuzz-listeners.sh 90s

echo "== end-to-end suites (real processes, third-party clients)"
go test -count=1 -tags e2e -timeout 30m ./test/...

echo "== fault suite, short run (test/chaos/run.sh --long is the README's run)"
./test/chaos/run.sh

echo "== kgo-suite compatibility gate (franz-go's integration tests; 1 node, then 3)"
./test/kgo-suite/run.sh && ./test/kgo-suite/run.sh --cluster
