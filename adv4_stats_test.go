package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// adv4sHooks counts the calls of each hook, the Rejected ones by the error they got, and the
// Finished ones that said Panicked.
type adv4sHooks struct {
	queued, started, finished, finishedPanicked, discarded    atomic.Int64
	rejectedFull, rejectedCtx, rejectedStopped, rejectedOther atomic.Int64
}

func (c *adv4sHooks) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:  func(crew.TaskInfo) { c.queued.Add(1) },
		Started: func(crew.TaskInfo) { c.started.Add(1) },
		Finished: func(ti crew.TaskInfo) {
			if ti.Panicked {
				c.finishedPanicked.Add(1)
			}
			c.finished.Add(1)
		},
		Rejected: func(err error) {
			switch {
			case errors.Is(err, crew.ErrQueueFull):
				c.rejectedFull.Add(1)
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				c.rejectedCtx.Add(1)
			case errors.Is(err, crew.ErrStopped):
				c.rejectedStopped.Add(1)
			default:
				c.rejectedOther.Add(1)
			}
		},
		Discarded: func(crew.TaskInfo) { c.discarded.Add(1) },
	}
}

func (c *adv4sHooks) rejected() int64 {
	return c.rejectedFull.Load() + c.rejectedCtx.Load() + c.rejectedStopped.Load() + c.rejectedOther.Load()
}

func (c *adv4sHooks) String() string {
	return fmt.Sprintf("queued %d started %d finished %d (panicked %d) discarded %d rejected full %d ctx %d stopped %d other %d",
		c.queued.Load(), c.started.Load(), c.finished.Load(), c.finishedPanicked.Load(), c.discarded.Load(),
		c.rejectedFull.Load(), c.rejectedCtx.Load(), c.rejectedStopped.Load(), c.rejectedOther.Load())
}

// adv4sEnded is how many accepted tasks of s have ended, one way or another.
func adv4sEnded(s crew.Stats) uint64 {
	return s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
}

// adv4sHistogramErr reports what is wrong with h, a histogram of a snapshot, alone and
// against prev, the same histogram in an earlier snapshot of the same pool (nil if none):
// its shape, Count the sum of Counts, and no count or sum going back.
func adv4sHistogramErr(h, prev *crew.Histogram) error {
	if h == nil {
		return errors.New("nil histogram under WithLatencyHistograms")
	}
	if len(h.Buckets) != len(h.Counts)+1 || len(h.Counts) == 0 {
		return fmt.Errorf("%d boundaries for %d counts", len(h.Buckets), len(h.Counts))
	}
	if h.Buckets[0] != 0 || !math.IsInf(h.Buckets[len(h.Buckets)-1], 1) {
		return fmt.Errorf("boundaries run from %v to %v, want 0 to +Inf", h.Buckets[0], h.Buckets[len(h.Buckets)-1])
	}
	var sum uint64
	for _, c := range h.Counts {
		sum += c
	}
	if sum != h.Count {
		return fmt.Errorf("Count %d, but the Counts add up to %d", h.Count, sum)
	}
	if h.Sum < 0 || math.IsNaN(h.Sum) {
		return fmt.Errorf("Sum %v", h.Sum)
	}
	if prev != nil {
		if h.Count < prev.Count || h.Sum < prev.Sum {
			return fmt.Errorf("Count %d, Sum %v after %d, %v", h.Count, h.Sum, prev.Count, prev.Sum)
		}
		for i := range h.Counts {
			if h.Counts[i] < prev.Counts[i] {
				return fmt.Errorf("bucket %d went back from %d to %d", i, prev.Counts[i], h.Counts[i])
			}
		}
	}
	return nil
}

// adv4sSnapshotErr reports a broken promise of Stats in s, a snapshot taken after prev:
// a counter or histogram going back, a negative gauge, Running+Waiting other than the
// accepted tasks not ended, Running above MaxWorkers (when limit says no shrinking Resize
// is made), or a histogram that does not add up or counts fewer starts than ends.
func adv4sSnapshotErr(s, prev crew.Stats, limit, histograms bool) error {
	if countersWentBack(s, prev) {
		return fmt.Errorf("a counter went back: %+v after %+v", s, prev)
	}
	if s.Running < 0 || s.Waiting < 0 || s.Idle < 0 {
		return fmt.Errorf("a negative gauge: %+v", s)
	}
	if ended := adv4sEnded(s); ended > s.Accepted || uint64(s.Running+s.Waiting) != s.Accepted-ended {
		return fmt.Errorf("Running %d + Waiting %d, but Accepted %d and %d ended: %+v", s.Running, s.Waiting, s.Accepted, ended, s)
	}
	if s.Completed+s.Panicked > s.Accepted || s.CallerRan > s.Completed+s.Panicked {
		return fmt.Errorf("Completed+Panicked or CallerRan above Accepted: %+v", s)
	}
	if limit && s.Running > s.MaxWorkers {
		return fmt.Errorf("Running %d over MaxWorkers %d", s.Running, s.MaxWorkers)
	}
	if !histograms {
		if s.WaitTime != nil || s.RunTime != nil {
			return errors.New("histograms without WithLatencyHistograms")
		}
		return nil
	}
	var pw, pr *crew.Histogram
	if prev.WaitTime != nil {
		pw, pr = prev.WaitTime, prev.RunTime
	}
	if err := adv4sHistogramErr(s.WaitTime, pw); err != nil {
		return fmt.Errorf("WaitTime: %w", err)
	}
	if err := adv4sHistogramErr(s.RunTime, pr); err != nil {
		return fmt.Errorf("RunTime: %w", err)
	}
	if s.WaitTime.Count < s.RunTime.Count {
		return fmt.Errorf("WaitTime counts %d, RunTime %d", s.WaitTime.Count, s.RunTime.Count)
	}
	return nil
}

// adv4sWatch checks every snapshot of each of pools, in a loop until stop is closed, and
// returns the first fault it saw (nil if none) once stopped.
func adv4sWatch(stop <-chan struct{}, limit bool, hist []bool, pools ...interface{ Stats() crew.Stats }) <-chan error {
	errc := make(chan error, 1)
	go func() {
		prev := make([]crew.Stats, len(pools))
		for i, p := range pools {
			prev[i] = p.Stats()
		}
		for {
			for i, p := range pools {
				s := p.Stats()
				if err := adv4sSnapshotErr(s, prev[i], limit, hist[i]); err != nil {
					errc <- fmt.Errorf("pool %d: %w", i, err)
					return
				}
				prev[i] = s
			}
			select {
			case <-stop:
				errc <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return errc
}

// adv4sOK reports err, if not nil, as a failure of t, from any goroutine.
func adv4sOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

// adv4sGoid returns the calling goroutine's id.
func adv4sGoid() uint64 { return obs2Goid() }

// adv4sPolicies are the overflow settings the overload tests run under.
var adv4sPolicies = []struct {
	name string
	opts []crew.Option
}{
	{"Reject", []crew.Option{crew.WithOverflow(crew.Reject)}},
	{"CallerRuns", []crew.Option{crew.WithOverflow(crew.CallerRuns), crew.WithMaxWait(100 * time.Microsecond)}},
	{"DiscardOldest", []crew.Option{crew.WithOverflow(crew.DiscardOldest)}},
	{"BlockMaxWaitMaxBlocked", []crew.Option{crew.WithMaxWait(200 * time.Microsecond), crew.WithMaxBlocked(2)}},
}

// TestAdvStatsHooksAndHistogramsMirrorCountersUnderOverloadStorms proves that the hooks, the
// histograms and the counters of Stats tell one story for a pool (a root, and a sub-pool of a
// sub-pool) whose bounded queue overflows under each policy, while its tree is paused,
// resumed and resized and its tasks panic, panic with nil or call runtime.Goexit, and
// futures are canceled: every snapshot adds up and no counter goes back; once idle, Queued
// was called once per accepted or refused submit, Rejected once per refusal (ErrQueueFull
// as often as Stats.Rejected, a context error as often as Stats.Canceled), Started and
// Finished once per task that ran, as often as the histograms count and as
// Completed+Panicked say, Finished said Panicked once per panicked task, Discarded once per
// Stats.Discarded and per task the discard handler got, CallerRan counts exactly the tasks
// that ran on their submitter, and Skipped exactly the futures Cancel took out.
func TestAdvStatsHooksAndHistogramsMirrorCountersUnderOverloadStorms(t *testing.T) {
	for _, policy := range adv4sPolicies {
		for _, depth := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/depth%d", policy.name, depth), func(t *testing.T) {
				adv4sOverloadStorm(t, policy.opts, depth)
			})
		}
	}
}

