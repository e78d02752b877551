//go:build go1.25

package crew_test

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// Stats.Idle ("live workers not running a task") across Resize, idle timeouts, MinWorkers,
// Pause, Goexit and panic(nil) in tasks, a sub-pool (which reports none), and StopAndWait.
func TestAmidIdleAcrossResizeTimeoutsAndPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(4, crew.WithIdleTimeout(time.Second), crew.WithMinWorkers(1),
			crew.WithPanicHandler(func(any, []byte) {}))
		sub := p.Sub(3)
		gate := make(chan struct{})
		for i := range 4 {
			q := p
			if i%2 == 0 {
				q = sub
			}
			must(t, q.Submit(func() {
				<-gate
				switch i {
				case 1:
					runtime.Goexit()
				case 2:
					panic(nil)
				}
			}))
		}
		synctest.Wait()
		if s := p.Stats(); s.Running != 4 || s.Idle != 0 {
			t.Fatalf("4 running: %+v", s)
		}
		if s := sub.Stats(); s.Running != 2 || s.Idle != 0 {
			t.Fatalf("sub: %+v", s)
		}
		close(gate)
		synctest.Wait()
		s := p.Stats()
		if s.Running != 0 || s.Idle < 1 || s.Idle > 4 {
			t.Fatalf("after the tasks: %+v", s)
		}
		t.Logf("idle after tasks ended: %d", s.Idle)
		p.Pause()
		if s2 := p.Stats(); s2.Idle != s.Idle || !s2.Paused {
			t.Errorf("Pause changed Idle or Paused false: %+v", s2)
		}
		if ss := sub.Stats(); ss.Paused || ss.Idle != 0 {
			t.Errorf("sub under a paused parent: %+v (want Paused false, Idle 0)", ss)
		}
		p.Resume()
		p.Resize(2)
		synctest.Wait()
		if s := p.Stats(); s.Idle > 2 {
			t.Errorf("after Resize(2): Idle %d above the limit", s.Idle)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if s := p.Stats(); s.Idle != 1 {
			t.Errorf("after the idle timeout: Idle %d, want MinWorkers 1", s.Idle)
		}
		p.Resize(1)
		synctest.Wait()
		if s := p.Stats(); s.Idle != 1 {
			t.Errorf("after Resize(1): Idle %d, want 1", s.Idle)
		}
		p.StopAndWait()
		if s := p.Stats(); s.Idle != 0 || s.Running != 0 {
			t.Errorf("after StopAndWait: %+v", s)
		}
	})
}
