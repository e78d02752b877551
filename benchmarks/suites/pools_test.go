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
// semaphore in front of a goroutine per task. Under -suites.quick it generates a fifth as many
// keys, named by that count: load=2Kkeys.
func BenchmarkPools(b *testing.B) {
	workers := runtime.NumCPU()
	keys := 10_000
	if *quick {
		keys /= 5
	}
	l := load{users: 1, perUser: shrink(keys, 1000)}
	keygen := func() {
		if _, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	}
	for _, c := range contenders.All {
		b.Run("load="+count(keys)+"keys/task=ecdsa-p256/pool="+c.Name, func(b *testing.B) {
			runLoad(b, c, workers, l, keygen)
		})
	}
}