func adv4sOverloadStorm(t *testing.T, policy []crew.Option, depth int) {
	var h adv4sHooks
	var handled, dropped atomic.Int64
	opts := append([]crew.Option{
		crew.WithQueueSize(3), crew.WithHooks(h.hooks()), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithDiscardHandler(func(v any) {
			if _, ok := v.(func()); !ok {
				t.Errorf("the discard handler got a %T", v)
			}
			dropped.Add(1)
		}),
	}, policy...)
	var root, p *crew.Pool
	tree := []*crew.Pool{}
	if depth == 0 {
		root = crew.New(3, opts...)
		p = root
		tree = append(tree, root)
	} else {
		root = crew.New(3)
		a := root.Sub(3)
		p = a.Sub(3, opts...)
		tree = append(tree, root, a, p)
	}
	defer root.StopAndWait()

	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 300*time.Microsecond, tree...)
	repeatUntil(&storms, stop, func() {
		tree[rand.IntN(len(tree))].Resize(2 + rand.IntN(3))
		time.Sleep(400 * time.Microsecond)
	})
	hist := make([]bool, len(tree))
	hist[len(tree)-1] = true
	watched := adv4sWatch(stop, false, hist, anyStats(tree)...)

	per := 200
	if testing.Short() {
		per = 80
	}
	const submitters = 4
	var (
		began, panicked, callerRan, cancels atomic.Int64
		refusedFull, refusedCtx, tryFalse   atomic.Int64
		futDiscarded, futSkippedSeen        atomic.Int64
		futs                                sync.Mutex
		all                                 []*crew.Future[int]
	)
	// task is a plain task submitted from the goroutine with id gid.
	task := func(gid uint64, kind int) func() {
		return func() {
			began.Add(1)
			if adv4sGoid() == gid {
				callerRan.Add(1)
			}
			switch kind {
			case 1:
				panicked.Add(1)
				panic("boom")
			case 2:
				panicked.Add(1)
				panic(nil)
			case 3:
				runtime.Goexit()
			case 4:
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	refused := func(err error) {
		switch {
		case err == nil:
		case errors.Is(err, crew.ErrQueueFull):
			refusedFull.Add(1)
		case errors.Is(err, context.DeadlineExceeded):
			refusedCtx.Add(1)
		default:
			t.Errorf("unexpected refusal: %v", err)
		}
	}
	var subs sync.WaitGroup
	for range submitters {
		subs.Add(1)
		go func() {
			defer subs.Done()
			gid := adv4sGoid()
			for i := range per {
				kind := i % 5
				if i%25 == 0 {
					time.Sleep(200 * time.Microsecond) // let the storms act between bursts
				}
				switch i % 7 {
				case 0, 1:
					if kind == 3 {
						// A caller-run Goexit would end this submitter: submit it from a
						// goroutine of its own.
						<-goRun(func() { refused(p.Submit(task(adv4sGoid(), kind))) })
						continue
					}
					refused(p.Submit(task(gid, kind)))
				case 2:
					if !p.TrySubmit(task(gid, kind%3)) {
						tryFalse.Add(1)
					}
				case 3:
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Microsecond)
					refused(p.SubmitContext(ctx, task(gid, kind%3)))
					cancel()
				case 4:
					refused(p.SubmitN(2, task(gid, kind%3)))
				case 5, 6:
					f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) {
						began.Add(1)
						if adv4sGoid() == gid {
							callerRan.Add(1)
						}
						return 1, nil
					})
					if i%3 == 0 && f.Cancel() {
						cancels.Add(1)
					}
					futs.Lock()
					all = append(all, f)
					futs.Unlock()
				}
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	close(stop)
	storms.Wait()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	for _, q := range tree {
		q.Resume()
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	for _, f := range all {
		var err error
		awaitReturn(t, "a future", goRun(func() { _, err = f.Wait() }))
		switch {
		case err == nil:
		case errors.Is(err, crew.ErrDiscarded):
			futDiscarded.Add(1)
		case errors.Is(err, context.Canceled):
			futSkippedSeen.Add(1)
		case errors.Is(err, crew.ErrQueueFull):
			refusedFull.Add(1)
		default:
			t.Errorf("future: %v", err)
		}
	}
	s := p.Stats()
	if testing.Verbose() {
		t.Logf("stats %+v\nhooks %v", s, &h)
	}
	idleIdentity(t, "the pool", s)
	if err := adv4sSnapshotErr(s, s, false, true); err != nil {
		t.Fatal(err)
	}
	for i, q := range tree {
		idleIdentity(t, fmt.Sprint("pool ", i, " of the tree"), q.Stats())
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format+"\nstats %+v\nhooks %v\nwaits %d runs %d", append(args, s, &h, s.WaitTime.Count, s.RunTime.Count)...)
	}
	if got := h.queued.Load(); uint64(got) != s.Accepted+uint64(h.rejected()) {
		fail("Queued called %d times for %d accepted and %d refused submits", got, s.Accepted, h.rejected())
	}
	if h.rejectedStopped.Load() != 0 || h.rejectedOther.Load() != 0 {
		fail("Rejected got errors other than ErrQueueFull and a context's")
	}
	if uint64(h.rejectedFull.Load()) != s.Rejected || s.Rejected != uint64(refusedFull.Load()+tryFalse.Load()) {
		fail("Rejected hooks with ErrQueueFull %d, Stats.Rejected %d, submits refused as full %d",
			h.rejectedFull.Load(), s.Rejected, refusedFull.Load()+tryFalse.Load())
	}
	if uint64(h.rejectedCtx.Load()) != s.Canceled || s.Canceled != uint64(refusedCtx.Load()) {
		fail("Rejected hooks with a context error %d, Stats.Canceled %d, submits whose context ended %d",
			h.rejectedCtx.Load(), s.Canceled, refusedCtx.Load())
	}
	ran := s.Completed + s.Panicked
	if uint64(h.started.Load()) != ran || uint64(h.finished.Load()) != ran ||
		s.WaitTime.Count != ran || s.RunTime.Count != ran || uint64(began.Load()) != ran {
		fail("%d tasks began, Completed+Panicked %d", began.Load(), ran)
	}
	if s.Panicked != uint64(panicked.Load()) || h.finishedPanicked.Load() != panicked.Load() || handled.Load() != panicked.Load() {
		fail("%d tasks panicked, Stats.Panicked %d, Finished said so %d times, the handler got %d",
			panicked.Load(), s.Panicked, h.finishedPanicked.Load(), handled.Load())
	}
	if uint64(h.discarded.Load()) != s.Discarded || s.Discarded != uint64(dropped.Load()+futDiscarded.Load()) {
		fail("Discarded hooks %d, Stats.Discarded %d, plain tasks to the handler %d, futures failed %d",
			h.discarded.Load(), s.Discarded, dropped.Load(), futDiscarded.Load())
	}
	if s.CallerRan != uint64(callerRan.Load()) {
		fail("Stats.CallerRan %d, tasks that ran on their submitter %d", s.CallerRan, callerRan.Load())
	}
	if s.Skipped != uint64(cancels.Load()) || futSkippedSeen.Load() != cancels.Load() || s.Returned != 0 {
		fail("Stats.Skipped %d, Returned %d, futures canceled %d, Waits that said so %d",
			s.Skipped, s.Returned, cancels.Load(), futSkippedSeen.Load())
	}
}

// anyStats turns pools into what adv4sWatch takes.
func anyStats(pools []*crew.Pool) []interface{ Stats() crew.Stats } {
	out := make([]interface{ Stats() crew.Stats }, len(pools))
	for i, p := range pools {
		out[i] = p
	}
	return out
}

// adv4sKeyedErr reports a broken promise of Keyed.Stats in s, taken after prev: a counter
// going back, a negative gauge, Running+Waiting other than the accepted tasks not ended,
// or a field the doc says is 0 or nil that is not.
func adv4sKeyedErr(s, prev crew.Stats) error {
	if countersWentBack(s, prev) {
		return fmt.Errorf("a counter went back: %+v after %+v", s, prev)
	}
	if s.Running < 0 || s.Waiting < 0 {
		return fmt.Errorf("a negative gauge: %+v", s)
	}
	ended := s.Completed + s.Panicked + s.Discarded + s.Returned
	if ended > s.Accepted || uint64(s.Running+s.Waiting) != s.Accepted-ended {
		return fmt.Errorf("Running %d + Waiting %d, but Accepted %d and %d ended: %+v", s.Running, s.Waiting, s.Accepted, ended, s)
	}
	if s.Idle != 0 || s.CallerRan != 0 || s.Skipped != 0 || s.WaitTime != nil || s.RunTime != nil {
		return fmt.Errorf("Idle, CallerRan, Skipped or a histogram set: %+v", s)
	}
	return nil
}

// TestAdvStatsKeyedCountsEachTaskOnceThroughDiscardsStormsAndStopNow proves the docs of
// Keyed.Stats, Stats and Hooks for a Keyed on a sub-pool of a sub-pool whose bounded queue
// drops the oldest task, so that plain submits drop keys' turns, while the tree is paused,
// resumed and resized, and keyed tasks panic, panic with nil or call runtime.Goexit; it ends
// in a StopNow of the root while paused. No snapshot of the Keyed or a pool breaks a
// promise; once idle, the Keyed accounts for each task once (Accepted = Completed + Panicked
// + Discarded + Returned), Completed and Panicked are what the tasks did, Returned is the
// keyed tasks StopNow handed back and Discarded those the discard handler got; the pool's
// hooks saw one Queued, Started and Finished per task, keyed or plain, as its histograms
// count, and one Discarded per task the handler got.
func TestAdvStatsKeyedCountsEachTaskOnceThroughDiscardsStormsAndStopNow(t *testing.T) {
	// A task called outside the pool (by the discard handler, or by this test on what StopNow
	// returned) runs on a goroutine marked here, and counts as gone instead of as run.
	var outside sync.Map
	callOutside := func(f func()) {
		id := adv4sGoid()
		outside.Store(id, true)
		defer outside.Delete(id)
		f()
	}
	isOutside := func() bool { _, ok := outside.Load(adv4sGoid()); return ok }

	var h adv4sHooks
	var handled, handlerCalls atomic.Int64
	root := crew.New(3)
	a := root.Sub(2)
	b := a.Sub(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithHooks(h.hooks()), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithDiscardHandler(func(v any) {
			handlerCalls.Add(1)
			f, ok := v.(func())
			if !ok {
				t.Errorf("the discard handler got a %T", v)
				return
			}
			callOutside(f)
		}))
	defer root.StopAndWait()
	k := crew.NewKeyed[int](b)
	tree := []*crew.Pool{root, a, b}

	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 300*time.Microsecond, tree...)
	repeatUntil(&storms, stop, func() {
		tree[rand.IntN(len(tree))].Resize(1 + rand.IntN(3))
		time.Sleep(400 * time.Microsecond)
	})
	stopWatch := make(chan struct{})
	watchedPools := adv4sWatch(stopWatch, false, []bool{false, false, true}, anyStats(tree)...)
	keyedErr := make(chan error, 1)
	go func() {
		prev := k.Stats()
		for {
			s := k.Stats()
			if err := adv4sKeyedErr(s, prev); err != nil {
				keyedErr <- err
				return
			}
			prev = s
			select {
			case <-stopWatch:
				keyedErr <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()

	var ranKeyed, panickedKeyed, goneKeyed, ranPlain, gonePlain atomic.Int64
	keyedTask := func(kind int) func() {
		return func() {
			if isOutside() {
				goneKeyed.Add(1)
				return
			}
			ranKeyed.Add(1)
			switch kind {
			case 1:
				panickedKeyed.Add(1)
				panic("boom")
			case 2:
				panickedKeyed.Add(1)
				panic(nil)
			case 3:
				runtime.Goexit()
			case 4:
				time.Sleep(30 * time.Microsecond)
			}
		}
	}
	plainTask := func() {
		if isOutside() {
			gonePlain.Add(1)
			return
		}
		ranPlain.Add(1)
	}
	per := 200
	if testing.Short() {
		per = 80
	}
	var subs sync.WaitGroup
	for w := range 3 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range per {
				if i%25 == 0 {
					time.Sleep(200 * time.Microsecond)
				}
				if w == 0 && i%6 == 0 {
					adv4sOK(t, b.Submit(plainTask))
					continue
				}
				adv4sOK(t, k.Submit(w*10+i%4, keyedTask(i%5)))
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	// Paused, with work queued at every depth, the root is stopped now.
	root.Pause()
	for i := range 6 {
		must(t, k.Submit(100+i%2, keyedTask(0)))
		must(t, b.Submit(plainTask))
	}
	close(stop)
	storms.Wait()
	root.Pause() // the storm may have resumed it
	back := root.StopNow()
	for _, f := range back {
		callOutside(f)
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	close(stopWatch)
	if err := <-watchedPools; err != nil {
		t.Fatal(err)
	}
	if err := <-keyedErr; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))

	ks, bs := k.Stats(), b.Stats()
	if testing.Verbose() {
		t.Logf("keyed %+v\nb %+v\nhooks %v\nran %d/%d, gone %d/%d, handed back %d", ks, bs, &h,
			ranKeyed.Load(), ranPlain.Load(), goneKeyed.Load(), gonePlain.Load(), len(back))
	}
	idleIdentity(t, "the Keyed", ks)
	if err := adv4sKeyedErr(ks, ks); err != nil {
		t.Fatal(err)
	}
	for i, p := range tree {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
	plainN := (per + 5) / 6
	if ks.Accepted != uint64(3*per-plainN+6) || ks.Completed+ks.Panicked != uint64(ranKeyed.Load()) ||
		ks.Panicked != uint64(panickedKeyed.Load()) || ks.Discarded+ks.Returned != uint64(goneKeyed.Load()) {
		t.Errorf("Keyed.Stats %+v: want %d accepted, %d ran, %d panicked, %d discarded or returned",
			ks, 3*per-plainN+6, ranKeyed.Load(), panickedKeyed.Load(), goneKeyed.Load())
	}
	if handled.Load() != panickedKeyed.Load() || h.finishedPanicked.Load() != panickedKeyed.Load() {
		t.Errorf("%d keyed tasks panicked; the handler got %d, Finished said so %d times",
			panickedKeyed.Load(), handled.Load(), h.finishedPanicked.Load())
	}
	ran := ranKeyed.Load() + ranPlain.Load()
	if h.started.Load() != ran || h.finished.Load() != ran || bs.WaitTime.Count != uint64(ran) || bs.RunTime.Count != uint64(ran) {
		t.Errorf("%d tasks ran; hooks %v; histograms %d and %d", ran, &h, bs.WaitTime.Count, bs.RunTime.Count)
	}
	if h.queued.Load() != int64(3*per+12) || h.rejected() != 0 {
		t.Errorf("%d tasks submitted; hooks %v", 3*per+12, &h)
	}
	if int64(len(back))+handlerCalls.Load() != goneKeyed.Load()+gonePlain.Load() || h.discarded.Load() != handlerCalls.Load() {
		t.Errorf("%d handed back, %d to the discard handler, %d Discarded hooks, but %d keyed and %d plain tasks gone",
			len(back), handlerCalls.Load(), h.discarded.Load(), goneKeyed.Load(), gonePlain.Load())
	}
	if ks.Discarded > uint64(handlerCalls.Load()) || bs.Discarded > uint64(handlerCalls.Load()) {
		t.Errorf("Keyed.Discarded %d, b.Discarded %d, more than the %d tasks the handler got", ks.Discarded, bs.Discarded, handlerCalls.Load())
	}
}

// adv4sTree is a root of 4 workers, a sub-pool a of 3 and its sub-pool b of 2.
func adv4sTree(rootOpts ...crew.Option) (root, a, b *crew.Pool) {
	root = crew.New(4, rootOpts...)
	a = root.Sub(3)
	b = a.Sub(2, crew.WithLatencyHistograms())
	return root, a, b
}

// adv4sExpect fails t unless p's Stats show running tasks running and waiting waiting.
func adv4sExpect(t *testing.T, what string, p *crew.Pool, running, waiting int) {
	t.Helper()
	awaitStats(t, p, fmt.Sprintf("%s: %d running, %d waiting", what, running, waiting), func(s crew.Stats) bool {
		return s.Running == running && s.Waiting == waiting
	})
	s := p.Stats()
	if adv4sEnded(s)+uint64(s.Running+s.Waiting) != s.Accepted {
		t.Fatalf("%s: %+v does not add up", what, s)
	}
}

// TestAdvStatsHeldTreeCountsNothingRunning proves the docs of Stats.Running, Waiting and
// Paused on a tree of sub-pools whose starts are held (by a pause of the middle pool, or by
// the root's empty rate bucket): a parent's Running includes its sub-pools' running tasks;
// once the running tasks end, no pool of the tree counts anything as running while the
// held tasks count as Waiting in their own pool (and a sub-pool's worker waits in its
// parent's); Paused is true for the paused pool only; and the tree drains to the idle
// identity when released, its histograms counting each task once.
func TestAdvStatsHeldTreeCountsNothingRunning(t *testing.T) {
	t.Run("pause of the middle pool", func(t *testing.T) {
		root, a, b := adv4sTree()
		defer root.StopAndWait()
		task, started, release := blocker()
		must(t, b.Submit(task))
		must(t, b.Submit(task))
		must(t, a.Submit(task))
		must(t, root.Submit(task))
		for range 4 {
			<-started
		}
		adv4sExpect(t, "root", root, 4, 0)
		adv4sExpect(t, "a", a, 3, 0)
		adv4sExpect(t, "b", b, 2, 0)
		a.Pause()
		for range 3 {
			must(t, b.Submit(func() {}))
		}
		must(t, a.Submit(func() {}))
		if root.Stats().Paused || !a.Stats().Paused || b.Stats().Paused {
			t.Fatalf("Paused: root %v, a %v, b %v; want only a", root.Stats().Paused, a.Stats().Paused, b.Stats().Paused)
		}
		close(release)
		adv4sExpect(t, "b held", b, 0, 3)
		// a holds its own task and b's workers, which wait for b's tasks in a's queue; the
		// root, whose own task has ended, has nothing of a's running or waiting.
		awaitStats(t, a, "a to run nothing", func(s crew.Stats) bool {
			return s.Running == 0 && s.Waiting >= 2 && adv4sEnded(s)+uint64(s.Waiting) == s.Accepted
		})
		awaitStats(t, root, "root to run nothing", func(s crew.Stats) bool {
			return s.Running == 0 && adv4sEnded(s)+uint64(s.Waiting) == s.Accepted
		})
		a.Resume()
		awaitReturn(t, "root.Wait", goRun(root.Wait))
		for i, p := range []*crew.Pool{root, a, b} {
			idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
		}
		if s := b.Stats(); s.Completed != 5 || s.WaitTime.Count != 5 || s.RunTime.Count != 5 {
			t.Fatalf("b %+v: want 5 completed and timed", s)
		}
	})
	t.Run("empty rate bucket of the root", func(t *testing.T) {
		root, a, b := adv4sTree(crew.WithRateLimit(0.001, 3))
		defer root.StopAndWait()
		defer root.SetRateLimit(math.Inf(1), 0) // so that StopAndWait returns if the test fails
		for range 5 {
			must(t, b.Submit(func() {}))
		}
		// The bucket starts full, and the root's rate counts the starts of its sub-pools'
		// workers and tasks: the 3 tokens go, then every pool holds what is left.
		for i, p := range []*crew.Pool{root, a, b} {
			awaitStats(t, p, fmt.Sprint("pool ", i, " to hold its tasks, none running"), func(s crew.Stats) bool {
				return s.Running == 0 && s.Waiting > 0 && adv4sEnded(s)+uint64(s.Waiting) == s.Accepted && !s.Paused
			})
		}
		root.SetRateLimit(math.Inf(1), 0)
		awaitReturn(t, "root.Wait", goRun(root.Wait))
		for i, p := range []*crew.Pool{root, a, b} {
			idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
		}
		if s := b.Stats(); s.Completed != 5 || s.WaitTime.Count != 5 || s.RunTime.Count != 5 {
			t.Fatalf("b %+v: want 5 completed and timed", s)
		}
	})
}

// TestAdvStatsWeightedTasksCountOnceAtEveryDepth proves Stats.Running's "each counted once
// whatever its weight" for weighted tasks of a sub-pool and of its parent: a task holding 3
// of 4 slots counts as one running task in its pool and in each pool above it, a task that
// does not fit counts as Waiting, and the histograms count each once.
func TestAdvStatsWeightedTasksCountOnceAtEveryDepth(t *testing.T) {
	root := crew.New(4, crew.WithLatencyHistograms())
	defer root.StopAndWait()
	sub := root.Sub(4, crew.WithLatencyHistograms())
	task, started, release := blocker()
	must(t, sub.SubmitN(3, task))
	<-started
	adv4sExpect(t, "sub", sub, 1, 0)
	adv4sExpect(t, "root", root, 1, 0)
	must(t, root.Submit(task))
	<-started
	must(t, root.SubmitN(2, func() {})) // does not fit
	must(t, sub.SubmitN(2, func() {}))  // does not fit
	adv4sExpect(t, "root full", root, 2, 1)
	adv4sExpect(t, "sub full", sub, 1, 1)
	if s := root.Stats(); s.Running > s.MaxWorkers {
		t.Fatalf("root %+v: Running above MaxWorkers", s)
	}
	close(release)
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	rs, ss := root.Stats(), sub.Stats()
	idleIdentity(t, "root", rs)
	idleIdentity(t, "sub", ss)
	if ss.Completed != 2 || ss.WaitTime.Count != 2 || ss.RunTime.Count != 2 {
		t.Fatalf("sub %+v: want 2 tasks completed and timed once each", ss)
	}
	if rs.WaitTime.Count != 2 || rs.RunTime.Count != 2 {
		t.Fatalf("root %+v: want its own 2 tasks timed, not its sub-pool's", rs)
	}
}

// TestAdvStatsPausedFollowsEveryWayOut proves the doc of Stats.Paused (and Keyed.Stats',
// the pool's): true from Pause until Resume, also after a PauseAndWait whose context ended
// (it stays paused); false for a sub-pool held only by its parent's pause; and false once the
// pool is stopped, whichever way: Stop, StopAndWait, a Shutdown, the end of its WithContext,
// or the Stop of an ancestor, which stops (and so resumes) its sub-pools; in each case the
// held tasks then run, and the tree ends idle.
func TestAdvStatsPausedFollowsEveryWayOut(t *testing.T) {
	ways := map[string]func(t *testing.T, root, sub *crew.Pool, cancel context.CancelFunc){
		"Stop":        func(t *testing.T, root, sub *crew.Pool, _ context.CancelFunc) { sub.Stop() },
		"StopAndWait": func(t *testing.T, root, sub *crew.Pool, _ context.CancelFunc) { sub.StopAndWait() },
		"Shutdown": func(t *testing.T, root, sub *crew.Pool, _ context.CancelFunc) {
			must(t, sub.Shutdown(context.Background()))
		},
		"WithContext":   func(t *testing.T, root, sub *crew.Pool, cancel context.CancelFunc) { cancel() },
		"ancestor Stop": func(t *testing.T, root, sub *crew.Pool, _ context.CancelFunc) { root.Stop() },
	}
	for name, way := range ways {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			root := crew.New(2)
			defer root.StopAndWait()
			mid := root.Sub(2)
			sub := mid.Sub(2, crew.WithContext(ctx))
			k := crew.NewKeyed[int](sub)
			var ran atomic.Int32
			task, started, release := blocker()
			must(t, sub.Submit(task))
			<-started
			// sub paused by itself and held by its paused parent as well.
			sub.Pause()
			mid.Pause()
			for i := range 4 {
				must(t, sub.Submit(func() { ran.Add(1) }))
				must(t, k.Submit(i%2, func() { ran.Add(1) }))
			}
			pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer pcancel()
			if err := sub.PauseAndWait(pctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("PauseAndWait whose context ended while a task ran: %v", err)
			}
			close(release)
			awaitStats(t, sub, "the running task to end", func(s crew.Stats) bool { return s.Running == 0 })
			if !sub.Stats().Paused || !k.Stats().Paused || !mid.Stats().Paused || root.Stats().Paused {
				t.Fatalf("Paused: root %v, mid %v, sub %v, keyed %v; want mid, sub and keyed",
					root.Stats().Paused, mid.Stats().Paused, sub.Stats().Paused, k.Stats().Paused)
			}
			sub.Resume()
			if sub.Stats().Paused || k.Stats().Paused {
				t.Fatal("a sub-pool held only by its parent's pause reports Paused")
			}
			// The sub-pool counts its 4 plain tasks and the keys' 2 turns; the Keyed its 4 tasks.
			if s, ks := sub.Stats(), k.Stats(); s.Running != 0 || s.Waiting != 6 || ks.Running != 0 || ks.Waiting != 4 {
				t.Fatalf("held by its parent: %+v, keyed %+v; want 6 and 4 waiting, none running", s, ks)
			}
			sub.Pause()
			mid.Resume()
			if s, ks := sub.Stats(), k.Stats(); !s.Paused || !ks.Paused || s.Running != 0 || s.Waiting != 6 || ks.Waiting != 4 {
				t.Fatalf("paused: %+v, keyed %+v; want Paused with 6 and 4 waiting, none running", s, ks)
			}
			way(t, root, sub, cancel)
			awaitStats(t, sub, "the stopped sub-pool to run its tasks", func(s crew.Stats) bool {
				return !s.Paused && s.Waiting == 0 && s.Running == 0
			})
			awaitReturn(t, "root.Wait", goRun(root.Wait))
			if ran.Load() != 8 {
				t.Fatalf("%d of 8 held tasks ran", ran.Load())
			}
			for i, p := range []interface{ Stats() crew.Stats }{root, mid, sub, k} {
				s := p.Stats()
				idleIdentity(t, fmt.Sprint("pool ", i), s)
				if s.Paused {
					t.Fatalf("pool %d still Paused: %+v", i, s)
				}
			}
		})
	}
}

// TestAdvStatsHistogramSlicesAreTheCallersOwn proves the doc of Histogram: each Stats call
// returns new slices, so a caller that keeps or changes one snapshot's Buckets and Counts
// changes nothing in the pool's histograms or in another snapshot; Buckets hold the
// boundaries 0, powers of 2^(1/8) seconds, and +Inf; a task's time lands in the bucket
// whose boundaries enclose it.
func TestAdvStatsHistogramSlicesAreTheCallersOwn(t *testing.T) {
	p := crew.New(1, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	must(t, p.Submit(func() { time.Sleep(3 * time.Millisecond) }))
	p.Wait()
	first := p.Stats()
	second := p.Stats()
	for _, h := range []*crew.Histogram{first.WaitTime, first.RunTime} {
		for i := range h.Counts {
			h.Counts[i] = 1000
		}
		for i := range h.Buckets {
			h.Buckets[i] = -1
		}
		h.Count, h.Sum = 7, -7
	}
	third := p.Stats()
	for _, s := range []crew.Stats{second, third} {
		for name, h := range map[string]*crew.Histogram{"WaitTime": s.WaitTime, "RunTime": s.RunTime} {
			if err := adv4sHistogramErr(h, nil); err != nil {
				t.Fatalf("%s after another snapshot's slices were changed: %v", name, err)
			}
			if h.Count != 1 {
				t.Fatalf("%s counts %d, want 1", name, h.Count)
			}
			for i := 1; i < len(h.Buckets)-1; i++ {
				if want := math.Exp2(math.Log2(h.Buckets[1]) + float64(i-1)/8); math.Abs(h.Buckets[i]-want) > want*1e-9 {
					t.Fatalf("%s boundary %d is %v, want %v", name, i, h.Buckets[i], want)
				}
			}
		}
	}
	run := third.RunTime
	for i, c := range run.Counts {
		if c == 0 {
			continue
		}
		if run.Sum <= run.Buckets[i] || run.Sum > run.Buckets[i+1] {
			t.Fatalf("a run of %v s counted in the bucket (%v, %v]", run.Sum, run.Buckets[i], run.Buckets[i+1])
		}
	}
	if run.Sum < 0.003 {
		t.Fatalf("a task that slept 3 ms ran %v s", run.Sum)
	}
}

// TestAdvStatsHelpingWaitsKeepSnapshotsWithinTheLimit proves the docs of Stats.Waiting and
// Running for waits that help, on a root of 2 workers with a bounded queue and a sub-pool
// of it: functions on the sub-pool and on the root fork groups, futures and maps on the root
// from the context crew gave them, so their waits run queued functions in their own slot
// (and their submits into the full queue run here), while snapshots are read all along. No
// snapshot counts more running than MaxWorkers (a helped function is Waiting until it ends,
// never Running) or breaks Running+Waiting; once idle, every pool accounts for each task
// once, and the root's hooks saw one Started and one Finished per function that ran, as
// many as its histograms count and as Completed+Panicked less the sub-pool's workers.
func TestAdvStatsHelpingWaitsKeepSnapshotsWithinTheLimit(t *testing.T) {
	var h adv4sHooks
	root := crew.New(2, crew.WithQueueSize(2), crew.WithHooks(h.hooks()), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}))
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithLatencyHistograms())
	stop := make(chan struct{})
	watched := adv4sWatch(stop, true, []bool{true, true}, root, sub)

	var ran atomic.Int64
	leaf := func(ctx context.Context) error {
		ran.Add(1)
		return nil
	}
	// fork runs width functions on root from ctx, each forking again below depth.
	var fork func(ctx context.Context, depth int) error
	fork = func(ctx context.Context, depth int) error {
		ran.Add(1)
		if depth == 0 {
			return nil
		}
		switch depth % 3 {
		case 0:
			g, gctx := root.Group(ctx)
			for range 3 {
				g.Go(func(context.Context) error { return fork(gctx, depth-1) })
			}
			return g.Wait()
		case 1:
			f := crew.GoContext(ctx, root, func(c context.Context) (int, error) { return 0, fork(c, depth-1) })
			g := crew.GoContext(ctx, root, func(c context.Context) (int, error) { return 0, leaf(c) })
			_, err1 := f.Wait()
			_, err2 := g.Wait()
			return errors.Join(err1, err2)
		default:
			_, err := crew.Map(ctx, root, []int{1, 2, 3}, func(c context.Context, _ int) (int, error) {
				return 0, fork(c, depth-1)
			})
			return err
		}
	}
	rounds := 20
	if testing.Short() {
		rounds = 8
	}
	for r := range rounds {
		p := root
		if r%2 == 1 {
			p = sub
		}
		// Half the rounds start on the sub-pool: its 2 functions a round, rounds in all.
		g, _ := p.Group(context.Background())
		for range 2 {
			g.Go(func(c context.Context) error { return fork(c, 4) })
		}
		if err := returnsWithin(t, "a tree of helping waits", g.Wait); err != nil {
			t.Fatal(err)
		}
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	close(stop)
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	rs, ss := root.Stats(), sub.Stats()
	idleIdentity(t, "root", rs)
	idleIdentity(t, "sub", ss)
	if h.started.Load() != h.finished.Load() || uint64(h.started.Load()) != rs.WaitTime.Count || rs.WaitTime.Count != rs.RunTime.Count {
		t.Fatalf("root hooks %v, histograms %d and %d", &h, rs.WaitTime.Count, rs.RunTime.Count)
	}
	if ss.Completed != uint64(rounds) || ss.WaitTime.Count != uint64(rounds) {
		t.Fatalf("sub %+v: want its %d functions completed and timed", ss, rounds)
	}
	// The root's own functions are all but the sub-pool's; its Completed also counts the
	// sub-pool's workers.
	own := ran.Load() - int64(rounds)
	if uint64(h.started.Load()) != uint64(own) || rs.Completed+rs.Panicked < uint64(own) || h.rejected() != 0 {
		t.Fatalf("%d functions of the root ran; hooks %v; root %+v", own, &h, rs)
	}
	if uint64(h.queued.Load()) != uint64(own) {
		t.Fatalf("%d functions of the root ran, Queued called %d times", own, h.queued.Load())
	}
	if rs.Accepted-uint64(own) > uint64(rounds) {
		t.Fatalf("root accepted %d: %d functions and more sub-pool workers than the sub-pool's %d functions", rs.Accepted, own, rounds)
	}
}

// TestAdvStatsFuncPoolMirrorsThroughCallerRunsStormsAndStopNow proves the docs of Stats and
// Hooks for a FuncPool whose bounded queue runs overflow on the caller, under Pause/Resume
// and Resize storms, with calls that panic, panic with nil or call runtime.Goexit, ending in
// a StopNow while paused: no snapshot breaks a promise; once idle, Returned is the number of
// arguments StopNow handed back, CallerRan the calls that ran on their submitter, Panicked
// the calls that panicked, and the hooks and histograms count what the counters say.
func TestAdvStatsFuncPoolMirrorsThroughCallerRunsStormsAndStopNow(t *testing.T) {
	type arg struct {
		gid  uint64
		kind int
	}
	var h adv4sHooks
	var began, panicked, callerRan, handled atomic.Int64
	fp := crew.NewFunc(3, func(a arg) {
		began.Add(1)
		if adv4sGoid() == a.gid {
			callerRan.Add(1)
		}
		switch a.kind {
		case 1:
			panicked.Add(1)
			panic("boom")
		case 2:
			panicked.Add(1)
			panic(nil)
		case 3:
			runtime.Goexit()
		case 4:
			time.Sleep(40 * time.Microsecond)
		}
	}, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(h.hooks()),
		crew.WithLatencyHistograms(), crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	defer fp.StopAndWait()

	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() {
		fp.Pause()
		time.Sleep(300 * time.Microsecond)
		fp.Resume()
		time.Sleep(300 * time.Microsecond)
	})
	repeatUntil(&storms, stop, func() {
		fp.Resize(1 + rand.IntN(4))
		time.Sleep(400 * time.Microsecond)
	})
	stopWatch := make(chan struct{})
	watched := adv4sWatch(stopWatch, false, []bool{true}, fp)

	per := 200
	if testing.Short() {
		per = 80
	}
	var tryFalse, canceled atomic.Int64
	var subs sync.WaitGroup
	for range 3 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			gid := adv4sGoid()
			for i := range per {
				if i%25 == 0 {
					time.Sleep(200 * time.Microsecond)
				}
				kind := i % 5
				switch i % 4 {
				case 0, 1:
					if kind == 3 {
						<-goRun(func() { adv4sOK(t, fp.Invoke(arg{adv4sGoid(), kind})) })
						continue
					}
					adv4sOK(t, fp.Invoke(arg{gid, kind}))
				case 2:
					if !fp.TryInvoke(arg{gid, kind % 3}) {
						tryFalse.Add(1)
					}
				case 3:
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Microsecond)
					if err := fp.InvokeContext(ctx, arg{gid, kind % 3}); err != nil {
						if !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("InvokeContext: %v", err)
						}
						canceled.Add(1)
					}
					cancel()
				}
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	close(stop)
	storms.Wait()
	fp.Pause()
	// Paused, a full queue would make CallerRuns wait for Resume: fill it without waiting.
	queued := 0
	for range 5 {
		if fp.TryInvoke(arg{0, 0}) {
			queued++
		} else {
			tryFalse.Add(1)
		}
	}
	back := fp.StopNow()
	close(stopWatch)
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "StopAndWait", goRun(fp.StopAndWait))
	s := fp.Stats()
	if testing.Verbose() {
		t.Logf("stats %+v\nhooks %v\nback %d", s, &h, len(back))
	}
	idleIdentity(t, "the FuncPool", s)
	if s.Idle != 0 {
		t.Errorf("after StopAndWait: %+v, want no idle worker", s)
	}
	ran := s.Completed + s.Panicked
	if s.Returned != uint64(len(back)) || len(back) < queued {
		t.Errorf("StopNow handed back %d, Returned %d", len(back), s.Returned)
	}
	if uint64(began.Load()) != ran || uint64(h.started.Load()) != ran || uint64(h.finished.Load()) != ran ||
		s.WaitTime.Count != ran || s.RunTime.Count != ran {
		t.Errorf("%d calls began, Completed+Panicked %d, hooks %v, histograms %d and %d", began.Load(), ran, &h, s.WaitTime.Count, s.RunTime.Count)
	}
	if s.Panicked != uint64(panicked.Load()) || h.finishedPanicked.Load() != panicked.Load() || handled.Load() != panicked.Load() {
		t.Errorf("%d calls panicked, Stats %d, Finished %d, handler %d", panicked.Load(), s.Panicked, h.finishedPanicked.Load(), handled.Load())
	}
	if s.CallerRan != uint64(callerRan.Load()) {
		t.Errorf("CallerRan %d, calls that ran on their submitter %d", s.CallerRan, callerRan.Load())
	}
	if s.Rejected != uint64(tryFalse.Load()) || uint64(h.rejectedFull.Load()) != s.Rejected ||
		s.Canceled != uint64(canceled.Load()) || uint64(h.rejectedCtx.Load()) != s.Canceled {
		t.Errorf("stats %+v, hooks %v, TryInvoke false %d, contexts ended %d", s, &h, tryFalse.Load(), canceled.Load())
	}
	if uint64(h.queued.Load()) != s.Accepted+uint64(h.rejected()) {
		t.Errorf("Queued %d, Accepted %d, refusals %d", h.queued.Load(), s.Accepted, h.rejected())
	}
}

