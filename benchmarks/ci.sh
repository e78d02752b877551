#!/usr/bin/env bash
# Keeps the benchmarks module from rotting: vets it, checks that go.mod is tidy, runs every
# benchmark of every suite once on every contender with shrunken workloads (-short: the counts
# shrink, the check of the count of tasks that ran does not), and runs crewbench the same way
# so the parsing, tables and charts are exercised too. A few minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")"
go version
go vet ./...
test -z "$(gofmt -l .)" || { gofmt -l .; echo "benchmarks: gofmt needed" >&2; exit 1; }
cp go.mod /tmp/crewbench-go.mod.$$ && cp go.sum /tmp/crewbench-go.sum.$$
go mod tidy
if ! cmp -s go.mod /tmp/crewbench-go.mod.$$ || ! cmp -s go.sum /tmp/crewbench-go.sum.$$; then
	cp /tmp/crewbench-go.mod.$$ go.mod && cp /tmp/crewbench-go.sum.$$ go.sum
	echo "benchmarks: go mod tidy changes go.mod or go.sum" >&2
	exit 1
fi
rm -f /tmp/crewbench-go.mod.$$ /tmp/crewbench-go.sum.$$
go test -count=1 ./...
go test -short -run '^$' -bench . -benchtime 1x -benchmem ./suites
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
go run ./cmd/crewbench -short -full -count 1 -out "$out" >/dev/null
for s in pond ultrapool itogami taskq pools streams; do
	test -s "$out/$s.svg" && test -s "$out/$s.md" || { echo "benchmarks: crewbench wrote no $s chart or table" >&2; exit 1; }
done
echo "benchmarks: ok"
