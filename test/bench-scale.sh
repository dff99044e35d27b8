#!/usr/bin/env bash
# Issue 15's measurements side by side, in one run on one machine, as
# same-run ratios (this machine is shared and noisy: absolute times mean
# little, and nothing here is asserted). Each benchmark is a Go test that
# runs only with GREGOR_BENCH=1; this script runs them in turn and prints
# their summaries; the full output of each is kept in $OUT.
#
#   test/bench-scale.sh            # everything (about an hour)
#   test/bench-scale.sh quick      # fewer kills and rounds (about 15 minutes)
#
# What each part measures, against what, in the same run:
#   produce     TestReplicationBenchProduce: RF=1 vs RF=3 acks=all vs RF=3
#               acks=1 on 3 brokers, the follower lag under that load, and a
#               no-storage broker's ceiling (with ../shared/tools/bench).
#   followers   TestFollowerBenchCatchUp: follower copy ÷ consumer read of the
#               same log on the same broker; TestFollowerBenchAcksAll: RF=3
#               acks=all on 3 brokers ÷ RF=1 acks=all on 1.
#   metadata    TestBenchMetadataApply (replica) and TestBenchControlledShutdown
#               (controller): one metadata change on a broker with 1k, 10k and
#               100k partitions in the image; a controlled shutdown at 100k.
#   partitions  TestScaleBench (log): 100k partition logs on one broker,
#               idle (fds, heap bytes each), start after a clean shutdown and
#               after a kill, against 1k in the same run;
#               TestRecoveryBoundedByCheckpointBench: recovery with the
#               checkpoints at the log end vs without them.
#   controlled-shutdown  TestControlledShutdownBench: 2 brokers + 1
#               controller, RF=2, each broker leading half; SIGTERM one and
#               time until the other leads every partition (Metadata, then
#               an accepted produce) and until the process exits, at 1k, 10k
#               and 100k partitions in one run (GREGOR_BENCH_CS_PARTITIONS).
#   broker-start  TestBrokerStartBench: 1 controller + 1 broker, RF=1, a
#               record in every partition; SIGTERM → exit, then start →
#               listening, → leading every partition, → a produce taken; the
#               same after kill -9; at 1k and 100k (GREGOR_BENCH_START_PARTITIONS).
#   gain-leadership  TestBenchGainLeadership (replica): one delta makes a
#               broker lead 10k partitions it followed (the broker side of
#               another's controlled shutdown).
#   failover    TestFailoverBench: kill -9 of a partition leader -> first
#               acknowledged produce, fast fence on and off, franz-go and
#               librdkafka defaults; TestClusterBenchFailover: kill -9 of the
#               active controller -> CreateTopics accepted, election on the
#               leader's exit on and off.
set -uo pipefail
cd "$(dirname "$0")/.."

mode=${1:-full}
OUT=${OUT:-$(mktemp -d /tmp/gregor-bench.XXXXXX)}
mkdir -p "$OUT"
export GREGOR_BENCH=1
if [ "$mode" = quick ]; then
	export GREGOR_BENCH_KILLS=${GREGOR_BENCH_KILLS:-5}
	export GREGOR_BENCH_ROUNDS=${GREGOR_BENCH_ROUNDS:-1}
	export GREGOR_BENCH_SECONDS=${GREGOR_BENCH_SECONDS:-5}
	export GREGOR_BENCH_MB=${GREGOR_BENCH_MB:-256}
	export GREGOR_BENCH_CS_PARTITIONS=${GREGOR_BENCH_CS_PARTITIONS:-1000,10000}
	export GREGOR_BENCH_START_PARTITIONS=${GREGOR_BENCH_START_PARTITIONS:-1000,10000}
fi

status=0
run() { # name, package, test regexp, extra go test flags...
	local name=$1 pkg=$2 re=$3
	shift 3
	echo "== $name ($re)" >&2
	if ! go test "$@" -run "$re" -v -count=1 -timeout 90m "$pkg" >"$OUT/$name.log" 2>&1; then
		echo "   FAILED: see $OUT/$name.log" >&2
		status=1
	fi
}

run produce ./test/ 'TestReplicationBenchProduce$' -tags e2e
run followers ./test/ 'TestFollowerBench' -tags e2e
TMPDIR=${TMPDIR_FAST:-/dev/shm} run metadata-broker ./internal/replica/ 'TestBenchMetadataApply$'
run metadata-controller ./internal/controller/ 'TestBenchControlledShutdown$'
run partitions ./internal/log/ 'TestScaleBench$|TestRecoveryBoundedByCheckpointBench$'
run controlled-shutdown ./test/ 'TestControlledShutdownBench$' -tags e2e
run broker-start ./test/ 'TestBrokerStartBench$' -tags e2e
run gain-leadership ./internal/replica/ 'TestBenchGainLeadership$'
run failover-partition ./test/ 'TestFailoverBench$' -tags e2e
run failover-controller ./test/ 'TestClusterBenchFailover$' -tags e2e

# The summaries: each test's t.Logf output (the lines after its "_test.go:N:"
# marker), without the per-kill rows.
for f in "$OUT"/*.log; do
	echo
	echo "### $(basename "$f" .log)"
	awk '/_test\.go:[0-9]+: /{p=1} /^(=== |--- |PASS|FAIL|ok |coverage)/{p=0} p' "$f" |
		grep -v '^ *[0-9]\+  ' | sed 's/^ *[a-z_]*_test\.go:[0-9]*: //'
done
echo
echo "full output: $OUT"
exit $status