// TestAdvStatsStoppedRefusalsCountNowhereButAreSeen proves the contract's "ErrStopped ...
// count in neither" Rejected nor Canceled, and the doc of Hooks.Rejected: submitters blocked
// on a full queue (the pool's, and a Keyed's own) when the pool stops, and every door tried
// after the stop, get ErrStopped (or false); no counter of the pool or the Keyed counts them,
// while the Rejected hook sees each with ErrStopped after its Queued; what was accepted
// still runs, and both end idle.
func TestAdvStatsStoppedRefusalsCountNowhereButAreSeen(t *testing.T) {
	var h adv4sHooks
	p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(h.hooks()), crew.WithLatencyHistograms())
	k := crew.NewKeyed[int](p, crew.WithQueueSize(1))
	task, started, release := blocker()
	must(t, p.Submit(task))
	<-started
	must(t, p.Submit(func() {}))
	must(t, k.Submit(1, func() {}))
	errs := make(chan error, 4)
	ctx := context.Background()
	go func() { errs <- p.Submit(func() {}) }()
	go func() { errs <- p.SubmitContext(ctx, func() {}) }()
	go func() { errs <- k.Submit(2, func() {}) }()
	go func() { errs <- k.SubmitContext(ctx, 3, func() {}) }()
	waitFor(t, "four submitters to block", func() bool { return h.queued.Load() == 7 })
	time.Sleep(20 * time.Millisecond)
	if len(errs) != 0 {
		t.Fatal("a submitter on a full queue returned before Stop")
	}
	p.Stop()
	for range 4 {
		select {
		case err := <-errs:
			if !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("a submitter blocked at Stop got %v, want ErrStopped", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a submitter blocked at Stop did not return")
		}
	}
	if p.TrySubmit(func() {}) || k.TrySubmit(5, func() {}) {
		t.Fatal("TrySubmit accepted a task after Stop")
	}
	for _, err := range []error{p.Submit(func() {}), k.Submit(6, func() {}), p.SubmitN(1, func() {}),
		k.SubmitContext(ctx, 7, func() {})} {
		if !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("a submit after Stop: %v, want ErrStopped", err)
		}
	}
	close(release)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	ps, ks := p.Stats(), k.Stats()
	idleIdentity(t, "pool", ps)
	idleIdentity(t, "keyed", ks)
	if ps.Rejected+ps.Canceled+ks.Rejected+ks.Canceled != 0 || ps.Completed != 3 || ks.Completed != 1 {
		t.Fatalf("pool %+v, keyed %+v: want no refusal counted, 3 and 1 completed", ps, ks)
	}
	if h.rejectedStopped.Load() != 10 || h.rejected() != 10 || h.queued.Load() != 13 || h.started.Load() != 3 ||
		h.finished.Load() != 3 || ps.WaitTime.Count != 3 || ps.RunTime.Count != 3 {
		t.Fatalf("hooks %v, histograms %d and %d: want 13 queued, 10 refused with ErrStopped, 3 started and finished",
			&h, ps.WaitTime.Count, ps.RunTime.Count)
	}
}

