// Package crewtest holds helpers that crew's tests share across packages and modules: goroutines
// released together, and the load, the rejections, the losses and the storms that the tests of
// the integration modules (prom, otel) put on a pool before they check what their metrics
// report. It is imported by tests only.
package crewtest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// Spawn starts n goroutines, counted by wg, that each wait for release and then run fn with
// their index.
func Spawn(wg *sync.WaitGroup, n int, release <-chan struct{}, fn func(i int)) {
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			fn(i)
		}()
	}
}

// SubmitCounts counts the submits of KeepBusy.
type SubmitCounts struct{ Accepted, Refused atomic.Uint64 }

// KeepBusy starts 8 submitters, counted by wg, that wait for start and then, until stop is
// closed, submit to p tasks that return and tasks that panic (p needs a panic handler): half
// with Submit, half with TrySubmit, which a full queue refuses.
func KeepBusy(t testing.TB, wg *sync.WaitGroup, p *crew.Pool, start, stop <-chan struct{}) *SubmitCounts {
	c := &SubmitCounts{}
	Spawn(wg, 8, start, func(int) {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			task := func() {}
			if i%7 == 0 {
				task = func() { panic("planned panic") }
			}
			if i%2 == 0 {
				if err := p.Submit(task); err != nil {
					t.Errorf("Submit: %v", err)
					return
				}
				c.Accepted.Add(1)
			} else if p.TrySubmit(task) {
				c.Accepted.Add(1)
			} else {
				c.Refused.Add(1)
			}
		}
	})
	return c
}

// cancelOnDone is a context that cancels itself when its Done channel is asked for.
// SubmitContext checks Err before it asks, so a submit given a cancelOnDone on a full queue
// gets past that check, blocks, and then finds its context ended: a blocked submit whose
// context ended first, made without waiting for a timer.
type cancelOnDone struct {
	context.Context
	cancel context.CancelFunc
}

func (c cancelOnDone) Done() <-chan struct{} {
	c.cancel()
	return c.Context.Done()
}

// RejectedTwice returns a pool of one worker and a queue of one, both held full until the test
// ends, that has rejected two submits: a TrySubmit refused by the full queue, and a
// SubmitContext that blocked on it and whose context ended first. Its Stats.Rejected is 1 and
// its Stats.Canceled 1.
func RejectedTwice(t testing.TB) *crew.Pool {
	t.Helper()
	p := crew.New(1, crew.WithQueueSize(1))
	release := make(chan struct{})
	t.Cleanup(p.StopAndWait) // cleanups run last first: after release is closed
	t.Cleanup(func() { close(release) })

	// One task holds the worker and one fills the queue.
	started := make(chan struct{})
	if err := p.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	if p.TrySubmit(func() {}) {
		t.Fatal("TrySubmit on a full queue succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := p.SubmitContext(cancelOnDone{ctx, cancel}, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext on a full queue with its context ending = %v, want context.Canceled", err)
	}
	return p
}

// Traffic is what KnownTraffic did to its pools, and the Stats each must report.
type Traffic struct {
	// Dropping is a pool of one worker and a queue of one under DiscardOldest, with latency
	// histograms, left paused with one task waiting.
	Dropping *crew.Pool
	// CallerRuns is a pool of one worker and a queue of one under CallerRuns, idle.
	CallerRuns *crew.Pool
	// Want are the Stats they report, but for Running and Idle, which are 0 here: how soon
	// a worker that finished counts as idle is not part of Wait's contract. WaitCount and
	// RunCount are Dropping's histograms' counts.
	WantDropping, WantCallerRuns crew.Stats
	WaitCount, RunCount          uint64
	// StopNow calls Dropping.StopNow and returns the Stats Dropping must report after it.
	StopNow func() crew.Stats
}

