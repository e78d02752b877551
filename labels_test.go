package crew_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crewgo/crew"
)

// labelsHere returns the pprof labels of the calling goroutine as a goroutine profile prints
// them, `{"req":"a"}`, or "" for none. The profile groups goroutines by stack and labels; the
// caller's group is the one whose stack holds this function.
//
//go:noinline
func labelsHere() string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		panic(err)
	}
	for _, record := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(record, "crew_test.labelsHere") {
			continue
		}
		for _, line := range strings.Split(record, "\n") {
			if l, ok := strings.CutPrefix(line, "# labels: "); ok {
				return l
			}
		}
		return ""
	}
	panic("the goroutine profile lacks the calling goroutine")
}

// labelled runs f on a goroutine of its own whose labels are {"req": "a"}, and waits for it.
func labelledGoroutine(f func(ctx context.Context)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pprof.Do(context.Background(), pprof.Labels("req", "a"), f)
	}()
	<-done
}

const reqA = `{"req":"a"}`

func TestLabelsHereReadsTheCallersLabels(t *testing.T) {
	if got := labelsHere(); got != "" {
		t.Fatalf("the test's goroutine has labels %s", got)
	}
	labelledGoroutine(func(context.Context) {
		if got := labelsHere(); got != reqA {
			t.Errorf("labels %q, want %s", got, reqA)
		}
	})
}

// TestWorkerStartsWithoutItsSubmittersLabels proves that a worker carries none of the
// labels of the submitter whose submit started it, neither for that task nor for later ones.
func TestWorkerStartsWithoutItsSubmittersLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []crew.Option
	}{
		{"started by a submit", nil},
		{"started idle", []crew.Option{crew.WithMinWorkers(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *crew.Pool
			labels := make(chan string, 2)
			labelledGoroutine(func(context.Context) {
				p = crew.New(1, append(tc.opts, crew.WithIdleTimeout(crew.NoIdleTimeout))...)
				if err := p.Submit(func() { labels <- labelsHere() }); err != nil {
					t.Error(err)
				}
				p.Wait()
			})
			defer p.StopAndWait()
			// The one worker the limit allows is parked, and never reaped: it runs the next
			// task, submitted from a goroutine without labels.
			awaitStats(t, p, "the worker to park", func(s crew.Stats) bool { return s.Idle == 1 })
			if err := p.Submit(func() { labels <- labelsHere() }); err != nil {
				t.Fatal(err)
			}
			p.Wait()
			for _, which := range []string{"first", "later"} {
				if got := <-labels; got != "" {
					t.Errorf("the %s task ran with labels %s", which, got)
				}
			}
		})
	}
}

// TestFunctionsRunUnderTheirContextsLabels proves that a function given with a context runs
// under that context's labels, and that the worker has none again after it: each call below
// runs on a pool of one worker, which then runs a plain task.
func TestFunctionsRunUnderTheirContextsLabels(t *testing.T) {
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("req", "a"))
	calls := []struct {
		name string
		call func(p *crew.Pool, probe func() error) error
	}{
		{"Group.Go", func(p *crew.Pool, probe func() error) error {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { return probe() })
			return g.Wait()
		}},
		{"GroupAll", func(p *crew.Pool, probe func() error) error {
			g, _ := p.GroupAll(ctx)
			g.Go(func(context.Context) error { return probe() })
			return g.Wait()
		}},
		{"Group.TryGo", func(p *crew.Pool, probe func() error) error {
			g, _ := p.Group(ctx)
			if !g.TryGo(func(context.Context) error { return probe() }) {
				return errors.New("TryGo refused")
			}
			return g.Wait()
		}},
		{"Results.Go", func(p *crew.Pool, probe func() error) error {
			r, _ := crew.NewResults[int](ctx, p)
			r.Go(func(context.Context) (int, error) { return 0, probe() })
			_, err := r.Wait()
			return err
		}},
		{"Map", func(p *crew.Pool, probe func() error) error {
			_, err := crew.Map(ctx, p, []int{1, 2}, func(context.Context, int) (int, error) { return 0, probe() })
			return err
		}},
		{"ForEach", func(p *crew.Pool, probe func() error) error {
			return crew.ForEach(ctx, p, slices.Values([]int{1, 2}), func(context.Context, int) error { return probe() })
		}},
		{"MapSeq", func(p *crew.Pool, probe func() error) error {
			return drain(crew.MapSeq(ctx, p, slices.Values([]int{1, 2}), func(context.Context, int) (int, error) { return 0, probe() }))
		}},
		{"MapSeqUnordered", func(p *crew.Pool, probe func() error) error {
			return drain(crew.MapSeqUnordered(ctx, p, slices.Values([]int{1, 2}), func(context.Context, int) (int, error) { return 0, probe() }))
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			p := crew.New(1, crew.WithIdleTimeout(crew.NoIdleTimeout))
			defer p.StopAndWait()
			var mu sync.Mutex
			var seen []string
			err := c.call(p, func() error {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, labelsHere())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range seen {
				if got != reqA {
					t.Errorf("the function ran with labels %q, want %s", got, reqA)
				}
			}
			after := make(chan string, 1)
			if err := p.Submit(func() { after <- labelsHere() }); err != nil {
				t.Fatal(err)
			}
			if got := <-after; got != "" {
				t.Errorf("a plain task after it ran with labels %s", got)
			}
		})
	}
}

// drain ranges over seq and returns its first error.
func drain[R any](seq iter.Seq2[R, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestLabelsAreRestoredAfterAPanickingFunction: a function that panics or calls
// runtime.Goexit leaves its worker without its labels too.
func TestLabelsAreRestoredAfterAPanickingFunction(t *testing.T) {
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("req", "a"))
	p := crew.New(1, crew.WithIdleTimeout(crew.NoIdleTimeout))
	defer p.StopAndWait()
	g, _ := p.Group(ctx)
	g.Go(func(context.Context) error { panic("planned panic") })
	var pe *crew.PanicError
	if err := g.Wait(); !errors.As(err, &pe) {
		t.Fatalf("Wait = %v, want a *PanicError", err)
	}
	after := make(chan string, 1)
	if err := p.Submit(func() { after <- labelsHere() }); err != nil {
		t.Fatal(err)
	}
	if got := <-after; got != "" {
		t.Errorf("a plain task after a panicking function ran with labels %s", got)
	}
}

// TestCallerRunFunctionKeepsItsSubmittersLabels: a function that CallerRuns runs on its
// submitter keeps the submitter's labels, during and after it.
func TestCallerRunFunctionKeepsItsSubmittersLabels(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	release := make(chan struct{})
	started := make(chan struct{})
	if err := p.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := p.Submit(func() {}); err != nil { // fills the queue
		t.Fatal(err)
	}
	labelledGoroutine(func(ctx context.Context) {
		g, _ := p.Group(pprof.WithLabels(ctx, pprof.Labels("req", "b")))
		var during string
		g.Go(func(context.Context) error {
			during = labelsHere()
			return nil
		})
		if during != reqA {
			t.Errorf("the caller-run function ran with labels %q, want its submitter's %s", during, reqA)
		}
		if got := labelsHere(); got != reqA {
			t.Errorf("after it, its submitter has labels %q, want %s", got, reqA)
		}
		close(release)
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	})
}
