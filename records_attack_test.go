package crew_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/crewgo/crew"
)

// TestHistogramsOnlyPoolCountsEveryEndOnce attacks the path where the engine records a pool's
// histograms itself (WithLatencyHistograms without hooks): tasks that return, panic, panic(nil)
// or call runtime.Goexit, run by workers or by their submitter (CallerRuns), on a root, a
// sub-pool of it at a higher level and a sub-pool of that, with a Keyed on the deepest, while
// the root is paused, resumed and shrunk. Each pool's histograms count each of its own tasks
// that started once, and nothing of its sub-pools; every accepted task ends in exactly one of
// Completed and Panicked.
func TestHistogramsOnlyPoolCountsEveryEndOnce(t *testing.T) {
	hist := crew.WithLatencyHistograms()
	quiet := crew.WithPanicHandler(func(any, []byte) {})
	root := crew.New(3, hist, quiet, crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns))
	mid := root.Sub(2, hist, crew.WithPriority(1))
	leaf := mid.Sub(1, hist)
	k := crew.NewKeyed[int](leaf)
	pools := []*crew.Pool{root, mid, leaf}
	task := func(i int) func() {
		return func() {
			switch i % 4 {
			case 1:
				panic("task")
			case 2:
				panic(nil)
			case 3:
				runtime.Goexit()
			}
		}
	}
	const n = 200
	var wg sync.WaitGroup
	for c, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				// A task that calls Goexit on its submitter (CallerRuns) ends that goroutine:
				// submit from one goroutine per task, as a program that knows it would.
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := p.Submit(task(i)); err != nil {
						t.Errorf("pool %d: Submit: %v", c, err)
					}
				}()
				<-done
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if err := k.Submit(i%5, task(i)); err != nil {
				t.Errorf("Keyed.Submit: %v", err)
			}
		}
	}()
	storm := goRun(func() {
		for i := range 50 {
			root.Pause()
			root.Resize(1 + i%3)
			root.Resume()
			runtime.Gosched()
		}
		root.Resize(3)
	})
	awaitReturn(t, "the submitters", goRun(wg.Wait))
	<-storm
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	for c, p := range pools {
		s := p.Stats()
		ended := s.Completed + s.Panicked
		if s.Accepted != ended || s.Discarded+s.Returned+s.Skipped != 0 {
			t.Errorf("pool %d: %+v: want every accepted task completed or panicked", c, s)
		}
		// The leaf's own tasks and its keyed tasks; a turn of a key is not a task of its own.
		want := uint64(n)
		if p == leaf {
			want += n
		}
		if s.WaitTime.Count != want || s.RunTime.Count != want {
			t.Errorf("pool %d: histograms count %d and %d, want %d (%+v)", c, s.WaitTime.Count, s.RunTime.Count, want, s)
		}
	}
	if s := k.Stats(); s.Completed+s.Panicked != n {
		t.Errorf("Keyed %+v: want %d ended", s, n)
	}
	root.StopAndWait()
}
