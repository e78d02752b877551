package crew_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// startLog records the order in which tasks start.
type startLog struct {
	mu    sync.Mutex
	names []string
}

func (l *startLog) task(name string) func() {
	return func() {
		l.mu.Lock()
		l.names = append(l.names, name)
		l.mu.Unlock()
	}
}

// TestWithPriorityHigherLevelStartsFirst proves WithPriority's order on a one-worker parent:
// every task of the high sub-pool starts before any of level 0 (the parent's own and a Sub
// without the option), and those before the negative level's.
func TestWithPriorityHigherLevelStartsFirst(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0)
	low := p.Sub(4, crew.WithPriority(-1))
	mid := p.Sub(4)
	high := p.Sub(4, crew.WithPriority(5))
	var log startLog
	for i := range 6 {
		must(t, low.Submit(log.task("low")))
		must(t, mid.Submit(log.task("mid")))
		if i%2 == 0 {
			must(t, p.Submit(log.task("own")))
		}
		must(t, high.Submit(log.task("high")))
	}
	release()
	p.Wait()
	rank := map[string]int{"high": 2, "mid": 1, "own": 1, "low": 0}
	if len(log.names) != 21 {
		t.Fatalf("%d tasks started, want 21: %v", len(log.names), log.names)
	}
	for i := 1; i < len(log.names); i++ {
		if rank[log.names[i]] > rank[log.names[i-1]] {
			t.Fatalf("a higher level started after a lower one: %v", log.names)
		}
	}
}

// TestWithPrioritySubPoolsAtOneLevelTakeTurns: two busy sub-pools at one level share a
// one-worker parent by turns of a short batch, neither draining its queue first.
func TestWithPrioritySubPoolsAtOneLevelTakeTurns(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0)
	a := p.Sub(1, crew.WithPriority(1))
	b := p.Sub(1, crew.WithPriority(1))
	var log startLog
	for range 20 {
		must(t, a.Submit(log.task("a")))
	}
	for range 20 {
		must(t, b.Submit(log.task("b")))
	}
	release()
	p.Wait()
	if len(log.names) != 40 {
		t.Fatalf("%d tasks ran, want 40", len(log.names))
	}
	// While both have tasks queued, neither runs more than a short batch in a row.
	run := 1
	for i := 1; i < 30; i++ {
		if log.names[i] != log.names[i-1] {
			run = 1
		} else if run++; run > 10 {
			t.Fatalf("one sub-pool ran %d tasks in a row while the other waited: %v", run, log.names)
		}
	}
}

// TestWithPriorityLowClassCannotHoldTheWorker: a busy low-level sub-pool does not keep the
// parent's worker from a high-level task submitted later: the high task starts after at most
// the low task running when it came.
func TestWithPriorityLowClassCannotHoldTheWorker(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	low := p.Sub(1, crew.WithPriority(-1))
	high := p.Sub(1, crew.WithPriority(1))
	var lowRan atomic.Int64
	started := make(chan struct{})
	gate := make(chan struct{})
	must(t, low.Submit(func() { close(started); <-gate }))
	for range 1000 {
		must(t, low.Submit(func() { lowRan.Add(1) }))
	}
	<-started
	at := make(chan int64, 1)
	must(t, high.Submit(func() { at <- lowRan.Load() }))
	close(gate)
	if n := <-at; n != 0 {
		t.Fatalf("%d low tasks started before the high one", n)
	}
	p.Wait()
}

// TestWithPriorityGroupsAndMapWorkOnALeveledSubPool: the helpers run on a sub-pool with a
// level as on any pool; WithPriority on New has no effect.
func TestWithPriorityGroupsAndMapWorkOnALeveledSubPool(t *testing.T) {
	t.Parallel()
	p := crew.New(2, crew.WithPriority(3))
	defer p.StopAndWait()
	sub := p.Sub(2, crew.WithPriority(2))
	out, err := crew.Map(context.Background(), sub, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) {
		return v * v, nil
	})
	if err != nil || len(out) != 3 || out[2] != 9 {
		t.Fatalf("Map = %v, %v", out, err)
	}
	g, _ := sub.Group(context.Background())
	var n atomic.Int32
	for range 10 {
		g.Go(func(context.Context) error { n.Add(1); return nil })
	}
	if err := g.Wait(); err != nil || n.Load() != 10 {
		t.Fatalf("Group ran %d, err %v", n.Load(), err)
	}
	v, err := crew.Go(sub, func() (int, error) { return 7, nil }).Wait()
	if v != 7 || err != nil {
		t.Fatalf("Go = %v, %v", v, err)
	}
}
