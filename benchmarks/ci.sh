#!/usr/bin/env bash
# Keeps the benchmarks module from rotting: runs every benchmark of every suite once on every
# contender with shrunken workloads (-short: the counts shrink, the check of the count of tasks
# that ran does not), then crewbench the same way, so that the parsing, tables and charts are
# exercised too. A few minutes on two cores. It prints one line, or everything the benchmarks
# and crewbench printed when one of them fails. scripts/test.sh runs it after vetting and
# testing the module.
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log="$work/log"

fail() {
	echo "benchmarks: $*" >&2
	cat "$log" >&2
	exit 1
}

go test -short -run '^$' -bench . -benchtime 1x -benchmem ./suites >"$log" 2>&1 ||
	fail "a benchmark failed"
ran=$(grep -c '^Benchmark.*ns/op' "$log" || true)
[ "$ran" -gt 0 ] || fail "no benchmark ran"

go run ./cmd/crewbench -short -full -count 1 -out "$work/out" >"$log" 2>&1 || fail "crewbench failed"
for s in pond ultrapool itogami taskq pools streams; do
	test -s "$work/out/$s.svg" && test -s "$work/out/$s.md" || fail "crewbench wrote no $s chart or table"
done
test -s "$work/out/sweep.md" && test -s "$work/out/sweep-users-randfloat.svg" || fail "crewbench wrote no sweep table or chart"
echo "benchmarks: ok, $ran benchmarks ran once each; crewbench wrote every suite's table and chart"
