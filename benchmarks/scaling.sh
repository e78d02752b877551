#!/usr/bin/env bash
# Builds and runs BenchmarkScaling, the cost per task of a few workloads as GOMAXPROCS grows,
# where the machine with the cores has no Go: build here, carry the folder there, run there.
#
#   bash benchmarks/scaling.sh build DIR          # DIR/suites.test (static) and DIR/scaling.sh
#   bash DIR/scaling.sh run DIR OUT               # OUT: raw benchmark output, benchstat reads it
#   cd benchmarks && go run ./cmd/crewbench -scaling OUT -out ../docs/benchmarks
#
# run makes PASSES passes (default 4), each running every benchmark once at each -cpu value of
# CPUS (default 1,2,4,8,16) for BENCHTIME (default 0.2s): interleaved passes, so that a drift
# of the machine spreads over every contender instead of favouring whoever runs first.
set -euo pipefail
mode="${1:-}"
dir="${2:-}"
case "$mode" in
build)
	[ -n "$dir" ] || { echo "usage: scaling.sh build DIR" >&2; exit 2; }
	mkdir -p "$dir"
	here="$(cd "$(dirname "$0")" && pwd)"
	dir="$(cd "$dir" && pwd)"
	(cd "$here" && CGO_ENABLED=0 go test -c -o "$dir/suites.test" ./suites)
	cp "$here/scaling.sh" "$dir/scaling.sh"
	echo "scaling: built $dir/suites.test"
	;;
run)
	out="${3:-}"
	[ -n "$dir" ] && [ -n "$out" ] || { echo "usage: scaling.sh run DIR OUT" >&2; exit 2; }
	: >"$out"
	{
		echo "# $(nproc) processors: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
	} >>"$out"
	for pass in $(seq "${PASSES:-4}"); do
		echo "scaling: pass $pass of ${PASSES:-4}" >&2
		"$dir/suites.test" -test.run '^$' -test.bench '^BenchmarkScaling$' -test.benchmem \
			-test.benchtime "${BENCHTIME:-0.2s}" -test.cpu "${CPUS:-1,2,4,8,16}" >>"$out"
	done
	grep -q '^BenchmarkScaling.*ns/op' "$out" || { echo "scaling: no benchmark ran" >&2; exit 1; }
	echo "scaling: wrote $out" >&2
	;;
*)
	echo "usage: scaling.sh build DIR | scaling.sh run DIR OUT" >&2
	exit 2
	;;
esac
