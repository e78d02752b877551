//go:build go1.25

package crew_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// sizedWeighLog is limitLog for weighted tasks: each start checks the sum of the weights
// running against every limit in force since the task's submit (a task heavier than the
// limit may run alone).
type sizedWeighLog struct {
	mu      sync.Mutex
	limits  []int
	held    atomic.Int64
	running atomic.Int64
	over    atomic.Int64
}

func (l *sizedWeighLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.limits) - 1
}

func (l *sizedWeighLog) add(n int) {
	l.mu.Lock()
	l.limits = append(l.limits, n)
	l.mu.Unlock()
}

func (l *sizedWeighLog) start(mark, w int) {
	h := l.held.Add(int64(w))
	r := l.running.Add(1)
	l.mu.Lock()
	bound := 0
	for _, n := range l.limits[mark:] {
		bound = max(bound, n)
	}
	l.mu.Unlock()
	if h > int64(bound) && r > 1 {
		l.over.Add(1)
	}
}

func (l *sizedWeighLog) end(w int) {
	l.held.Add(-int64(w))
	l.running.Add(-1)
}

// An adaptive pool (ceiling 16, min 3) of weighted tasks calling a resource of 4 slots, on the
// fake clock, with the ceiling moved by Resize (below the min, to CPUs-free numbers and back),
// Pause/Resume, and calls of Stats, Resize and SetRateLimit from tasks: MaxWorkers stays within
// [min(3, ceiling), ceiling] after each Resize returns, weights of running tasks never sum above
// a limit in force since their submit, every task runs once, nothing is left after StopAndWait.
func TestAmidAdaptiveWeightedUnderResizeStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := newSlots(4)
		p := crew.New(16, crew.WithAdaptiveLimit(3), crew.WithLatencyHistograms())
		var log sizedWeighLog
		log.limits = []int{16}
		var limMu sync.Mutex
		ceiling := 16
		crew.OnLimit(p, func(n int) {
			limMu.Lock()
			c := ceiling
			limMu.Unlock()
			if n < min(3, c) || n > 16 {
				t.Errorf("limit %d chosen outside [min(3, %d), 16]", n, c)
			}
			log.add(n)
		})
		setCeiling := func(n int) {
			prev := log.limits[len(log.limits)-1]
			log.add(max(n, prev))
			limMu.Lock()
			ceiling = n
			limMu.Unlock()
			p.Resize(n)
			s := p.Stats()
			if s.MaxWorkers > n || s.MaxWorkers < min(3, n) {
				t.Errorf("after Resize(%d): MaxWorkers %d outside [min(3, %d), %d]", n, s.MaxWorkers, n, n)
			}
			log.add(s.MaxWorkers)
		}
		var ran atomic.Int64
		const total = 3000
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range total / 4 {
					w := 1 + (g+i)%3
					mark := log.mark()
					task := func() {
						log.start(mark, w)
						defer log.end(w)
						ran.Add(1)
						res.call(2 * time.Millisecond)
						if i%97 == 13 {
							_ = p.Stats()
						}
					}
					err := p.SubmitN(w, task)
					if err == crew.ErrTooHeavy {
						err = p.Submit(func() { log.start(mark, 1); ran.Add(1); log.end(1) })
					}
					must(t, err)
					if i%16 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		ceilings := []int{8, 2, 16, 1, 5, 16}
		for _, c := range ceilings {
			time.Sleep(150 * time.Millisecond)
			setCeiling(c)
			if c == 5 {
				p.Pause()
				time.Sleep(10 * time.Millisecond)
				if s := p.Stats(); !s.Paused {
					t.Errorf("Stats.Paused false on a paused pool")
				}
				p.Resume()
			}
		}
		wg.Wait()
		p.Wait()
		s := p.Stats()
		if s.RunTime.Count != total || s.WaitTime.Count != total || ran.Load() != total {
			t.Errorf("ran %d, RunTime %d, WaitTime %d, want %d", ran.Load(), s.RunTime.Count, s.WaitTime.Count, total)
		}
		p.StopAndWait()
		if n := log.over.Load(); n > 0 {
			t.Errorf("%d starts with the weights running above every limit since their submit", n)
		}
		t.Logf("%d limits: last %v", len(log.limits), log.limits[max(0, len(log.limits)-10):])
		idleIdentity(t, "adaptive", p.Stats())
	})
}