// TestAdvStatsStartedHookGoexitCountsCompletedNotRun proves the doc of Hooks for a Started
// hook that calls runtime.Goexit, on a worker and on a submitter CallerRuns runs on: the
// task does not run and counts as completed (and in CallerRan, on its submitter); WaitTime
// counts it, as a task that started; RunTime counts no more than Finished was called and
// never more than WaitTime; the worker is replaced and the pool keeps serving, idle at the
// end.
func TestAdvStatsStartedHookGoexitCountsCompletedNotRun(t *testing.T) {
	var armed atomic.Bool
	var calls, goexits, finished atomic.Int64
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithHooks(crew.Hooks{
			Started: func(crew.TaskInfo) {
				if armed.Load() && calls.Add(1)%2 == 0 {
					goexits.Add(1)
					runtime.Goexit()
				}
			},
			Finished: func(crew.TaskInfo) { finished.Add(1) },
		}))
	defer p.StopAndWait()
	var ran atomic.Int64
	// Every submit is made on a goroutine of its own, which a caller-run Goexit may end.
	submit := func(task func()) { <-goRun(func() { _ = p.Submit(task) }) }
	count := func() { ran.Add(1) }
	armed.Store(true)
	for range 20 {
		submit(count)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	armed.Store(false)
	// Caller runs: hold the worker and fill the queue, so the next submits run here.
	task, started, release := blocker()
	submit(func() { count(); task() })
	<-started
	submit(count)
	armed.Store(true)
	for range 19 {
		submit(count)
	}
	armed.Store(false)
	close(release)
	awaitReturn(t, "Wait", goRun(p.Wait))
	const total = 20 + 1 + 1 + 19
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Accepted != total || s.Completed != total || s.WaitTime.Count != total || s.CallerRan < 19 {
		t.Fatalf("%+v, WaitTime %d: want %d accepted, completed and started, at least 19 run on their submitters",
			s, s.WaitTime.Count, total)
	}
	if ran.Load()+goexits.Load() != total || goexits.Load() < 10 {
		t.Fatalf("%d tasks ran and %d Started hooks called Goexit, want %d in all", ran.Load(), goexits.Load(), total)
	}
	if s.RunTime.Count > s.WaitTime.Count || uint64(finished.Load()) != s.RunTime.Count || finished.Load() < ran.Load() {
		t.Fatalf("%d ran, Finished %d, RunTime %d, WaitTime %d", ran.Load(), finished.Load(), s.RunTime.Count, s.WaitTime.Count)
	}
}

