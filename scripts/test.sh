#!/usr/bin/env bash
# Runs every check and test of every module in this repository, as CI does:
#   - gofmt, and go.work using every module;
#   - per module: go mod tidy changes nothing, go vet, staticcheck, go test -race;
#   - one tiny pass of every benchmark, and crewbench (benchmarks/ci.sh);
#   - the integration modules install with go get once crew is tagged: the working tree is
#     served as that tag through a module proxy on the file system, and a fresh module gets
#     them and builds;
#   - the root module's vet and tests on the oldest Go that its go.mod allows;
#   - the root module's tests under GODEBUG=panicnil=1, without the race detector (memory
#     tests) and, last and shown in full, with it (short stress suite, fuzz seeds).
# Each step prints one line, or its output when it fails; the script stops at the first
# failure and exits non-zero.
#
# With --ci (CI's entry point, .ci/run, passes it) the long runs come back: the race-detector
# runs of the root module and the integrations without -short (the stress suite's full
# rounds, a million queued tasks) and crewbench's smoke run over every suite (CREW_CI_FULL=1
# for benchmarks/ci.sh). Without it those runs take -short; every other step is the same.
set -euo pipefail
short=-short
if [ "${1:-}" = --ci ]; then
	short=
	export CREW_CI_FULL=1
elif [ -n "${1:-}" ]; then
	echo "usage: scripts/test.sh [--ci]" >&2
	exit 2
fi
cd "$(dirname "$0")/.."
root=$(pwd -P)

STATICCHECK_VERSION=v0.8.2
# The oldest Go release the root go.mod allows, at the newest patch the module proxy serves.
OLDEST_GO=go1.23.12
GOBIN=$(go env GOPATH)/bin
export PATH="$GOBIN:$PATH"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log="$work/log"

# step NAME COMMAND...: runs COMMAND (a function or a program) with set -e in a subshell,
# its output in a log; prints one line with the time it took, or the log if it fails.
step() {
	local name=$1 start=$SECONDS
	shift
	("$@") >"$log" 2>&1 &
	if wait $!; then
		printf 'ok    %-66s %4ds\n' "$name" $((SECONDS - start))
	else
		printf 'FAIL  %s\n' "$name"
		cat "$log"
		exit 1
	fi
}

echo "$(go version); crew's tests and checks, one line per step"

if ! staticcheck -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	step "install staticcheck $STATICCHECK_VERSION" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

# Every directory holding a go.mod is a module: the root, benchmarks/, each integration and
# the tool under scripts/. Modules under testdata/ are inputs of tests, not part of it.
mapfile -t modules < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sort)

# The integration modules require a tagged crew (no replace), so that go get installs them;
# they all require the same version, the one the next tag of crew will have (CHANGELOG.md).
integrations=()
crew_version=""
for m in "${modules[@]}"; do
	[ "$m" = . ] && continue
	v=$(awk '$1 == "github.com/crewgo/crew" && $2 ~ /^v/ { print $2 } $1 == "require" && $2 == "github.com/crewgo/crew" { print $3 }' "$m/go.mod")
	if [ -n "$v" ] && ! grep -qE '^\s*(replace\s+)?github\.com/crewgo/crew(\s+v\S+)?\s+=>' "$m/go.mod"; then
		integrations+=("$m")
		if [ -n "$crew_version" ] && [ "$v" != "$crew_version" ]; then
			echo "FAIL  $m requires crew $v, another integration $crew_version: make them agree" >&2
			exit 1
		fi
		crew_version=$v
	fi
done
is_integration() { [[ " ${integrations[*]} " == *" $1 "* ]]; }

check_sources() {
	local unformatted
	unformatted=$(gofmt -l .)
	if [ -n "$unformatted" ]; then
		echo "gofmt would change:"
		echo "$unformatted"
		return 1
	fi
	# go.work must use every module, or the go command refuses to build in the ones it lacks.
	local used
	used=$(go list -m -f '{{.Dir}}')
	for m in "${modules[@]}"; do
		if ! grep -qxF "$(cd "$m" && pwd -P)" <<<"$used"; then
			echo "go.work does not use $m: run go work use $m"
			return 1
		fi
	done
}
step "gofmt; go.work uses every module" check_sources

