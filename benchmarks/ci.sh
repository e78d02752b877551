#!/usr/bin/env bash
# Keeps the benchmarks module from rotting: runs every benchmark of every suite once on every
# contender with shrunken workloads (-short: the counts shrink, the check of the count of tasks
# that ran does not), then crewbench on one small suite the same way and -scaling on the
# committed scaling output, so that the parsing, tables and charts are exercised too. It prints one line, or everything the benchmarks
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

# crewbench on one small suite, TaskQ's JSON task at its quick size shrunk by -short: the
# compiling, running, parsing, tables and charts, in seconds. With CREW_CI_FULL=1 (CI sets it
# through scripts/test.sh --ci) every suite, the sweep included, runs that way instead.
if [ "${CREW_CI_FULL:-}" = 1 ]; then
	go run ./cmd/crewbench -short -full -count 1 -out "$work/out" >"$log" 2>&1 || fail "crewbench failed"
	for s in pond ultrapool itogami taskq pools streams; do
		test -s "$work/out/$s.svg" && test -s "$work/out/$s.md" || fail "crewbench wrote no $s chart or table"
	done
	test -s "$work/out/sweep.md" && test -s "$work/out/sweep-users-randfloat.svg" || fail "crewbench wrote no sweep table or chart"
	wrote="every suite's table and chart"
else
	go run ./cmd/crewbench -short -count 2 -suite taskq -contenders crew-func,ants,static-floor -out "$work/out" >"$log" 2>&1 ||
		fail "crewbench failed"
	for f in taskq.svg taskq.md quick.svg results.md raw.txt; do
		test -s "$work/out/$f" || fail "crewbench wrote no $f"
	done
	grep -q '^BenchmarkTaskQ/.*pool=ants' "$work/out/raw.txt" || fail "crewbench's raw.txt lacks ants' samples"
	wrote="TaskQ's table and charts"
fi
go run ./cmd/crewbench -scaling ../docs/benchmarks/scaling-raw.txt -out "$work/scaling" >"$log" 2>&1 ||
	fail "crewbench -scaling failed"
test -s "$work/scaling/scaling.md" && test -s "$work/scaling/scaling.svg" || fail "crewbench -scaling wrote no table or chart"
echo "benchmarks: ok, $ran benchmarks ran once each; crewbench wrote $wrote, and the scaling table"