// TestAdvStatsTaskTimeoutAndShutdownGivingUpCountEachFunctionOnce proves the docs of
// Stats.Skipped and Waiting, WithTaskTimeout and Shutdown on a sub-pool of a sub-pool: its
// functions each run until their task timeout ends their context, and a Shutdown of the root
// gives up while most still wait. No snapshot breaks a promise; a function the Shutdown
// failed fails with ErrStopped without running and counts in Skipped (no Started hook, no
// histogram), one that ran counts in Completed, seen by Started and Finished once and by
// both histograms; the timeout never skips a queued function, as it counts from the start.
func TestAdvStatsTaskTimeoutAndShutdownGivingUpCountEachFunctionOnce(t *testing.T) {
	var h adv4sHooks
	root := crew.New(2)
	defer root.StopAndWait()
	a := root.Sub(2)
	b := a.Sub(2, crew.WithTaskTimeout(3*time.Millisecond), crew.WithHooks(h.hooks()), crew.WithLatencyHistograms())
	stop := make(chan struct{})
	watched := adv4sWatch(stop, true, []bool{false, false, true}, root, a, b)
	n := 30
	if testing.Short() {
		n = 16
	}
	var ran atomic.Int64
	fs := make([]*crew.Future[bool], n)
	for i := range fs {
		fs[i] = crew.GoContext(context.Background(), b, func(ctx context.Context) (bool, error) {
			ran.Add(1)
			<-ctx.Done()
			return true, context.Cause(ctx)
		})
	}
	waitFor(t, "two functions to time out", func() bool { return b.Stats().Completed >= 2 })
	sctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := root.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown that gave up: %v", err)
	}
	var stopped, timedOut int
	for i, f := range fs {
		var didRun bool
		var err error
		awaitReturn(t, "a future", goRun(func() { didRun, err = f.Wait() }))
		switch {
		case didRun && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, crew.ErrStopped)):
			timedOut++
		case !didRun && errors.Is(err, crew.ErrStopped):
			stopped++
		default:
			t.Fatalf("future %d: ran %v, %v", i, didRun, err)
		}
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	close(stop)
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	s := b.Stats()
	idleIdentity(t, "b", s)
	for i, p := range []*crew.Pool{root, a} {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
	if int(ran.Load()) != timedOut || s.Completed != uint64(timedOut) || s.Skipped != uint64(stopped) || stopped == 0 {
		t.Fatalf("b %+v: %d functions ran (%d said so), %d failed unrun", s, ran.Load(), timedOut, stopped)
	}
	if h.started.Load() != int64(timedOut) || h.finished.Load() != int64(timedOut) ||
		s.WaitTime.Count != uint64(timedOut) || s.RunTime.Count != uint64(timedOut) || h.queued.Load() != int64(n) {
		t.Fatalf("hooks %v, histograms %d and %d: want %d queued, %d started and finished",
			&h, s.WaitTime.Count, s.RunTime.Count, n, timedOut)
	}
}