// KnownTraffic puts known traffic on two new pools, stopped when the test ends, so that every
// counter of Stats but Skipped is above zero on one of them: tasks that return and panic,
// a task DiscardOldest dropped, a TrySubmit refused by a full queue, a SubmitContext whose
// context had ended, a task run by its submitter, a pause, and (through StopNow) a task
// StopNow returned.
func KnownTraffic(t testing.TB) *Traffic {
	t.Helper()
	tr := &Traffic{}
	drop := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithLatencyHistograms(), crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(drop.StopAndWait)
	tr.Dropping = drop
	if err := drop.Submit(func() { panic("planned panic") }); err != nil {
		t.Fatal(err)
	}
	drop.Wait()
	release, started := make(chan struct{}), make(chan struct{})
	if err := drop.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	ran := make(chan string, 2)
	for _, name := range []string{"dropped", "returned"} {
		if err := drop.Submit(func() { ran <- name }); err != nil {
			t.Fatal(err)
		}
	}
	if drop.TrySubmit(func() {}) {
		t.Fatal("TrySubmit on a full queue succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := drop.SubmitContext(ctx, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with an ended context = %v, want context.Canceled", err)
	}
	drop.Pause()
	close(release)
	if err := drop.PauseAndWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.WantDropping = crew.Stats{
		MaxWorkers: 1, Waiting: 1, Accepted: 4, Completed: 1, Panicked: 1,
		Rejected: 1, Canceled: 1, Discarded: 1, Paused: true,
	}
	tr.WaitCount, tr.RunCount = 2, 2
	tr.StopNow = func() crew.Stats {
		if left := drop.StopNow(); len(left) != 1 {
			t.Fatalf("StopNow returned %d tasks, want 1", len(left))
		}
		select {
		case name := <-ran:
			t.Fatalf("the %s task ran", name)
		default:
		}
		s := tr.WantDropping
		s.Waiting, s.Returned, s.Paused = 0, 1, false
		return s
	}

	cr := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	t.Cleanup(cr.StopAndWait)
	tr.CallerRuns = cr
	release, started = make(chan struct{}), make(chan struct{})
	if err := cr.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	var inline atomic.Bool
	if err := cr.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	if err := cr.Submit(func() { inline.Store(true) }); err != nil || !inline.Load() {
		t.Fatalf("Submit on a full CallerRuns queue = %v, ran on the caller: %v", err, inline.Load())
	}
	close(release)
	cr.Wait()
	tr.WantCallerRuns = crew.Stats{MaxWorkers: 1, Accepted: 3, Completed: 3, CallerRan: 1}
	return tr
}

// RunTimeOf returns the RunTime histogram of a pool with latency histograms that ran n tasks.
func RunTimeOf(t testing.TB, n int) *crew.Histogram {
	t.Helper()
	p := crew.New(1, crew.WithLatencyHistograms())
	for range n {
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	p.StopAndWait()
	h := p.Stats().RunTime
	if h == nil || h.Count != uint64(n) {
		t.Fatalf("RunTime after %d tasks: %+v", n, h)
	}
	return h
}

// SumOfTwo returns three pools' worth of work as one source: two stopped pools, of limits 1
// and 2, that ran one and two tasks, and a function that adds up their MaxWorkers, Accepted
// and Completed. Its Stats are crew.Stats{MaxWorkers: 3, Accepted: 3, Completed: 3}.
func SumOfTwo(t testing.TB) func() crew.Stats {
	t.Helper()
	a, b := crew.New(1), crew.New(2)
	for _, p := range []*crew.Pool{a, b, b} {
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	a.StopAndWait()
	b.StopAndWait()
	return func() crew.Stats {
		x, y := a.Stats(), b.Stats()
		return crew.Stats{MaxWorkers: x.MaxWorkers + y.MaxWorkers, Accepted: x.Accepted + y.Accepted, Completed: x.Completed + y.Completed}
	}
}

// CheckEveryStatsField walks crew.Stats by reflection and, for each field in turn, exports a
// snapshot that has only that field set (a number to 7, a bool to true, a histogram to one of
// 7 tasks) with export, which returns the value of each metric by name (a histogram's
// count). Some metric must report the field, with 7 (1 for a bool), and no metric may report
// two fields; every metric must report one. A field added to Stats that export leaves out
// fails here, as does one of a type this function cannot set.
func CheckEveryStatsField(t *testing.T, export func(crew.Stats) map[string]float64) {
	t.Helper()
	const v = 7
	hist := RunTimeOf(t, v)
	owner := map[string]string{} // metric -> the field it reports
	typ := reflect.TypeFor[crew.Stats]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var s crew.Stats
		field := reflect.ValueOf(&s).Elem().Field(i)
		want := float64(v)
		switch {
		case field.Kind() == reflect.Int:
			field.SetInt(v)
		case field.Kind() == reflect.Uint64:
			field.SetUint(v)
		case field.Kind() == reflect.Bool:
			field.SetBool(true)
			want = 1
		case field.Type() == reflect.TypeFor[*crew.Histogram]():
			field.Set(reflect.ValueOf(hist))
		default:
			t.Fatalf("Stats.%s is a %v, which this test cannot set: teach it", f.Name, f.Type)
		}
		found := false
		for name, got := range export(s) {
			if got == 0 {
				continue
			}
			found = true
			if got != want {
				t.Errorf("Stats.%s = %v: %s reports %v", f.Name, want, name, got)
			}
			if other, ok := owner[name]; ok {
				t.Errorf("%s reports both Stats.%s and Stats.%s", name, other, f.Name)
			}
			owner[name] = f.Name
		}
		if !found {
			t.Errorf("Stats.%s has no metric", f.Name)
		}
	}
	all := export(crew.Stats{WaitTime: hist, RunTime: hist})
	if len(all) != len(owner) {
		t.Errorf("%d metrics exported, %d of which report a Stats field: %v", len(all), len(owner), all)
	}
}
