package crew_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestGoexitInPanicHandlerIsCountedAndReplaced proves the package doc's Panics section: a
// panic handler that calls runtime.Goexit (as t.FailNow does) ends its worker's goroutine, the
// task counts as panicked, and a new worker takes the place, so Wait and StopAndWait return,
// also through a sub-pool whose parent is stopped.
func TestGoexitInPanicHandlerIsCountedAndReplaced(t *testing.T) {
	t.Parallel()
	for _, viaSub := range []bool{false, true} {
		t.Run(fmt.Sprint("sub-pool ", viaSub), func(t *testing.T) {
			var handled atomic.Int32
			parent := crew.New(1, crew.WithPanicHandler(func(any, []byte) {
				handled.Add(1)
				runtime.Goexit()
			}))
			p := parent
			if viaSub {
				p = parent.Sub(1)
			}
			const tasks = 6
			for range tasks {
				if err := p.Submit(func() { panic("boom") }); err != nil {
					t.Fatal(err)
				}
			}
			awaitReturn(t, "Wait after handlers that call Goexit", goRun(p.Wait))
			if s := p.Stats(); s.Panicked != tasks || s.Running != 0 || s.Waiting != 0 || handled.Load() != tasks {
				t.Fatalf("Stats %+v, %d handled; want %d panicked, nothing running or waiting", s, handled.Load(), tasks)
			}
			if err := p.Submit(func() {}); err != nil {
				t.Fatalf("Submit after the handlers' Goexit: %v", err)
			}
			awaitReturn(t, "StopAndWait after handlers that call Goexit", goRun(parent.StopAndWait))
		})
	}
}

// TestGoexitInTaskKeepsMinWorkers proves WithMinWorkers' promise across runtime.Goexit: a
// task that calls it ends its worker, and a new worker takes the place even with nothing
// queued, so the pool keeps its minimum.
func TestGoexitInTaskKeepsMinWorkers(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithMinWorkers(2))
	defer p.StopAndWait()
	for range 3 {
		if err := p.Submit(runtime.Goexit); err != nil {
			t.Fatal(err)
		}
		p.Wait()
	}
	awaitStats(t, p, "2 idle workers", func(s crew.Stats) bool { return s.Idle == 2 && s.Completed == 3 })
}

// TestPanicNilIsAPanic proves the package doc's Panics section: panic(nil) is a panic, also
// under GODEBUG=panicnil=1, where recover returns nil as it does for runtime.Goexit. The check
// runs in a child process with that setting.
func TestPanicNilIsAPanic(t *testing.T) {
	if os.Getenv("CREW_TEST_PANICNIL_CHILD") == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestPanicNilIsAPanic$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CREW_TEST_PANICNIL_CHILD=1", "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child with GODEBUG=panicnil=1: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "PASS") {
			t.Fatalf("child with GODEBUG=panicnil=1 did not pass:\n%s", out)
		}
	}
	var handled, running, high atomic.Int32
	p := crew.New(1, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	const tasks = 200
	for range tasks {
		if err := p.Submit(func() {
			if n := running.Add(1); n > high.Load() {
				high.Store(n)
			}
			defer running.Add(-1)
			panic(nil)
		}); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	s := p.Stats()
	p.StopAndWait()
	if s.Panicked != tasks || s.Completed != 0 || s.Running != 0 || handled.Load() != tasks || high.Load() != 1 {
		t.Fatalf("Stats %+v, %d handled, %d at once; want %d panicked, one at a time", s, handled.Load(), high.Load(), tasks)
	}
}

// TestStopAndWaitLeavesNoParkedWorker proves Pool.StopAndWait's promise that every worker
// goroutine has exited: when it returns, no goroutine of the pool is still parked, waiting to
// be told to exit, even when a concurrent Stop is the one that dismissed the idle workers.
func TestStopAndWaitLeavesNoParkedWorker(t *testing.T) {
	for try := range 100 {
		p := crew.New(64, crew.WithIdleTimeout(time.Hour))
		release := make(chan struct{})
		for range 64 {
			if err := p.Submit(func() { <-release }); err != nil {
				t.Fatal(err)
			}
		}
		close(release)
		p.Wait()
		stopping := make(chan struct{})
		go func() { close(stopping); p.Stop() }() // another goroutine's Stop may dismiss the idle workers
		<-stopping
		p.StopAndWait()
		if parked := parkedWorkers(); parked > 0 {
			t.Fatalf("try %d: %d workers still parked after StopAndWait returned", try, parked)
		}
	}
}

// TestWithoutPanicRecoveryCrashesTheProgram proves WithoutPanicRecovery's promise: a plain
// task's panic ends the program with the panic value and the panicking frame on its stack,
// and the panic handler is not called. It runs in a child process.
func TestWithoutPanicRecoveryCrashesTheProgram(t *testing.T) {
	if os.Getenv("CREW_TEST_NORECOVER_CHILD") != "" {
		p := crew.New(2, crew.WithoutPanicRecovery(), crew.WithPanicHandler(func(any, []byte) {
			fmt.Println("handler called")
		}))
		_ = p.Submit(panicsWithoutRecovery)
		p.Wait() // never returns: the panic ends the process
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWithoutPanicRecoveryCrashesTheProgram$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CREW_TEST_NORECOVER_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child exited cleanly, want a crash:\n%s", out)
	}
	for _, want := range []string{"panic: no recovery", "panicsWithoutRecovery"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("child output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "handler called") {
		t.Fatalf("the panic handler ran:\n%s", out)
	}
}

func panicsWithoutRecovery() { panic("no recovery") }

// TestGoexitInACallerRunFunctionEndsItOnce: a function of a ForEach (or Map) made inside a
// task, from its context, on a pool with hooks and a full bounded queue, runs on the caller
// (a wait that helps). It calls runtime.Goexit: it ends once, as a function that called
// Goexit. Ended a second time, as if a Queued hook had called Goexit, the ForEach gave back
// a slot it no longer held, and the pool's only worker blocked for ever.
func TestGoexitInACallerRunFunctionEndsItOnce(t *testing.T) {
	for _, name := range []string{"ForEach", "Map"} {
		t.Run(name, func(t *testing.T) {
			p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) {}}))
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				child := func(_ context.Context, i int) error {
					if i == 2 {
						runtime.Goexit()
					}
					return nil
				}
				if name == "Map" {
					_, err := crew.Map(ctx, p, []int{0, 1, 2, 3}, func(ctx context.Context, i int) (int, error) { return i, child(ctx, i) })
					return 0, err
				}
				return 0, crew.ForEach(ctx, p, countTo(4), child)
			})
			select {
			case <-f.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("the outer future's Wait never returns (its function's Goexit was reported twice); stats %+v", p.Stats())
			}
			if _, err := f.Wait(); err == nil {
				t.Fatal("Wait = nil, want the Goexit reported")
			}
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			idleIdentity(t, "p", p.Stats())
		})
	}
}