// TestAdvStatsGrowingResizesNeverShowRunningAboveMaxWorkers proves the doc of Stats that
// Running exceeds MaxWorkers only after a shrinking Resize: while a root and its sub-pool
// only grow, step by step, under weighted tasks, keyed tasks, caller runs and a Pause/Resume
// storm, no snapshot of either shows Running above MaxWorkers or breaks Running+Waiting,
// and both end idle with their histograms counting every task once.
func TestAdvStatsGrowingResizesNeverShowRunningAboveMaxWorkers(t *testing.T) {
	root := crew.New(1, crew.WithLatencyHistograms(), crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithLatencyHistograms())
	k := crew.NewKeyed[int](sub)
	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 300*time.Microsecond, root, sub)
	watched := adv4sWatch(stop, true, []bool{true, true}, root, sub)
	var grown sync.WaitGroup
	grown.Add(1)
	go func() {
		defer grown.Done()
		for n := 2; n <= 6; n++ {
			time.Sleep(2 * time.Millisecond)
			root.Resize(n)
			sub.Resize(n - 1)
		}
	}()
	per := 150
	if testing.Short() {
		per = 60
	}
	var ran atomic.Int64
	work := func() {
		ran.Add(1)
		time.Sleep(20 * time.Microsecond)
	}
	var subs sync.WaitGroup
	for w := range 3 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range per {
				switch (w + i) % 4 {
				case 0:
					adv4sOK(t, root.Submit(work))
				case 1:
					adv4sOK(t, sub.Submit(work))
				case 2:
					adv4sOK(t, k.Submit(i%3, work))
				case 3:
					// Weight 1: every limit on the path starts at 1.
					adv4sOK(t, root.SubmitN(1, work))
				}
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	awaitReturn(t, "the growth", goRun(grown.Wait))
	close(stop)
	storms.Wait()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	rs, ss, ks := root.Stats(), sub.Stats(), k.Stats()
	idleIdentity(t, "root", rs)
	idleIdentity(t, "sub", ss)
	idleIdentity(t, "keyed", ks)
	if ran.Load() != int64(3*per) {
		t.Fatalf("%d of %d tasks ran", ran.Load(), 3*per)
	}
	if ss.WaitTime.Count+rs.WaitTime.Count != uint64(3*per) || rs.RunTime.Count != rs.WaitTime.Count || ss.RunTime.Count != ss.WaitTime.Count {
		t.Fatalf("histograms: root %d/%d, sub %d/%d; want %d tasks in all, each once",
			rs.WaitTime.Count, rs.RunTime.Count, ss.WaitTime.Count, ss.RunTime.Count, 3*per)
	}
}
