package crew_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// sizedHookLog counts hook calls and checks that several WithHooks apply in order.
type sizedHookLog struct {
	queued, started, finished, rejected, discarded [2]atomic.Int64
	panicked                                       atomic.Int64 // Finished with Panicked set (hook 0)
	orderErr                                       atomic.Int64
}

// hooks returns the Hooks of option i (0 or 1). Hook 0's Started panics with nil every 7th
// call; hook 1 checks hook 0 was called first for the same event on this goroutine... since
// events interleave across goroutines, it checks counts only: hook 1's count never exceeds
// hook 0's.
func (l *sizedHookLog) hooks(i int) crew.Hooks {
	chk := func(c *[2]atomic.Int64) {
		n := c[i].Add(1)
		if i == 1 && n > c[0].Load() {
			l.orderErr.Add(1)
		}
	}
	return crew.Hooks{
		Queued: func(crew.TaskInfo) { chk(&l.queued) },
		Started: func(crew.TaskInfo) {
			chk(&l.started)
			if i == 0 && l.started[0].Load()%7 == 0 {
				panic(nil)
			}
		},
		Finished: func(ti crew.TaskInfo) {
			chk(&l.finished)
			if i == 0 && ti.Panicked {
				l.panicked.Add(1)
			}
		},
		Rejected:  func(error) { chk(&l.rejected) },
		Discarded: func(crew.TaskInfo) { chk(&l.discarded) },
	}
}

// Histograms and hooks on a pool with CallerRuns overflow, sub-pools with priorities (whose
// tasks the root does not observe), a Keyed, tasks that panic, panic(nil) and call Goexit,
// under Pause/Resume and Resize storms: WaitTime.Count never below RunTime.Count, counts never
// go backwards, and once idle RunTime.Count equals the root's own tasks that ran (keyed tasks
// one each), Started/Finished hooks match the histograms, and both WithHooks saw every event.
func TestAmidHistogramsAndHooksUnderStorms(t *testing.T) {
	for _, o := range []crew.Overflow{crew.CallerRuns, crew.DiscardOldest} {
		t.Run(map[crew.Overflow]string{crew.CallerRuns: "CallerRuns", crew.DiscardOldest: "DiscardOldest"}[o], func(t *testing.T) {
			sizedHistogramsAndHooks(t, o)
		})
	}
}