# The proxy serves the root module and every integration, as in the working tree, under
# crew_version, as the module proxy will once they are tagged. Commands that resolve crew
# through it leave the workspace (GOWORK=off) and use a module cache of their own, filled
# from the usual one where it can, so the untagged version never enters the usual cache.
proxied() {
	GOWORK=off GOMODCACHE="$work/modcache" GOFLAGS="$(go env GOFLAGS) -modcacherw" \
		GONOSUMDB='github.com/crewgo/*' \
		GOPROXY="file://$work/proxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" "$@"
}
if [ ${#integrations[@]} -gt 0 ]; then
	serve() {
		local dirs=("$root")
		for m in "${integrations[@]}"; do dirs+=("$root/$m"); done
		go -C scripts/modproxy run . -version "$crew_version" -out "$work/proxy" "${dirs[@]}"
	}
	step "serve crew and ${integrations[*]#./} as $crew_version from a file-system proxy" serve
fi

# tidy_diff runs go mod tidy -diff, and fails on any change it would make except the go.sum
# lines of crew's own modules in an integration: those hold the checksums of the tagged
# version, which the served working tree cannot match until the tag exists.
tidy_diff() {
	local m=$1
	if ! is_integration "$m"; then
		GOWORK=off go mod tidy -diff
		return
	fi
	local rc=0
	proxied go mod tidy -diff >"$work/tidy.out" 2>"$work/tidy.err" || rc=$?
	if grep -v '^go: downloading ' "$work/tidy.err"; then
		return 1
	fi
	if [ "$rc" -ne 0 ] && grep -E '^[-+]' "$work/tidy.out" | grep -vE '^(\+\+\+|---) ' |
		grep -vE '^[-+]github\.com/crewgo/crew(/[^ ]+)? v'; then
		echo "go mod tidy would change the lines above"
		return 1
	fi
}

for m in "${modules[@]}"; do
	check_module() {
		cd "$m"
		tidy_diff "$m"
		go vet ./...
		staticcheck -checks inherit,ST1000,ST1020,ST1021,ST1022 ./...
	}
	step "module ${m#./}: go mod tidy -diff, go vet, staticcheck" check_module
done

for m in "${modules[@]}"; do
	[ "$m" = . ] && continue
	step "module ${m#./}: go test -race $short" go -C "$m" test -race $short -count=1 ./...
done

if [ -f benchmarks/ci.sh ]; then
	step "benchmarks: every benchmark once (-short), crewbench -short" bash benchmarks/ci.sh
fi

if [ ${#integrations[@]} -gt 0 ]; then
	install() {
		mkdir "$work/consumer"
		cp scripts/testdata/consumer/main.go "$work/consumer/"
		cd "$work/consumer"
		local paths=()
		for m in "${integrations[@]}"; do
			paths+=("$(awk '$1 == "module" { print $2 }' "$root/$m/go.mod")@$crew_version")
		done
		proxied go mod init example.com/consumer
		proxied go get "${paths[@]}"
		proxied go build -mod=mod -o consumer .
		./consumer
	}
	step "go get ${integrations[*]#./} @$crew_version in a fresh module, build" install
fi

# The root module on the oldest Go it supports. It leaves the workspace, whose modules need
# a newer Go.
step "root on $OLDEST_GO: go vet, go test" env GOWORK=off GOTOOLCHAIN="$OLDEST_GO" \
	sh -c 'go vet ./... && go test -count=1 ./...'

# Under GODEBUG=panicnil=1, recover returns nil for panic(nil), as it does for runtime.Goexit:
# every place that tells the two apart runs again under that setting. The whole root suite
# takes about 15 s without the race detector, so all of it runs.
step "root: go test with GODEBUG=panicnil=1" env GODEBUG=panicnil=1 go test -count=1 ./...
step "root: go test without the race detector (memory tests)" go test -count=1 ./...

# The root module's race-detector run comes last and shows go test's own lines, so the run
# closes on the root tests' results.
echo "root: go test -race $short (stress suite, fuzz seeds)"
go test -race $short -count=1 ./...
echo "all checks passed in $((SECONDS / 60))m$((SECONDS % 60))s"
