#!/usr/bin/env bash
# Gregor's fault suite (issue 13): three nodes in network namespaces, a
# nemesis (kill -9, SIGSTOP of a leader and of a follower, a node cut off,
# a full log.dir, a slow log.dir), three workloads recording a history, and
# the checker; and a share-group workload with a consumer killed -9.
# Needs root (namespaces, tmpfs, FUSE mounts) and ip(8).
#
#   test/chaos/run.sh                 the CI run: issue 13's coordinator case, issue 16's share-group case, then 6 faults (a few minutes)
#   test/chaos/run.sh --long          the README's run: 210 faults (about an hour)
#   test/chaos/run.sh --seed N        replay a run's fault schedule (the seed is printed)
#   test/chaos/run.sh --faults N      any number of faults
set -euo pipefail
cd "$(dirname "$0")/../.."

faults=6
timeout=20m
seed=0
history=""
while [ $# -gt 0 ]; do
	case "$1" in
	--long) faults=210; timeout=240m ;;
	--faults) faults="$2"; shift ;;
	--seed) seed="$2"; shift ;;
	--history) history="$2"; shift ;;
	*) echo "usage: $0 [--long] [--faults N] [--seed N] [--history FILE]" >&2; exit 2 ;;
	esac
	shift
done

go vet -tags chaos ./test/chaos
go test -count=1 ./test/chaos # the checker's own tests
go test -count=1 -tags chaos -timeout "$timeout" -v \
	-run '^(TestCommitNotAcknowledgedWhileFollowersStopped|TestShareGroupConsumerKilled|TestChaos)$' ./test/chaos \
	-args -chaos.faults="$faults" -chaos.seed="$seed" ${history:+-chaos.history="$history"}
