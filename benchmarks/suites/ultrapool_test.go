package suites

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// ultrapoolWorkers is the worker limit here. ultrapool's own benchmark gives the pools a limit
// of ten million, in effect none; here each pool gets 10,000 so that the baselines that start
// all their workers up front fit in memory.
const ultrapoolWorkers = 10_000

var (
	aesKey  = []byte("crewbench-aes128") // 16 bytes: AES-128
	plain1k = make([]byte, 1024)
	plain8k = make([]byte, 8192)
)

// encryptCBC encrypts plain (a multiple of the block size) with AES-128-CBC under a fresh
// random IV, allocating the IV and the ciphertext as a real caller would.
func encryptCBC(plain []byte) []byte {
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		panic(err)
	}
	out := make([]byte, aes.BlockSize+len(plain))
	if _, err := rand.Read(out[:aes.BlockSize]); err != nil {
		panic(err)
	}
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], plain)
	return out
}

// ultrapoolTasks are ultrapool's four tasks.
var ultrapoolTasks = []namedTask{
	{"sleep1us", func() { time.Sleep(time.Microsecond) }, true},
	{"sha256-1kB", func() { _ = sha256.Sum256(plain1k) }, false},
	{"aescbc-1kB", func() { _ = encryptCBC(plain1k) }, false},
	{"aescbc-8kB", func() { _ = encryptCBC(plain8k) }, false},
}

// ultrapoolParallelism is b.SetParallelism's argument: submitters per GOMAXPROCS.
var ultrapoolParallelism = []int{1, 10, 50, 100}

// BenchmarkUltrapool reruns maurice2k/ultrapool's comparison: b.RunParallel goroutines submit
// one task per iteration to a pool made before the clock starts; the clock stops once every
// task has run. The static floor runs the same b.N tasks on 10,000 goroutines started before
// the clock, with no submitters (the same in every parallelism): what the tasks cost with no
// hand-off at all. Inline takes part with the tasks that do not sleep (see skipInline).
func BenchmarkUltrapool(b *testing.B) {
	workers := shrink(ultrapoolWorkers, 100)
	for _, t := range ultrapoolTasks {
		for _, par := range ultrapoolParallelism {
			for _, c := range contenders.All {
				if skipInline(c, t.sleeps) {
					continue
				}
				b.Run(fmt.Sprintf("task=%s/par=%d/pool=%s", t.name, par, c.Name), func(b *testing.B) {
					runParallel(b, c, workers, par, t.task)
				})
			}
		}
	}
}
