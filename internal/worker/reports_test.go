package worker

import (
	"runtime"
	"sync"
	"testing"
)

// reporting is a task that reports its own panic and Goexit (Config.Reports).
type reporting struct {
	fn func()
	mu *sync.Mutex
	// what the engine told it: "panicked", "goexited"; nothing when it returned
	got *[]string
}

func reportsConfig(max int, handler func(any, []byte)) Config[reporting] {
	return Config[reporting]{
		Run:          func(r reporting) { r.fn() },
		MaxWorkers:   max,
		PanicHandler: handler,
		Reports:      func(r reporting) bool { return r.got != nil },
		Panicked: func(r reporting, v any, stack []byte) {
			r.mu.Lock()
			*r.got = append(*r.got, "panicked")
			r.mu.Unlock()
		},
		Goexited: func(r reporting) {
			r.mu.Lock()
			*r.got = append(*r.got, "goexited")
			r.mu.Unlock()
		},
	}
}

// TestReportedPanicsAndGoexitsReachTheTaskNotTheHandler checks the promise of Config.Reports:
// the engine hands a reporting task's panic to Panicked and its Goexit to Goexited, never to
// PanicHandler, and counts the task as completed; a task that does not report goes to the
// handler as before.
func TestReportedPanicsAndGoexitsReachTheTaskNotTheHandler(t *testing.T) {
	for _, noRecover := range []bool{false, true} {
		var mu sync.Mutex
		var got []string
		var handled int
		cfg := reportsConfig(1, func(any, []byte) {
			mu.Lock()
			handled++
			mu.Unlock()
		})
		cfg.NoRecover = noRecover
		e := New(cfg)
		report := func(fn func()) reporting { return reporting{fn: fn, mu: &mu, got: &got} }
		submit(t, e, report(func() { panic("boom") }))
		submit(t, e, report(func() {}))
		submit(t, e, report(func() { runtime.Goexit() }))
		submit(t, e, report(func() { panic(nil) }))
		if !noRecover {
			submit(t, e, reporting{fn: func() { panic("to the handler") }})
		}
		if ch := e.Drained(); ch != nil { // nil: nothing is pending
			<-ch
		}
		c := e.Counters()
		stopAndWait(e)
		want := []string{"panicked", "goexited", "panicked"}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("NoRecover %v: the tasks were told %v, want %v", noRecover, got, want)
		}
		wantHandled, wantPanicked := 1, uint64(1)
		if noRecover {
			wantHandled, wantPanicked = 0, 0
		}
		if handled != wantHandled || c.Panicked != wantPanicked || c.Completed != 4 {
			t.Fatalf("NoRecover %v: handler called %d times, counters %+v; want %d, %d panicked, 4 completed",
				noRecover, handled, c, wantHandled, wantPanicked)
		}
	}
}

// TestReportedPanicOfACallerRunTask: under CallerRuns the caller runs the task, and its panic
// or Goexit is reported to it there as on a worker.
func TestReportedPanicOfACallerRunTask(t *testing.T) {
	var mu sync.Mutex
	var got []string
	cfg := reportsConfig(1, noPanic)
	cfg.QueueSize, cfg.Overflow = 1, CallerRuns
	e := New(cfg)
	hold := make(chan struct{})
	submit(t, e, reporting{fn: func() { <-hold }}) // runs
	submit(t, e, reporting{fn: func() {}})         // fills the queue
	submit(t, e, reporting{fn: func() { panic("boom") }, mu: &mu, got: &got})
	done := make(chan struct{})
	go func() {
		defer close(done)
		submit(t, e, reporting{fn: func() { runtime.Goexit() }, mu: &mu, got: &got})
	}()
	<-done
	close(hold)
	if ch := e.Drained(); ch != nil {
		<-ch
	}
	c := e.Counters()
	stopAndWait(e)
	if len(got) != 2 || got[0] != "panicked" || got[1] != "goexited" {
		t.Fatalf("the caller-run tasks were told %v, want [panicked goexited]", got)
	}
	if c.CallerRan != 2 || c.Panicked != 0 || c.Completed != 4 {
		t.Fatalf("counters %+v, want 2 caller-run, none panicked, 4 completed", c)
	}
}
