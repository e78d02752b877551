package suites

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"runtime"
	"testing"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// BenchmarkPools reruns johnsiilver/pools' comparison: 10,000 ECDSA P-256 key generations per
// iteration on NumCPU workers. Its "limiter + goroutines" is errgroup here: SetLimit puts a
// semaphore in front of a goroutine per task.
func BenchmarkPools(b *testing.B) {
	workers := runtime.NumCPU()
	l := load{users: 1, perUser: shrink(10_000, 1000)}
	keygen := func() {
		if _, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	}
	for _, c := range contenders.All {
		b.Run("load=10Kkeys/task=ecdsa-p256/pool="+c.Name, func(b *testing.B) {
			runLoad(b, c, workers, l, keygen)
		})
	}
}
