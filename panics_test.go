package crew_test

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// reportingCalls are the calls that report a function's panic to their caller as a
// *crew.PanicError: goCalls' Go, Group.Go and Results.Go, Map, ForEach, MapSeq and
// MapSeqUnordered.
var reportingCalls = append(slices.Clip(goCalls),
	goCall{"Map", func(p *crew.Pool, fn func()) func() error {
		_, err := crew.Map(context.Background(), p, []int{1}, func(context.Context, int) (int, error) { fn(); return 1, nil })
		return func() error { return err }
	}},
	goCall{"ForEach", func(p *crew.Pool, fn func()) func() error {
		err := crew.ForEach(context.Background(), p, countTo(1), func(context.Context, int) error { fn(); return nil })
		return func() error { return err }
	}},
	goCall{"MapSeq", func(p *crew.Pool, fn func()) func() error {
		return firstError(crew.MapSeq(context.Background(), p, countTo(1), func(context.Context, int) (int, error) { fn(); return 1, nil }))
	}},
	goCall{"MapSeqUnordered", func(p *crew.Pool, fn func()) func() error {
		return firstError(crew.MapSeqUnordered(context.Background(), p, countTo(1), func(context.Context, int) (int, error) { fn(); return 1, nil }))
	}},
)

// firstError ranges over seq and returns a function that returns its first error.
func firstError(seq iter.Seq2[int, error]) func() error {
	var first error
	for _, err := range seq {
		if err != nil && first == nil {
			first = err
		}
	}
	return func() error { return first }
}

// panicNilSettings are the two behaviours of panic(nil): by default recover returns a
// *runtime.PanicNilError; under GODEBUG=panicnil=1 it returns nil.
var panicNilSettings = []string{"panicnil=0", "panicnil=1"}

// TestPanicNilIsReportedAsAPanic proves the doc of [crew.PanicError] for a function that
// panics with nil: each of reportingCalls reports a *PanicError, whose Value is what recover
// returned (nil under GODEBUG=panicnil=1), and never a Goexit.
func TestPanicNilIsReportedAsAPanic(t *testing.T) {
	for _, setting := range panicNilSettings {
		for _, c := range reportingCalls {
			t.Run(setting+"/"+c.name, func(t *testing.T) {
				t.Setenv("GODEBUG", setting) // the runtime rereads GODEBUG when it changes
				p := crew.New(1)
				defer p.StopAndWait()
				err := c.start(p, func() { panic(nil) })()
				var pe *crew.PanicError
				if !errors.As(err, &pe) {
					t.Fatalf("Wait = %v, want a *crew.PanicError", err)
				}
				var pne *runtime.PanicNilError
				if setting == "panicnil=1" && pe.Value != nil || setting == "panicnil=0" && !errors.As(err, &pne) {
					t.Fatalf("PanicError.Value = %#v, want what recover returns under %s", pe.Value, setting)
				}
				if !strings.Contains(string(pe.Stack), "panics_test.go") {
					t.Fatalf("PanicError.Stack does not hold the frame that panicked:\n%s", pe.Stack)
				}
				// The pool is intact: it runs the next function, and counts both as completed.
				if err := c.start(p, func() {})(); err != nil {
					t.Fatalf("the next function: %v", err)
				}
				p.Wait()
				if s := p.Stats(); s.Completed != s.Accepted || s.Panicked != 0 {
					t.Fatalf("Stats = %+v, want every task completed", s)
				}
			})
		}
	}
}

// TestGoexitIsReportedAsAGoexit: a function that calls runtime.Goexit is reported as such,
// not as a panic, whatever GODEBUG says of panic(nil), and its worker's place is not lost.
func TestGoexitIsReportedAsAGoexit(t *testing.T) {
	for _, setting := range panicNilSettings {
		for _, c := range reportingCalls {
			t.Run(setting+"/"+c.name, func(t *testing.T) {
				t.Setenv("GODEBUG", setting)
				p := crew.New(1)
				defer p.StopAndWait()
				err := c.start(p, runtime.Goexit)()
				var pe *crew.PanicError
				if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "Goexit") {
					t.Fatalf("Wait = %v, want an error naming Goexit, not a panic", err)
				}
				if err := c.start(p, func() {})(); err != nil {
					t.Fatalf("the next function: %v", err)
				}
			})
		}
	}
}

// TestPanicNilInADiscardHandlerOrHookReachesThePanicHandler proves [crew.WithDiscardHandler]'s
// and [crew.WithHooks]' "a handler (hook) that panics is reported to the panic handler" for
// panic(nil), under either GODEBUG setting: recover returns nil for it under panicnil=1.
func TestPanicNilInADiscardHandlerOrHookReachesThePanicHandler(t *testing.T) {
	for _, setting := range panicNilSettings {
		t.Run(setting, func(t *testing.T) {
			t.Setenv("GODEBUG", setting)
			var handled atomic.Int32
			panics := func(any) { panic(nil) }
			p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
				crew.WithDiscardHandler(panics),
				crew.WithHooks(crew.Hooks{Rejected: func(error) { panic(nil) }}),
				crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
			release := holdWorkers(t, plainPool{p}, 1, 1) // the worker busy, the queue full
			if err := p.Submit(func() {}); err != nil {   // drops the oldest queued task
				t.Fatalf("Submit over a full DiscardOldest queue = %v", err)
			}
			if got := handled.Load(); got != 1 {
				t.Fatalf("the panic handler saw %d panics after the discard handler's panic(nil), want 1", got)
			}
			release()
			p.StopAndWait()
			_ = p.Submit(func() {}) // refused: the Rejected hook panics with nil
			if got := handled.Load(); got != 2 {
				t.Fatalf("the panic handler saw %d panics after the Rejected hook's panic(nil), want 2", got)
			}
		})
	}
}