// TestGoexitInAGroupFunctionRunOnItsCallerEndsItOnce: the same in a GroupAll, whose g.Go runs
// a function on the caller (the pool's bounded queue full, the pool with hooks). Counted as
// ended twice, the group's count of running functions went below zero, and a later Wait
// never returned or reported the one Goexit twice.
func TestGoexitInAGroupFunctionRunOnItsCallerEndsItOnce(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) {}}))
	groups := make(chan *crew.Group, 1)
	fut := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		g, _ := p.GroupAll(ctx)
		groups <- g
		g.Go(func(context.Context) error { return nil })                   // queued: the queue is now full
		g.Go(func(context.Context) error { runtime.Goexit(); return nil }) // run on the caller
		return 0, nil
	})
	g := <-groups
	<-fut.Done() // the function that made g has ended: a Wait here does not help
	waitReportsOneGoexit(t, p, g)
}

// TestGoexitUnderCallerRunsEndsAGroupFunctionOnce: the same through the CallerRuns policy,
// with no task involved: a Group.Go from a plain goroutine into the full queue of a pool with
// hooks runs the function on the submitter, and its runtime.Goexit ends the submitter.
func TestGoexitUnderCallerRunsEndsAGroupFunctionOnce(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
		crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) {}}))
	gate := make(chan struct{})
	must(t, p.Submit(func() { <-gate }))
	waitFor(t, "the blocker to run", func() bool { return p.Stats().Running == 1 })
	must(t, p.Submit(func() {})) // the queue of one is full
	g, _ := p.GroupAll(context.Background())
	<-goRun(func() {
		g.Go(func(context.Context) error { runtime.Goexit(); return nil }) // run on this goroutine
	})
	g.Go(func(context.Context) error { return nil }) // runs on this goroutine too: the queue is full
	close(gate)
	waitReportsOneGoexit(t, p, g)
}

// waitReportsOneGoexit checks that g's Wait returns within 10 s with an error that reports one
// runtime.Goexit once, then stops p and checks that its counters add up.
func waitReportsOneGoexit(t *testing.T, p *crew.Pool, g *crew.Group) {
	t.Helper()
	var err error
	select {
	case <-goRun(func() { err = g.Wait() }):
	case <-time.After(10 * time.Second):
		t.Fatalf("GroupAll.Wait never returns; stats %+v", p.Stats())
	}
	if err == nil {
		t.Errorf("GroupAll.Wait = nil, want the Goexit reported")
	} else if n := strings.Count(err.Error(), "Goexit"); n != 1 {
		t.Errorf("GroupAll.Wait = %q: the one Goexit reported %d times", err, n)
	}
	p.StopAndWait()
	idleIdentity(t, "p", p.Stats())
}
