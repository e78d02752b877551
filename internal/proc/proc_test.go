package proc

import (
	"runtime"
	"sync"
	"testing"
)

func TestPinReturnsTheProcessorsIndex(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for range 4 * procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				p := Pin()
				Unpin()
				if p < 0 || p >= procs {
					t.Errorf("Pin returned %d with GOMAXPROCS %d", p, procs)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestPinFollowsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range 100 {
		if p := Pin(); p != 0 {
			Unpin()
			t.Fatalf("Pin returned %d with GOMAXPROCS 1", p)
		}
		Unpin()
	}
}

func TestRandIsBelowNAndSpread(t *testing.T) {
	const n, draws = 16, 160_000
	var counts [n]int
	for range draws {
		r := Rand(n)
		if r >= n {
			t.Fatalf("Rand(%d) returned %d", n, r)
		}
		counts[r]++
	}
	// Each count is binomial with mean 10,000 and a standard deviation under 100: 6 of them
	// either side is a failure a correct generator makes about once in 10^8 runs.
	for i, c := range counts {
		if c < draws/n-600 || c > draws/n+600 {
			t.Errorf("Rand(%d) returned %d %d times in %d draws, want about %d", n, i, c, draws, draws/n)
		}
	}
	if r := Rand(1); r != 0 {
		t.Errorf("Rand(1) = %d, want 0", r)
	}
}

func BenchmarkPinUnpin(b *testing.B) {
	for range b.N {
		Pin()
		Unpin()
	}
}

func BenchmarkRand(b *testing.B) {
	var sum uint32
	for range b.N {
		sum += Rand(16)
	}
	if b.N > 1000 && sum == 0 {
		b.Fatal("Rand(16) returned only 0")
	}
}
