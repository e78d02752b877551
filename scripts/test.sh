#!/usr/bin/env bash
# Runs every check and test of every module in this repository: gofmt, go vet, staticcheck,
# go mod tidy, the race-detector tests (with the short stress suite and the fuzz seeds), the
# tests without the race detector, the root tests again under GODEBUG=panicnil=1, and one
# tiny pass of every benchmark. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
GOBIN=$(go env GOPATH)/bin
export PATH="$GOBIN:$PATH"

step() { printf '\n==> %s\n' "$*"; }

if ! staticcheck -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
  step "install staticcheck $STATICCHECK_VERSION"
  go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

# Every directory holding a go.mod is a module: the root, benchmarks/ and each integration.
mapfile -t modules < <(find . -name go.mod -not -path './.git/*' -printf '%h\n' | sort)

step "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

for m in "${modules[@]}"; do
  step "module $m: go mod tidy, vet, staticcheck"
  (
    cd "$m"
    go mod tidy -diff
    go vet ./...
    staticcheck -checks inherit,ST1000,ST1020,ST1021,ST1022 ./...
  )
done

for m in "${modules[@]}"; do
  [ "$m" = . ] && continue
  step "module $m: go test -race"
  (cd "$m" && go test -race -count=1 ./...)
done

if [ -f benchmarks/ci.sh ]; then
  step "benchmarks: one tiny pass of every benchmark"
  bash benchmarks/ci.sh
fi

# The root module's tests run last, so the closing lines are its test results.
step "root: go test -race (stress suite short, fuzz seeds)"
go test -race -count=1 ./...

step "root: go test without the race detector (memory tests)"
go test -count=1 ./...

# Under GODEBUG=panicnil=1, recover returns nil for panic(nil), as it does for runtime.Goexit:
# every place that tells the two apart is run again under that setting. The whole root suite
# takes about 10 s without the race detector, so all of it runs.
step "root: go test with GODEBUG=panicnil=1"
GODEBUG=panicnil=1 go test -count=1 ./...

step "all checks passed"