func sizedHistogramsAndHooks(t *testing.T, o crew.Overflow) {
	var hl sizedHookLog
	var dropped atomic.Int64
	var handled atomic.Int64
	root := crew.New(4, crew.WithQueueSize(4), crew.WithOverflow(o), crew.WithDiscardHandler(func(any) { dropped.Add(1) }),
		crew.WithLatencyHistograms(), crew.WithHooks(hl.hooks(0)), crew.WithHooks(hl.hooks(1)),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	subHi := root.Sub(2, crew.WithPriority(2), crew.WithLatencyHistograms())
	subLo := subHi.Sub(3, crew.WithPriority(-1))
	k := crew.NewKeyed[int](root)

	var ownRan, subRan, keyedRan, ownSubmitted, keyedSubmitted atomic.Int64
	body := func(ctr *atomic.Int64, n int) func() {
		return func() {
			ctr.Add(1)
			time.Sleep(time.Duration(n%3) * 100 * time.Microsecond)
			switch n % 31 {
			case 5:
				panic("boom")
			case 11:
				panic(nil)
			case 17:
				runtime.Goexit()
			}
		}
	}
	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() {
		root.Pause()
		time.Sleep(200 * time.Microsecond)
		root.Resume()
		time.Sleep(time.Millisecond)
	})
	sizes := []int{1, 4, 2, 6}
	var ri atomic.Int64
	repeatUntil(&storms, stop, func() {
		root.Resize(sizes[ri.Add(1)%int64(len(sizes))])
		time.Sleep(300 * time.Microsecond)
	})
	watchErr := make(chan string, 1)
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		var prevW, prevR uint64
		for {
			s := root.Stats()
			w, r := s.WaitTime.Count, s.RunTime.Count
			if w < r || w < prevW || r < prevR {
				select {
				case watchErr <- "WaitTime " + sizedItoa(w) + " RunTime " + sizedItoa(r) + " after " + sizedItoa(prevW) + "/" + sizedItoa(prevR):
				default:
				}
				return
			}
			prevW, prevR = w, r
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	const each = 150
	together(4, each, func(c, i int) {
		n := c*each + i
		switch n % 4 {
		case 0:
			ownSubmitted.Add(1)
			must(t, root.Submit(body(&ownRan, n)))
		case 1:
			must(t, subHi.Submit(body(&subRan, n)))
		case 2:
			must(t, subLo.Submit(body(&subRan, n)))
		case 3:
			keyedSubmitted.Add(1)
			must(t, k.Submit(n%5, body(&keyedRan, n)))
		}
	})
	close(stop)
	storms.Wait()
	watch.Wait()
	select {
	case e := <-watchErr:
		t.Errorf("histogram snapshot: %s", e)
	default:
	}
	root.Resume()
	root.Resize(4)
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	k.Wait()
	s := root.Stats()
	ks := k.Stats()
	t.Logf("root %+v\nkeyed %+v\ndropped %d", s, ks, dropped.Load())
	want := uint64(ownRan.Load() + keyedRan.Load())
	t.Logf("own submitted %d ran %d, keyed submitted %d ran %d", ownSubmitted.Load(), ownRan.Load(), keyedSubmitted.Load(), keyedRan.Load())
	if d := dropped.Load(); hl.discarded[0].Load() != d || hl.discarded[1].Load() != d {
		t.Errorf("Discarded hooks %d/%d, want %d (the discard handler's count)", hl.discarded[0].Load(), hl.discarded[1].Load(), d)
	}
	if own := ownRan.Load() + dropped.Load() - int64(ks.Discarded); own != ownSubmitted.Load() {
		t.Errorf("own tasks: %d ran + %d dropped, want %d submitted", ownRan.Load(), dropped.Load()-int64(ks.Discarded), ownSubmitted.Load())
	}
	if kk := keyedRan.Load() + int64(ks.Discarded); kk != keyedSubmitted.Load() || ks.Accepted != uint64(kk) {
		t.Errorf("keyed tasks: %d ran + %d dropped, Accepted %d, want %d submitted", keyedRan.Load(), ks.Discarded, ks.Accepted, keyedSubmitted.Load())
	}
	if s.RunTime.Count != want || s.WaitTime.Count != want {
		t.Errorf("idle root: RunTime.Count %d, WaitTime.Count %d, want %d (own %d, keyed %d); stats %+v",
			s.RunTime.Count, s.WaitTime.Count, want, ownRan.Load(), keyedRan.Load(), s)
	}
	for i := range 2 {
		if hl.started[i].Load() != int64(want) || hl.finished[i].Load() != int64(want) {
			t.Errorf("hooks %d: Started %d, Finished %d, want %d each", i, hl.started[i].Load(), hl.finished[i].Load(), want)
		}
		if q := hl.queued[i].Load(); q != ownSubmitted.Load()+keyedSubmitted.Load() {
			t.Errorf("hooks %d: Queued %d, want %d", i, q, ownSubmitted.Load()+keyedSubmitted.Load())
		}
	}
	if hl.orderErr.Load() != 0 {
		t.Errorf("hook 1 saw an event before hook 0 %d times", hl.orderErr.Load())
	}
	ss := subHi.Stats()
	if ss.RunTime.Count == 0 || ss.Idle != 0 {
		t.Errorf("subHi stats %+v", ss)
	}
	idleIdentity(t, "keyed", ks)
	root.StopAndWait()
	if s := root.Stats(); s.Idle != 0 || s.Running != 0 {
		t.Errorf("after StopAndWait: %+v", s)
	}
	_ = context.Background
}

func sizedItoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}
