package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// obs2Goid returns the id of the calling goroutine, read from its stack header.
func obs2Goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic(err)
	}
	return id
}

// obs2Event is one hook call: which of the WithHooks options it came from, on which
// goroutine, and what it was.
type obs2Event struct {
	gid  uint64
	hook int
	what string
}

// obs2Recorder records the calls of several WithHooks options, in the order they happen.
type obs2Recorder struct {
	mu     sync.Mutex
	events []obs2Event
}

func (r *obs2Recorder) add(hook int, what string) {
	e := obs2Event{obs2Goid(), hook, what}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// hooks returns the Hooks of option number i, each recording its calls.
func (r *obs2Recorder) hooks(i int) crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { r.add(i, "queued") },
		Started:   func(crew.TaskInfo) { r.add(i, "started") },
		Finished:  func(crew.TaskInfo) { r.add(i, "finished") },
		Rejected:  func(error) { r.add(i, "rejected") },
		Discarded: func(crew.TaskInfo) { r.add(i, "discarded") },
		Context: func(ctx context.Context) (context.Context, func(error)) {
			r.add(i, "context")
			return ctx, func(error) { r.add(i, "end") }
		},
	}
}

// counts returns, per hook option and event, how many calls were recorded.
func (r *obs2Recorder) counts() map[string][2]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][2]int{}
	for _, e := range r.events {
		c := out[e.what]
		c[e.hook]++
		out[e.what] = c
	}
	return out
}

// checkPairs fails t unless, on every goroutine, each call of a hook of option 0 is followed
// at once by the call of the same hook of option 1: the options' hooks are called in the
// order given, one after the other, for each event. The ends of Context, which the pool calls
// innermost first, come in the reverse order.
func (r *obs2Recorder) checkPairs(t *testing.T, what string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	per := map[uint64][]obs2Event{}
	for _, e := range r.events {
		per[e.gid] = append(per[e.gid], e)
	}
	for gid, es := range per {
		for i := 0; i < len(es); i += 2 {
			first, second := 0, 1
			if es[i].what == "end" {
				first, second = 1, 0
			}
			if i+1 >= len(es) || es[i].hook != first || es[i+1].hook != second || es[i].what != es[i+1].what {
				t.Fatalf("%s: goroutine %d: hook calls out of order at %d: %v", what, gid, i, es[max(0, i-4):min(len(es), i+4)])
			}
		}
	}
}

// TestAdvObs2SeveralHooksEachCalledOnceInOrderOnEveryDoor proves the doc of WithHooks and
// Hooks: several WithHooks options all apply, in the order given, and each sees every task
// once (Queued, Started, Finished), whatever the door it came through, with one Context call
// and one end per function given with a context; the histograms count each task once.
func TestAdvObs2SeveralHooksEachCalledOnceInOrderOnEveryDoor(t *testing.T) {
	var r obs2Recorder
	p := crew.New(2, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	ctx := context.Background()
	tasks, withCtx := 0, 0
	var ran atomic.Int64
	task := func() { ran.Add(1) }
	fn := func(context.Context) error { ran.Add(1); return nil }

	must(t, p.Submit(task))
	if !p.TrySubmit(task) {
		t.Fatal("TrySubmit refused on an unbounded queue")
	}
	must(t, p.SubmitContext(ctx, task))
	must(t, p.SubmitN(2, task))
	tasks += 4
	if _, err := obs2Fut(t, crew.Go(p, func() (int, error) { ran.Add(1); return 1, nil })); err != nil {
		t.Fatal(err)
	}
	tasks++
	if _, err := obs2Fut(t, crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })); err != nil {
		t.Fatal(err)
	}
	tasks, withCtx = tasks+1, withCtx+1
	g, _ := p.Group(ctx)
	g.Go(fn)
	if !g.TryGo(fn) {
		t.Fatal("Group.TryGo refused on an unbounded queue")
	}
	must(t, returnsWithin(t, "Group.Wait", g.Wait))
	tasks, withCtx = tasks+2, withCtx+2
	ga, _ := p.GroupAll(ctx)
	ga.Go(fn)
	must(t, returnsWithin(t, "Group.Wait", ga.Wait))
	tasks, withCtx = tasks+1, withCtx+1
	res, _ := crew.NewResults[int](ctx, p)
	res.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	if _, err := obs2Res(t, res); err != nil {
		t.Fatal(err)
	}
	tasks, withCtx = tasks+1, withCtx+1
	must(t, returnsWithin(t, "Map", func() error {
		_, err := crew.Map(ctx, p, []int{1, 2, 3}, func(context.Context, int) (int, error) { ran.Add(1); return 0, nil })
		return err
	}))
	tasks, withCtx = tasks+3, withCtx+3
	must(t, returnsWithin(t, "ForEach", func() error {
		return crew.ForEach(ctx, p, countTo(3), func(context.Context, int) error { ran.Add(1); return nil })
	}))
	tasks, withCtx = tasks+3, withCtx+3
	must(t, returnsWithin(t, "MapSeq", func() error {
		return drain(crew.MapSeq(ctx, p, countTo(3), func(context.Context, int) (int, error) { ran.Add(1); return 0, nil }))
	}))
	tasks, withCtx = tasks+3, withCtx+3
	must(t, returnsWithin(t, "MapSeqUnordered", func() error {
		return drain(crew.MapSeqUnordered(ctx, p, countTo(3), func(context.Context, int) (int, error) { ran.Add(1); return 0, nil }))
	}))
	tasks, withCtx = tasks+3, withCtx+3
	k := crew.NewKeyed[int](p)
	for i := range 20 {
		must(t, k.Submit(i%3, task))
	}
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	tasks += 20
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))

	if got := int(ran.Load()); got != tasks {
		t.Errorf("%d tasks ran, want %d", got, tasks)
	}
	c := r.counts()
	for _, ev := range []string{"queued", "started", "finished"} {
		if c[ev] != [2]int{tasks, tasks} {
			t.Errorf("%s hooks called %v times, want %d for each option", ev, c[ev], tasks)
		}
	}
	for _, ev := range []string{"context", "end"} {
		if c[ev] != [2]int{withCtx, withCtx} {
			t.Errorf("%s called %v times, want %d for each option", ev, c[ev], withCtx)
		}
	}
	if c["rejected"] != [2]int{} || c["discarded"] != [2]int{} {
		t.Errorf("rejected %v, discarded %v: want none", c["rejected"], c["discarded"])
	}
	r.checkPairs(t, "every door")
	s := p.Stats()
	if s.WaitTime == nil || s.WaitTime.Count != uint64(tasks) || s.RunTime.Count != uint64(tasks) {
		t.Errorf("histograms count %v waits and %v runs, want %d each", s.WaitTime, s.RunTime, tasks)
	}
	if ks := k.Stats(); ks.Accepted != 20 || ks.Completed != 20 {
		t.Errorf("Keyed.Stats %+v, want 20 accepted and completed", ks)
	}
}

// TestAdvObs2CallerRunsTasksSeenOnceBySeveralHooksAndHistograms proves the doc of Hooks and
// CallerRuns: a task that CallerRuns runs on its submitter is seen there, once per option,
// Started and Finished on the submitter, a function with a context through the Context hooks
// too; it counts in Accepted, Completed, CallerRan and the histograms, never in Running.
func TestAdvObs2CallerRunsTasksSeenOnceBySeveralHooksAndHistograms(t *testing.T) {
	var r obs2Recorder
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
		crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	<-started
	must(t, p.Submit(func() {})) // fills the queue
	me := obs2Goid()
	var onCaller, elsewhere atomic.Int64
	where := func() {
		if obs2Goid() == me {
			onCaller.Add(1)
		} else {
			elsewhere.Add(1)
		}
		if s := p.Stats(); s.Running != 1 {
			t.Errorf("a caller-run task sees Running %d, want 1 (the blocked worker only)", s.Running)
		}
	}
	ctx := context.Background()
	must(t, p.Submit(where))
	must(t, p.SubmitContext(ctx, where))
	must(t, p.SubmitN(1, where))
	if _, err := obs2Fut(t, crew.Go(p, func() (int, error) { where(); return 0, nil })); err != nil {
		t.Fatal(err)
	}
	if _, err := obs2Fut(t, crew.GoContext(ctx, p, func(context.Context) (int, error) { where(); return 0, nil })); err != nil {
		t.Fatal(err)
	}
	g, _ := p.Group(ctx)
	g.Go(func(context.Context) error { where(); return nil })
	res, _ := crew.NewResults[int](ctx, p)
	res.Go(func(context.Context) (int, error) { where(); return 0, nil })
	// Both ran on this goroutine already, before Go returned.
	const inline, inlineCtx = 7, 3
	if onCaller.Load() != inline || elsewhere.Load() != 0 {
		t.Fatalf("%d tasks ran on the submitter and %d elsewhere, want %d and 0", onCaller.Load(), elsewhere.Load(), inline)
	}
	s := p.Stats()
	if s.CallerRan != inline || s.Accepted != inline+2 || s.Completed != inline || s.Running != 1 || s.Waiting != 1 {
		t.Errorf("stats after %d caller-run tasks: %+v", inline, s)
	}
	close(release)
	must(t, returnsWithin(t, "Group.Wait", g.Wait))
	if _, err := obs2Res(t, res); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	s = p.Stats()
	idleIdentity(t, "caller-run", s)
	const all = inline + 2
	if s.WaitTime.Count != all || s.RunTime.Count != all {
		t.Errorf("histograms count %d waits and %d runs, want %d each", s.WaitTime.Count, s.RunTime.Count, all)
	}
	c := r.counts()
	for _, ev := range []string{"queued", "started", "finished"} {
		if c[ev] != [2]int{all, all} {
			t.Errorf("%s hooks called %v times, want %d for each option", ev, c[ev], all)
		}
	}
	for _, ev := range []string{"context", "end"} {
		if c[ev] != [2]int{inlineCtx, inlineCtx} {
			t.Errorf("%s called %v times, want %d for each option", ev, c[ev], inlineCtx)
		}
	}
	r.checkPairs(t, "caller runs")
}

// obs2Started waits until n tasks have sent to started.
func obs2Started(t *testing.T, started <-chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("timed out after 10 s waiting for a task to start")
		}
	}
}

// obs2Fut returns what f's Wait returns, failing t if f has not ended within 10 s.
func obs2Fut[R any](t *testing.T, f *crew.Future[R]) (R, error) {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("timed out after 10 s waiting for a future")
	}
	return f.Wait()
}

// obs2Res returns what r's Wait returns, failing t if it has not returned within 10 s.
func obs2Res[R any](t *testing.T, r *crew.Results[R]) ([]R, error) {
	t.Helper()
	var out []R
	err := returnsWithin(t, "Results.Wait", func() error {
		var err error
		out, err = r.Wait()
		return err
	})
	return out, err
}

// obs2Ended is the number of s's accepted tasks that have ended, one way or another.
func obs2Ended(s crew.Stats) uint64 {
	return s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
}

// obs2Check fails with a message if s, a snapshot taken after prev, breaks a promise of
// Stats: a counter or a histogram count went back, Running+Waiting is not the number of
// accepted tasks not ended, Running exceeds MaxWorkers (limit is true when no shrinking Resize
// was made), or WaitTime counts fewer tasks than RunTime.
func obs2Check(s, prev crew.Stats, limit bool) error {
	if countersWentBack(s, prev) {
		return fmt.Errorf("a counter went back: %+v after %+v", s, prev)
	}
	if s.Running < 0 || s.Waiting < 0 || s.Idle < 0 {
		return fmt.Errorf("a negative gauge: %+v", s)
	}
	if ended := obs2Ended(s); uint64(s.Running+s.Waiting) != s.Accepted-ended || ended > s.Accepted {
		return fmt.Errorf("Running %d + Waiting %d, but Accepted %d and %d ended: %+v", s.Running, s.Waiting, s.Accepted, ended, s)
	}
	if limit && s.Running > s.MaxWorkers {
		return fmt.Errorf("Running %d over MaxWorkers %d", s.Running, s.MaxWorkers)
	}
	if s.WaitTime != nil {
		if s.WaitTime.Count < s.RunTime.Count {
			return fmt.Errorf("WaitTime counts %d, fewer than RunTime's %d", s.WaitTime.Count, s.RunTime.Count)
		}
		if prev.WaitTime != nil && (s.WaitTime.Count < prev.WaitTime.Count || s.RunTime.Count < prev.RunTime.Count) {
			return fmt.Errorf("a histogram count went back: %d, %d after %d, %d",
				s.WaitTime.Count, s.RunTime.Count, prev.WaitTime.Count, prev.RunTime.Count)
		}
	}
	return nil
}

// obs2Watch reads the Stats of pools in a loop until stop is closed, checking each snapshot
// against the one before (obs2Check), and returns the first fault it saw, if any.
func obs2Watch(stop <-chan struct{}, limit bool, pools ...interface{ Stats() crew.Stats }) <-chan error {
	errc := make(chan error, 1)
	go func() {
		prev := make([]crew.Stats, len(pools))
		for i, p := range pools {
			prev[i] = p.Stats()
		}
		for {
			for i, p := range pools {
				s := p.Stats()
				if err := obs2Check(s, prev[i], limit); err != nil {
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

// TestAdvObs2SnapshotsAddUpDuringPauseStormsOnNestedPrioritySubPools proves the doc of Stats
// under Pause/Resume storms on a tree of sub-pools with priorities: no counter or histogram
// count goes back, Running+Waiting counts each accepted task not ended exactly once (a task
// a pause put back is Waiting, not Running), Running stays within MaxWorkers, and once the
// tree is paused and its running tasks have ended, Running is 0: nothing put back is left
// counted as running.
func TestAdvObs2SnapshotsAddUpDuringPauseStormsOnNestedPrioritySubPools(t *testing.T) {
	root := crew.New(3, crew.WithLatencyHistograms())
	a := root.Sub(2, crew.WithPriority(1), crew.WithLatencyHistograms())
	b := a.Sub(2, crew.WithPriority(2), crew.WithLatencyHistograms())
	c := root.Sub(3, crew.WithLatencyHistograms())
	pools := []*crew.Pool{root, a, b, c}
	defer root.StopAndWait()
	per := 1000
	if testing.Short() {
		per = 200
	}
	stop := make(chan struct{})
	var storm sync.WaitGroup
	pauseStorm(&storm, stop, 200*time.Microsecond, root, a, b)
	watched := obs2Watch(stop, true, root, a, b, c)
	var subs sync.WaitGroup
	var ran atomic.Int64
	for _, p := range pools {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range per {
				task := func() {
					ran.Add(1)
					if i%3 == 0 {
						time.Sleep(20 * time.Microsecond)
					}
				}
				if err := p.Submit(task); err != nil {
					t.Error(err)
					return
				}
				if i%16 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	// The storm goes on while most of the tasks run.
	waitFor(t, "three quarters of the tasks to run", func() bool { return ran.Load() >= int64(3*len(pools)*per/4) })
	close(stop)
	storm.Wait()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	// Paused, the tree starts nothing: once what runs has ended, nothing may count as running.
	root.Pause()
	for i, p := range pools {
		awaitStats(t, p, fmt.Sprintf("pool %d to run nothing while its root is paused", i), func(s crew.Stats) bool {
			return s.Running == 0
		})
		s := p.Stats()
		if uint64(s.Waiting) != s.Accepted-obs2Ended(s) {
			t.Fatalf("pool %d paused: Waiting %d, Accepted %d, ended %d: %+v", i, s.Waiting, s.Accepted, obs2Ended(s), s)
		}
	}
	for _, p := range pools {
		p.Resume()
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	for i, p := range []*crew.Pool{b, a, c, root} {
		awaitReturn(t, "Wait", goRun(p.Wait))
		s := p.Stats()
		idleIdentity(t, fmt.Sprintf("pool %d", i), s)
		// A pool's histograms see its own tasks, not the workers of its sub-pools.
		if s.WaitTime.Count != uint64(per) || s.RunTime.Count != uint64(per) {
			t.Errorf("pool %d: histograms count %d and %d tasks, want its own %d", i, s.WaitTime.Count, s.RunTime.Count, per)
		}
	}
	if s := b.Stats(); s.Completed != uint64(per) {
		t.Errorf("b completed %d, want %d", s.Completed, per)
	}
}

// TestAdvObs2StopNowAccountsEveryTaskOfANestedTreeOnce proves the docs of StopNow and Stats:
// after StopNow on a paused tree of sub-pools holding plain tasks, futures, group functions,
// keyed tasks and a canceled future, nothing is Waiting; the plain tasks come back and count
// in Returned; the running tasks still count as Running until they end; no hook sees a
// returned task start, no Discarded hook is called; and once idle each pool, and the Keyed,
// accounts for every accepted task once, its histograms counting the tasks that ran.
func TestAdvObs2StopNowAccountsEveryTaskOfANestedTreeOnce(t *testing.T) {
	var r obs2Recorder
	opts := func(o ...crew.Option) []crew.Option {
		return append(o, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	}
	root := crew.New(2, opts()...)
	a := root.Sub(2, opts(crew.WithPriority(1))...)
	b := a.Sub(1, opts(crew.WithPriority(2))...)
	pools := []*crew.Pool{root, a, b}
	defer root.StopAndWait()
	block, started, release := blocker()
	must(t, root.Submit(block))
	must(t, b.Submit(block))
	obs2Started(t, started, 2)
	root.Pause()
	ctx := context.Background()
	var ranAfter atomic.Int64
	plain := func() { ranAfter.Add(1) }
	wantBack := 0
	var futs []*crew.Future[int]
	for _, p := range pools {
		for range 3 {
			must(t, p.Submit(plain))
			wantBack++
		}
		futs = append(futs, crew.Go(p, func() (int, error) { ranAfter.Add(1); return 0, nil }))
		futs = append(futs, crew.GoContext(ctx, p, func(context.Context) (int, error) { ranAfter.Add(1); return 0, nil }))
	}
	canceled := crew.GoContext(ctx, a, func(context.Context) (int, error) { ranAfter.Add(1); return 0, nil })
	if !canceled.Cancel() {
		t.Fatal("Cancel of a queued function reported false")
	}
	g, _ := b.Group(ctx)
	g.Go(func(context.Context) error { ranAfter.Add(1); return nil })
	k := crew.NewKeyed[int](a)
	for i := range 6 {
		must(t, k.Submit(i%2, plain))
	}
	before := make([]crew.Stats, len(pools))
	for i, p := range pools {
		before[i] = p.Stats()
	}
	startedBefore := r.counts()["started"]
	back := root.StopNow()
	for i, p := range pools {
		s := p.Stats()
		if err := obs2Check(s, before[i], true); err != nil {
			t.Errorf("pool %d across StopNow: %v", i, err)
		}
		if s.Waiting != 0 {
			t.Errorf("pool %d after StopNow: Waiting %d, want 0: %+v", i, s.Waiting, s)
		}
	}
	if s := root.Stats(); s.Running != 2 {
		t.Errorf("root after StopNow: Running %d, want the 2 blocked tasks: %+v", s.Running, s)
	}
	if s := b.Stats(); s.Running != 1 {
		t.Errorf("b after StopNow: Running %d, want its blocked task: %+v", s.Running, s)
	}
	// The keyed tasks come back as plain tasks; they may be handed back in turns.
	if len(back) != wantBack+6 {
		t.Errorf("StopNow handed back %d tasks, want %d plain and 6 keyed", len(back), wantBack)
	}
	for _, f := range futs {
		if _, err := obs2Fut(t, f); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("a future StopNow took out: Wait returned %v, want ErrStopped", err)
		}
	}
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("a group StopNow took out: Wait returned %v, want ErrStopped", err)
	}
	close(release)
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if n := ranAfter.Load(); n != 0 {
		t.Errorf("%d tasks StopNow took out ran", n)
	}
	if got := r.counts()["started"]; got != startedBefore {
		t.Errorf("Started hooks called %v times after StopNow, %v before: a taken-out task started", got, startedBefore)
	}
	c := r.counts()
	if c["discarded"] != [2]int{} {
		t.Errorf("Discarded hooks called %v times for tasks StopNow took out", c["discarded"])
	}
	if c["started"] != c["finished"] || c["started"] != [2]int{2, 2} {
		t.Errorf("started %v, finished %v: want the 2 blockers, once per option", c["started"], c["finished"])
	}
	for i, p := range pools {
		s := p.Stats()
		idleIdentity(t, fmt.Sprintf("pool %d", i), s)
		if s.Returned == 0 {
			t.Errorf("pool %d: Returned 0 after StopNow took its tasks: %+v", i, s)
		}
	}
	ks := k.Stats()
	idleIdentity(t, "keyed", ks)
	if ks.Returned != 6 {
		t.Errorf("Keyed.Stats: Returned %d, want 6: %+v", ks.Returned, ks)
	}
	// The histograms of each pool count its own tasks that ran: one blocker in root and b.
	for i, want := range []uint64{1, 0, 1} {
		s := pools[i].Stats()
		if s.WaitTime.Count != want || s.RunTime.Count != want {
			t.Errorf("pool %d: histograms count %d and %d, want %d", i, s.WaitTime.Count, s.RunTime.Count, want)
		}
	}
}

// TestAdvObs2ShutdownThatGivesUpSkipsQueuedFunctionsAndCountsEachOnce proves the docs of
// Shutdown, Stats and Hooks: when Shutdown's context ends first, the queued functions given
// with a context are skipped (Skipped, no Started, Finished or Context hook, not in the
// histograms), a running one's context ends with cause ErrStopped and its Context hook's end
// is called once, plain tasks still run, and once idle every task is accounted for once.
func TestAdvObs2ShutdownThatGivesUpSkipsQueuedFunctionsAndCountsEachOnce(t *testing.T) {
	var r obs2Recorder
	p := crew.New(2, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	ctx := context.Background()
	watcher := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
		started <- struct{}{}
		<-ctx.Done()
		return 0, context.Cause(ctx)
	})
	obs2Started(t, started, 2)
	var ran atomic.Int64
	var futs []*crew.Future[int]
	for range 3 {
		futs = append(futs, crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 0, nil }))
	}
	g, _ := p.Group(ctx)
	for range 2 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	var plain atomic.Int64
	for range 2 {
		must(t, p.Submit(func() { plain.Add(1) }))
	}
	if s := p.Stats(); s.Running != 2 || s.Waiting != 7 || s.Accepted != 9 {
		t.Fatalf("before Shutdown: %+v, want 2 running and 7 waiting", s)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if _, err := obs2Fut(t, watcher); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("the running function's context ended with cause %v, want ErrStopped", err)
	}
	for _, f := range futs {
		if _, err := obs2Fut(t, f); err == nil {
			t.Error("a skipped future's Wait returned nil")
		}
	}
	if err := returnsWithin(t, "Group.Wait", g.Wait); err == nil {
		t.Error("a group whose functions were skipped returned nil")
	}
	close(release)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if ran.Load() != 0 || plain.Load() != 2 {
		t.Errorf("%d skipped functions ran and %d of 2 plain tasks", ran.Load(), plain.Load())
	}
	s := p.Stats()
	idleIdentity(t, "after Shutdown", s)
	if s.Skipped != 5 || s.Completed != 4 || s.Accepted != 9 || s.Returned != 0 || s.Idle != 0 {
		t.Errorf("after Shutdown gave up: %+v, want 5 skipped and 4 completed of 9", s)
	}
	if s.WaitTime.Count != 4 || s.RunTime.Count != 4 {
		t.Errorf("histograms count %d and %d, want the 4 tasks that ran", s.WaitTime.Count, s.RunTime.Count)
	}
	c := r.counts()
	want := map[string][2]int{"queued": {9, 9}, "started": {4, 4}, "finished": {4, 4}, "context": {1, 1}, "end": {1, 1}}
	for ev, n := range want {
		if c[ev] != n {
			t.Errorf("%s hooks called %v times, want %v", ev, c[ev], n)
		}
	}
	if c["rejected"] != [2]int{} || c["discarded"] != [2]int{} {
		t.Errorf("rejected %v, discarded %v: want none", c["rejected"], c["discarded"])
	}
	r.checkPairs(t, "shutdown")
}

// TestAdvObs2CanceledFuturesStayWaitingThenCountSkippedNeverStarted proves the docs of
// Future.Cancel and Stats: a canceled future's function counts as Waiting until a worker
// reaches its place, then in Skipped; it gets Queued but no Started, Finished or Context
// hook, and is not in the histograms. Cancel racing with the start, over many futures under
// a pause storm, is decided once: every function either ran or was canceled, never both.
func TestAdvObs2CanceledFuturesStayWaitingThenCountSkippedNeverStarted(t *testing.T) {
	var r obs2Recorder
	p := crew.New(1, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	obs2Started(t, started, 1)
	ctx := context.Background()
	var ran atomic.Int64
	f1 := crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	f2 := crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 2, nil })
	f3 := crew.Go(p, func() (int, error) { ran.Add(1); return 3, nil })
	f4 := crew.Go(p, func() (int, error) { ran.Add(1); return 4, nil })
	if !f2.Cancel() || !f4.Cancel() || f2.Cancel() {
		t.Fatal("Cancel of queued functions: want true, then false for a second Cancel")
	}
	if s := p.Stats(); s.Waiting != 4 || s.Skipped != 0 || s.Running != 1 {
		t.Errorf("two canceled of four queued: %+v, want 4 waiting and none skipped yet", s)
	}
	for _, f := range []*crew.Future[int]{f2, f4} {
		if _, err := obs2Fut(t, f); !errors.Is(err, context.Canceled) {
			t.Errorf("a canceled future's Wait = %v, want context.Canceled", err)
		}
	}
	close(release)
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	if v, err := obs2Fut(t, f1); v != 1 || err != nil {
		t.Errorf("f1 = %v, %v", v, err)
	}
	if v, err := obs2Fut(t, f3); v != 3 || err != nil {
		t.Errorf("f3 = %v, %v", v, err)
	}
	s := p.Stats()
	idleIdentity(t, "canceled", s)
	if s.Skipped != 2 || s.Completed != 3 || ran.Load() != 2 {
		t.Errorf("%+v, %d ran: want 2 skipped and 3 completed", s, ran.Load())
	}
	if s.WaitTime.Count != 3 || s.RunTime.Count != 3 {
		t.Errorf("histograms count %d and %d, want 3", s.WaitTime.Count, s.RunTime.Count)
	}
	c := r.counts()
	want := map[string][2]int{"queued": {5, 5}, "started": {3, 3}, "finished": {3, 3}, "context": {1, 1}, "end": {1, 1}}
	for ev, n := range want {
		if c[ev] != n {
			t.Errorf("%s hooks called %v times, want %v", ev, c[ev], n)
		}
	}

	// The race: Cancel against the start, under a pause storm.
	q := crew.New(2, crew.WithLatencyHistograms())
	defer q.StopAndWait()
	n := 400
	if testing.Short() {
		n = 100
	}
	stop := make(chan struct{})
	var storm sync.WaitGroup
	pauseStorm(&storm, stop, 100*time.Microsecond, q)
	watched := obs2Watch(stop, true, q)
	var runs atomic.Int64
	var canceled int64
	futs := make([]*crew.Future[int], n)
	for i := range futs {
		futs[i] = crew.GoContext(ctx, q, func(context.Context) (int, error) { runs.Add(1); return 0, nil })
		if i%2 == 1 && futs[i-1].Cancel() {
			canceled++
		}
	}
	for _, f := range futs {
		if f.Cancel() {
			canceled++
		}
	}
	close(stop)
	storm.Wait()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Pool.Wait", goRun(q.Wait))
	s = q.Stats()
	idleIdentity(t, "the race", s)
	if runs.Load()+canceled != int64(n) || s.Skipped != uint64(canceled) || s.Completed != uint64(runs.Load()) {
		t.Errorf("%d ran and %d canceled of %d; stats %+v", runs.Load(), canceled, n, s)
	}
	if s.WaitTime.Count != s.Completed || s.RunTime.Count != s.Completed {
		t.Errorf("histograms count %d and %d, want the %d that ran", s.WaitTime.Count, s.RunTime.Count, s.Completed)
	}
}

// TestAdvObs2ShrinkingResizeOfAParentHoldsSubPoolStartsAndCountsThemWaiting proves the docs
// of Resize and Stats on a tree: after the parent's shrinking Resize returns, MaxWorkers is
// the new limit at once, Running may exceed it only by the tasks already running, and the
// sub-pools' queued tasks wait, counted in Waiting, until the parent runs under its limit.
func TestAdvObs2ShrinkingResizeOfAParentHoldsSubPoolStartsAndCountsThemWaiting(t *testing.T) {
	root := crew.New(4)
	defer root.StopAndWait()
	sub := root.Sub(4, crew.WithPriority(1))
	subsub := sub.Sub(4)
	releases := make([]chan struct{}, 4)
	started := make(chan int, 16)
	for i := range releases {
		releases[i] = make(chan struct{})
		must(t, subsub.Submit(func() { started <- i; <-releases[i] }))
	}
	for range 4 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("timed out waiting for a task to start")
		}
	}
	var h highWater
	for range 3 {
		must(t, subsub.Submit(func() { h.enter(); h.exit() }))
	}
	must(t, root.Submit(func() { h.enter(); h.exit() }))
	root.Resize(1)
	if s := root.Stats(); s.MaxWorkers != 1 || s.Running != 4 || s.Waiting != 1 {
		t.Errorf("root after Resize(1): %+v, want limit 1, 4 running and its own task waiting", s)
	}
	if s := subsub.Stats(); s.Running != 4 || s.Waiting != 3 {
		t.Errorf("subsub after the parent's Resize(1): %+v, want 4 running and 3 waiting", s)
	}
	for i := range 3 {
		close(releases[i])
	}
	awaitStats(t, subsub, "three tasks to end", func(s crew.Stats) bool { return s.Running == 1 })
	awaitStats(t, root, "the root's running tasks to come down to its limit", func(s crew.Stats) bool { return s.Running <= 1 })
	time.Sleep(20 * time.Millisecond)
	if h.high.Load() != 0 {
		t.Fatalf("%d tasks started while the root ran its new limit", h.high.Load())
	}
	for i, p := range []*crew.Pool{root, sub, subsub} {
		s := p.Stats()
		if err := obs2Check(s, crew.Stats{}, true); err != nil {
			t.Errorf("pool %d at its limit: %v", i, err)
		}
	}
	if s := subsub.Stats(); s.Waiting != 3 {
		t.Errorf("subsub held by its root: %+v, want 3 waiting", s)
	}
	close(releases[3])
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	if h.high.Load() != 1 {
		t.Errorf("%d tasks ran at once under a limit of 1", h.high.Load())
	}
	for i, p := range []*crew.Pool{root, sub, subsub} {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
}

// TestAdvObs2LabelsFollowTheWorkOnNestedPrioritySubPools proves the package doc on profiler
// labels for a tree of sub-pools: a function given with a labelled context runs under those
// labels on a sub-pool of a sub-pool, its Context hook sees them, and the worker has none
// again for the plain tasks after it, of the same sub-pool or of the root; a plain task
// submitted from a labelled goroutine runs under none.
func TestAdvObs2LabelsFollowTheWorkOnNestedPrioritySubPools(t *testing.T) {
	var hookLabels []string
	var mu sync.Mutex
	root := crew.New(1, crew.WithIdleTimeout(crew.NoIdleTimeout))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithPriority(2))
	subsub := sub.Sub(1, crew.WithPriority(1), crew.WithHooks(crew.Hooks{
		Context: func(ctx context.Context) (context.Context, func(error)) {
			mu.Lock()
			hookLabels = append(hookLabels, labelsHere())
			mu.Unlock()
			return ctx, nil
		},
	}))
	got := make(chan string, 8)
	probe := func() { got <- labelsHere() }
	labelledGoroutine(func(ctx context.Context) {
		// Hold the one worker so that everything below waits in the queues, then runs on it.
		block, started, release := blocker()
		must(t, root.Submit(block))
		obs2Started(t, started, 1)
		must(t, subsub.Submit(probe))
		f := crew.GoContext(ctx, subsub, func(context.Context) (int, error) { probe(); return 0, nil })
		must(t, subsub.Submit(probe))
		must(t, sub.Submit(probe))
		must(t, root.Submit(probe))
		close(release)
		if _, err := f.Wait(); err != nil {
			t.Error(err)
		}
		root.Wait()
	})
	// The order within the tree is the queues': one probe of the five runs under labels.
	var labelled, none int
	for range 5 {
		select {
		case l := <-got:
			switch l {
			case reqA:
				labelled++
			case "":
				none++
			default:
				t.Errorf("a task ran with labels %q", l)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("timed out waiting for the probes")
		}
	}
	if labelled != 1 || none != 4 {
		t.Errorf("%d tasks ran under %s and %d under none, want 1 and 4", labelled, reqA, none)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hookLabels) != 1 || hookLabels[0] != reqA {
		t.Errorf("the Context hook ran under labels %q, want one call under %s", hookLabels, reqA)
	}
}

// TestAdvObs2HelpingWaitKeepsTheWaitersLabels proves the package doc on labels and waits
// that help: a function that a waiting function runs itself in its slot keeps the labels the
// waiting function runs under (those of its own context, not labels added for the nested
// calls alone), and the waiting function still has its labels once its wait returns; the
// worker has none after it.
func TestAdvObs2HelpingWaitKeepsTheWaitersLabels(t *testing.T) {
	p := crew.New(1, crew.WithIdleTimeout(crew.NoIdleTimeout))
	defer p.StopAndWait()
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("req", "a"))
	var mu sync.Mutex
	var seen []string
	note := func(what string) {
		mu.Lock()
		seen = append(seen, what+"="+labelsHere())
		mu.Unlock()
	}
	outer := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
		note("outer")
		inner := pprof.WithLabels(ctx, pprof.Labels("inner", "b"))
		g, _ := p.Group(inner)
		for range 2 {
			g.Go(func(ctx context.Context) error {
				note("group")
				if v, _ := pprof.Label(ctx, "inner"); v != "b" {
					return fmt.Errorf("the nested function's context lost its label: %q", v)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return 0, err
		}
		note("after group")
		if _, err := crew.Map(inner, p, []int{1, 2}, func(context.Context, int) (int, error) { note("map"); return 0, nil }); err != nil {
			return 0, err
		}
		note("after map")
		f := crew.GoContext(inner, p, func(context.Context) (int, error) { note("future"); return 0, nil })
		if _, err := f.Wait(); err != nil {
			return 0, err
		}
		note("after future")
		gp, _ := p.Group(inner)
		gp.Go(func(context.Context) error { note("panicking"); panic("planned") })
		var pe *crew.PanicError
		if err := gp.Wait(); !errors.As(err, &pe) {
			return 0, fmt.Errorf("a group whose function panicked: Wait = %v", err)
		}
		note("after panic")
		return 0, nil
	})
	var err error
	awaitReturn(t, "the outer function", goRun(func() { _, err = outer.Wait() }))
	must(t, err)
	after := make(chan string, 1)
	must(t, p.Submit(func() { after <- labelsHere() }))
	if l := <-after; l != "" {
		t.Errorf("a plain task after the nested calls ran with labels %s", l)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"outer", "group", "group", "after group", "map", "map", "after map", "future", "after future", "panicking", "after panic"}
	if len(seen) != len(want) {
		t.Fatalf("seen %q", seen)
	}
	for i, w := range want {
		if seen[i] != w+"="+reqA {
			t.Errorf("%s ran under %q, want the waiting function's %s (all: %q)", w, seen[i], reqA, seen)
		}
	}
}

// TestAdvObs2CallerRunKeepsAndLeavesTheSubmittersLabels proves the package doc on labels
// and CallerRuns: a function that CallerRuns runs on its submitter keeps the submitter's
// labels, whatever labels its context carries, and the submitter has its labels afterwards.
func TestAdvObs2CallerRunKeepsAndLeavesTheSubmittersLabels(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	obs2Started(t, started, 1)
	must(t, p.Submit(func() {}))
	other := pprof.WithLabels(context.Background(), pprof.Labels("req", "other"))
	var inside, afterCall []string
	labelledGoroutine(func(context.Context) {
		f := crew.GoContext(other, p, func(context.Context) (int, error) { inside = append(inside, labelsHere()); return 0, nil })
		if _, err := f.Wait(); err != nil {
			t.Error(err)
		}
		afterCall = append(afterCall, labelsHere())
		g, _ := p.Group(other)
		g.Go(func(context.Context) error { inside = append(inside, labelsHere()); return nil })
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
		afterCall = append(afterCall, labelsHere())
		must(t, p.Submit(func() { inside = append(inside, labelsHere()) }))
		afterCall = append(afterCall, labelsHere())
	})
	close(release)
	if len(inside) != 3 || len(afterCall) != 3 {
		t.Fatalf("inside %q, after %q: want 3 caller-run calls", inside, afterCall)
	}
	for i := range 3 {
		if inside[i] != reqA || afterCall[i] != reqA {
			t.Errorf("call %d: ran under %q and left the submitter with %q, want %s both", i, inside[i], afterCall[i], reqA)
		}
	}
	if s := p.Stats(); s.CallerRan != 3 {
		t.Errorf("CallerRan %d, want 3", s.CallerRan)
	}
}

// TestAdvObs2RefusalsAndDiscardsSeenOnceByEachHookAndCountedOnce proves the docs of Hooks,
// Stats, DiscardOldest and Keyed: each refused submit calls every Rejected hook once with the
// submit's error and counts in Rejected or Canceled (ErrStopped in neither); each dropped task
// calls every Discarded hook once, a keyed task as a task of its own, and goes to the discard
// handler; the pool counts the dropped turn once, the Keyed each keyed task; nothing dropped
// starts, and the histograms count what ran.
func TestAdvObs2RefusalsAndDiscardsSeenOnceByEachHookAndCountedOnce(t *testing.T) {
	var r obs2Recorder
	var errsMu sync.Mutex
	var rejectedWith []error
	var handed atomic.Int64
	p := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { handed.Add(1) }),
		crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)),
		crew.WithHooks(crew.Hooks{Rejected: func(err error) {
			errsMu.Lock()
			rejectedWith = append(rejectedWith, err)
			errsMu.Unlock()
		}}),
		crew.WithLatencyHistograms())
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	obs2Started(t, started, 1)
	k := crew.NewKeyed[int](p)
	var ranBad atomic.Int64
	bad := func() { ranBad.Add(1) }
	for range 3 {
		must(t, k.Submit(1, bad)) // one turn of the pool, holding three keyed tasks
	}
	var ranGood atomic.Int64
	must(t, p.Submit(bad))                       // queue: the turn, bad
	must(t, p.Submit(func() { ranGood.Add(1) })) // drops the turn
	must(t, p.Submit(func() { ranGood.Add(1) })) // drops bad
	if p.TrySubmit(func() { ranGood.Add(1) }) {  // never drops
		t.Fatal("TrySubmit accepted a task into a full queue")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(done, bad); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with an ended context = %v, want context.Canceled", err)
	}
	s := p.Stats()
	if s.Discarded != 2 || s.Rejected != 1 || s.Canceled != 1 || s.Accepted != 5 || s.Waiting != 2 || s.Running != 1 {
		t.Errorf("pool stats %+v, want 5 accepted, 2 discarded (a turn and a task), 1 rejected, 1 canceled", s)
	}
	if ks := k.Stats(); ks.Discarded != 3 || ks.Accepted != 3 || ks.Waiting != 0 {
		t.Errorf("Keyed stats %+v, want its 3 tasks discarded", ks)
	}
	if handed.Load() != 4 {
		t.Errorf("the discard handler got %d tasks, want 4 (3 keyed and 1 plain)", handed.Load())
	}
	close(release)
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	p.Stop()
	if err := p.Submit(bad); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after Stop = %v", err)
	}
	if err := k.Submit(1, bad); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Keyed.Submit after Stop = %v", err)
	}
	if ranBad.Load() != 0 || ranGood.Load() != 2 {
		t.Errorf("%d dropped or refused tasks ran, and %d of 2 kept", ranBad.Load(), ranGood.Load())
	}
	s = p.Stats()
	idleIdentity(t, "pool", s)
	idleIdentity(t, "keyed", k.Stats())
	if s.Rejected != 1 || s.Canceled != 1 || s.Completed != 3 {
		t.Errorf("after Stop: %+v: ErrStopped counts in neither Rejected nor Canceled", s)
	}
	if s.WaitTime.Count != 3 || s.RunTime.Count != 3 {
		t.Errorf("histograms count %d and %d, want the 3 tasks that ran", s.WaitTime.Count, s.RunTime.Count)
	}
	c := r.counts()
	want := map[string][2]int{"discarded": {4, 4}, "rejected": {4, 4}, "started": {3, 3}, "finished": {3, 3}}
	for ev, n := range want {
		if c[ev] != n {
			t.Errorf("%s hooks called %v times, want %v", ev, c[ev], n)
		}
	}
	errsMu.Lock()
	defer errsMu.Unlock()
	wantErrs := []error{crew.ErrQueueFull, context.Canceled, crew.ErrStopped, crew.ErrStopped}
	if len(rejectedWith) != len(wantErrs) {
		t.Fatalf("Rejected hook got %v, want %v", rejectedWith, wantErrs)
	}
	for i, w := range wantErrs {
		if !errors.Is(rejectedWith[i], w) {
			t.Errorf("Rejected hook call %d got %v, want %v", i, rejectedWith[i], w)
		}
	}
	r.checkPairs(t, "refusals and discards")
}

// TestAdvObs2GoexitAndPanicNilSeenOnceByHooksStatsAndHistograms proves the docs of Hooks,
// Stats and the histograms for tasks that end oddly: a plain task that calls runtime.Goexit
// counts in Completed, one that panics with nil or a value in Panicked (Finished says so);
// a function with a context that does either has its Context hook's end called once with a
// non-nil error; RunTime counts every one of them.
func TestAdvObs2GoexitAndPanicNilSeenOnceByHooksStatsAndHistograms(t *testing.T) {
	var r obs2Recorder
	var panicked, notPanicked atomic.Int64
	var endsMu sync.Mutex
	var ends []error
	var handled atomic.Int64
	p := crew.New(2, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)),
		crew.WithHooks(crew.Hooks{
			Finished: func(ti crew.TaskInfo) {
				if ti.Panicked {
					panicked.Add(1)
				} else {
					notPanicked.Add(1)
				}
			},
			Context: func(ctx context.Context) (context.Context, func(error)) {
				return ctx, func(err error) {
					endsMu.Lock()
					ends = append(ends, err)
					endsMu.Unlock()
				}
			},
		}),
		crew.WithLatencyHistograms())
	defer p.StopAndWait()
	must(t, p.Submit(func() { runtime.Goexit() }))
	must(t, p.Submit(func() { panic(nil) }))
	must(t, p.Submit(panicsWithBoom))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	if s := p.Stats(); s.Completed != 1 || s.Panicked != 2 || handled.Load() != 2 {
		t.Errorf("plain Goexit, panic(nil), panic: %+v, %d handled: want 1 completed, 2 panicked, 2 handled", s, handled.Load())
	}
	if panicked.Load() != 2 || notPanicked.Load() != 1 {
		t.Errorf("Finished saw %d panicked and %d not, want 2 and 1", panicked.Load(), notPanicked.Load())
	}
	ctx := context.Background()
	fs := []*crew.Future[int]{
		crew.GoContext(ctx, p, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }),
		crew.GoContext(ctx, p, func(context.Context) (int, error) { panic(nil) }),
		crew.GoContext(ctx, p, func(context.Context) (int, error) { panic("boom") }),
	}
	for i, f := range fs {
		if _, err := obs2Fut(t, f); err == nil {
			t.Errorf("future %d that did not return: Wait returned nil", i)
		}
	}
	k := crew.NewKeyed[string](p)
	must(t, k.Submit("a", func() { panic(nil) }))
	must(t, k.Submit("a", func() { runtime.Goexit() }))
	must(t, k.Submit("a", func() {}))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Pool.Wait", goRun(p.Wait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	ks := k.Stats()
	idleIdentity(t, "keyed", ks)
	if ks.Panicked != 1 || ks.Completed != 2 {
		t.Errorf("Keyed stats %+v, want 1 panicked and 2 completed", ks)
	}
	const all = 3 + 3 + 3
	if s.WaitTime.Count != all || s.RunTime.Count != all {
		t.Errorf("histograms count %d and %d, want all %d", s.WaitTime.Count, s.RunTime.Count, all)
	}
	c := r.counts()
	want := map[string][2]int{"queued": {all, all}, "started": {all, all}, "finished": {all, all}, "context": {3, 3}, "end": {3, 3}}
	for ev, n := range want {
		if c[ev] != n {
			t.Errorf("%s hooks called %v times, want %v", ev, c[ev], n)
		}
	}
	endsMu.Lock()
	defer endsMu.Unlock()
	if len(ends) != 3 {
		t.Fatalf("Context ends called %d times, want 3", len(ends))
	}
	for i, err := range ends {
		if err == nil {
			t.Errorf("end %d of a function that did not return got a nil error", i)
		}
	}
	r.checkPairs(t, "odd ends")
}

// TestAdvObs2KeyedStatsDuringPauseStormsOnAPrioritySubPool proves the docs of Keyed.Stats
// and Stats for a Keyed on a sub-pool with a priority under Pause/Resume storms of the
// sub-pool and its parent: no counter of the Keyed goes back, Running+Waiting counts each
// accepted keyed task not ended exactly once, Running never exceeds the keys or the limit,
// and once idle the counts add up and the sub-pool's histograms and hooks count each keyed
// task once, not its turns.
func TestAdvObs2KeyedStatsDuringPauseStormsOnAPrioritySubPool(t *testing.T) {
	var started, finished atomic.Int64
	root := crew.New(3)
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithPriority(1), crew.WithLatencyHistograms(), crew.WithHooks(crew.Hooks{
		Started:  func(crew.TaskInfo) { started.Add(1) },
		Finished: func(crew.TaskInfo) { finished.Add(1) },
	}))
	k := crew.NewKeyed[int](sub)
	const keys = 5
	per := 300
	if testing.Short() {
		per = 100
	}
	checker := newKeyChecker()
	stop := make(chan struct{})
	var storm sync.WaitGroup
	pauseStorm(&storm, stop, 200*time.Microsecond, root, sub)
	errc := make(chan error, 1)
	go func() {
		prev := k.Stats()
		for {
			s := k.Stats()
			err := obs2Check(s, prev, true)
			if err == nil && s.Running > keys {
				err = fmt.Errorf("Running %d over the %d keys", s.Running, keys)
			}
			if err != nil {
				errc <- err
				return
			}
			prev = s
			select {
			case <-stop:
				errc <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	var ran atomic.Int64
	var subs sync.WaitGroup
	for key := range keys {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for seq := range per {
				if err := k.Submit(key, func() {
					checker.enter(key, seq)
					ran.Add(1)
					if seq%4 == 0 {
						time.Sleep(10 * time.Microsecond)
					}
					checker.exit(key)
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Plain work of the root, at level 0, competes with the sub-pool's turns.
	for range 200 {
		must(t, root.Submit(func() {}))
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	waitFor(t, "most keyed tasks to run", func() bool { return ran.Load() >= int64(keys*per*3/4) })
	close(stop)
	storm.Wait()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	checker.check(t, "keyed under storms")
	ks := k.Stats()
	idleIdentity(t, "keyed", ks)
	if ks.Completed != keys*uint64(per) || ks.Paused {
		t.Errorf("Keyed stats %+v, want %d completed and not paused", ks, keys*per)
	}
	s := sub.Stats()
	idleIdentity(t, "sub-pool", s)
	if s.WaitTime.Count != keys*uint64(per) || s.RunTime.Count != keys*uint64(per) {
		t.Errorf("the sub-pool's histograms count %d and %d, want each of the %d keyed tasks", s.WaitTime.Count, s.RunTime.Count, keys*per)
	}
	if started.Load() != keys*int64(per) || finished.Load() != keys*int64(per) {
		t.Errorf("hooks saw %d starts and %d ends, want %d each", started.Load(), finished.Load(), keys*per)
	}
	if s.Accepted > ks.Accepted {
		t.Errorf("the sub-pool counts %d turns for %d keyed tasks", s.Accepted, ks.Accepted)
	}
}

// TestAdvObs2StopNowAmidTrafficKeepsSnapshotsConsistent proves the docs of StopNow and Stats
// with submitters, a helping group and a pause storm in flight on a tree: snapshots of every
// pool stay consistent across StopNow (no counter goes back, Running+Waiting adds up), every
// task a submit accepted either ran once or was handed back or failed with ErrStopped, and
// once idle every pool accounts for each of its tasks once.
func TestAdvObs2StopNowAmidTrafficKeepsSnapshotsConsistent(t *testing.T) {
	root := crew.New(2)
	a := root.Sub(2, crew.WithPriority(1), crew.WithQueueSize(8))
	b := a.Sub(1, crew.WithPriority(2))
	pools := []*crew.Pool{root, a, b}
	defer root.StopAndWait()
	stop := make(chan struct{})
	var storm sync.WaitGroup
	pauseStorm(&storm, stop, 200*time.Microsecond, root, a)
	watched := obs2Watch(stop, true, root, a, b)
	var accepted, ran, futureRan atomic.Int64
	var subs sync.WaitGroup
	for _, p := range pools {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := 0; ; i++ {
				if i%3 == 0 {
					f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { futureRan.Add(1); return 0, nil })
					if _, err := f.Wait(); err != nil && !errors.Is(err, crew.ErrStopped) {
						t.Errorf("a future's Wait = %v, want nil or ErrStopped", err)
					}
					continue
				}
				if err := p.Submit(func() { ran.Add(1) }); err != nil {
					return
				}
				accepted.Add(1)
			}
		}()
	}
	waitFor(t, "some tasks to run", func() bool { return ran.Load() > 200 })
	back := root.StopNow()
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	close(stop)
	storm.Wait()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	if ran.Load()+int64(len(back)) != accepted.Load() {
		t.Errorf("%d plain tasks accepted, but %d ran and %d came back", accepted.Load(), ran.Load(), len(back))
	}
	for i, p := range pools {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
}

// obs2Times records the TaskInfo of every Started and Finished call.
type obs2Times struct {
	mu                sync.Mutex
	started, finished []crew.TaskInfo
}

func (o *obs2Times) hooks() crew.Hooks {
	return crew.Hooks{
		Started: func(ti crew.TaskInfo) {
			o.mu.Lock()
			o.started = append(o.started, ti)
			o.mu.Unlock()
		},
		Finished: func(ti crew.TaskInfo) {
			o.mu.Lock()
			o.finished = append(o.finished, ti)
			o.mu.Unlock()
		},
	}
}

// minWait returns the least Wait among the Started calls and the least Run among the
// Finished ones, and how many of each there were.
func (o *obs2Times) least() (wait, run time.Duration, starts, ends int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	wait, run = time.Hour, time.Hour
	for _, ti := range o.started {
		wait = min(wait, ti.Wait)
	}
	for _, ti := range o.finished {
		run = min(run, ti.Run)
	}
	return wait, run, len(o.started), len(o.finished)
}

// TestAdvObs2WaitTimesCoverPausesTurnsParentsAndCallerRunWaits proves the docs of TaskInfo,
// Hooks.Started and the histograms: a task's Wait is the whole time from its submit to its
// start, however it waited (a pause that put it back, its key's earlier task, its sub-pool's
// parent, a caller-run submit waiting WithMaxWait for room), and its Run the time it ran.
// Each case below makes every task wait at least hold, and run at least hold.
func TestAdvObs2WaitTimesCoverPausesTurnsParentsAndCallerRunWaits(t *testing.T) {
	const hold = 30 * time.Millisecond
	check := func(t *testing.T, o *obs2Times, p *crew.Pool, n int) {
		t.Helper()
		wait, run, starts, ends := o.least()
		if starts != n || ends != n {
			t.Fatalf("%d starts and %d ends seen, want %d", starts, ends, n)
		}
		if wait < hold || run < hold {
			t.Errorf("a task waited %v and ran %v by its hooks, want both at least %v", wait, run, hold)
		}
		s := p.Stats()
		if s.WaitTime.Count != uint64(n) || s.WaitTime.Sum < float64(n)*hold.Seconds() {
			t.Errorf("WaitTime counts %d, sum %v s, want %d and at least %v each", s.WaitTime.Count, s.WaitTime.Sum, n, hold)
		}
		if s.RunTime.Count != uint64(n) || s.RunTime.Sum < float64(n)*hold.Seconds() {
			t.Errorf("RunTime counts %d, sum %v s, want %d and at least %v each", s.RunTime.Count, s.RunTime.Sum, n, hold)
		}
	}
	sleep := func() { time.Sleep(hold) }
	t.Run("paused", func(t *testing.T) {
		var o obs2Times
		p := crew.New(2, crew.WithHooks(o.hooks()), crew.WithLatencyHistograms())
		defer p.StopAndWait()
		p.Pause()
		for range 3 {
			must(t, p.Submit(sleep))
		}
		time.Sleep(hold)
		p.Resume()
		awaitReturn(t, "Wait", goRun(p.Wait))
		check(t, &o, p, 3)
	})
	t.Run("keyed behind its key", func(t *testing.T) {
		var o obs2Times
		p := crew.New(2, crew.WithHooks(o.hooks()), crew.WithLatencyHistograms())
		defer p.StopAndWait()
		k := crew.NewKeyed[int](p)
		// Every task but the first waits behind it; the first waits for a pause.
		p.Pause()
		for range 3 {
			must(t, k.Submit(1, sleep))
		}
		time.Sleep(hold)
		p.Resume()
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		awaitReturn(t, "Wait", goRun(p.Wait))
		check(t, &o, p, 3)
	})
	t.Run("sub-pool of a busy parent", func(t *testing.T) {
		var o obs2Times
		root := crew.New(1)
		defer root.StopAndWait()
		sub := root.Sub(2, crew.WithPriority(1), crew.WithHooks(o.hooks()), crew.WithLatencyHistograms())
		subsub := sub.Sub(2, crew.WithHooks(o.hooks()), crew.WithLatencyHistograms())
		block, started, release := blocker()
		must(t, root.Submit(block))
		obs2Started(t, started, 1)
		must(t, subsub.Submit(sleep))
		time.Sleep(hold)
		close(release)
		awaitReturn(t, "Wait", goRun(root.Wait))
		// subsub's hooks saw its task; sub's hooks see only its own tasks: none.
		wait, run, starts, ends := o.least()
		if starts != 1 || ends != 1 || wait < hold || run < hold {
			t.Errorf("%d starts, %d ends, least wait %v, least run %v: want one task that waited and ran %v", starts, ends, wait, run, hold)
		}
		if s := sub.Stats(); s.WaitTime.Count != 0 {
			t.Errorf("the middle sub-pool's histogram counts %d tasks, want none of its own", s.WaitTime.Count)
		}
		if s := subsub.Stats(); s.WaitTime.Count != 1 || s.WaitTime.Sum < hold.Seconds() {
			t.Errorf("subsub's WaitTime %+v, want one wait of at least %v", s.WaitTime, hold)
		}
	})
	t.Run("caller run after MaxWait", func(t *testing.T) {
		var o obs2Times
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithMaxWait(hold),
			crew.WithHooks(o.hooks()), crew.WithLatencyHistograms())
		defer p.StopAndWait()
		block, started, release := blocker()
		must(t, p.Submit(block))
		obs2Started(t, started, 1)
		must(t, p.Submit(func() {}))
		must(t, p.Submit(sleep)) // waits hold for room, then runs here
		close(release)
		awaitReturn(t, "Wait", goRun(p.Wait))
		o.mu.Lock()
		// The blocker waited for nothing; the task run here waited hold for room.
		var inline []crew.TaskInfo
		for _, ti := range o.finished {
			if ti.Wait >= hold && ti.Run >= hold {
				inline = append(inline, ti)
			}
		}
		all := o.finished
		o.mu.Unlock()
		if len(inline) != 1 || len(all) != 3 {
			t.Errorf("Finished calls %+v, want 3, one of them the caller-run task's that waited and ran at least %v", all, hold)
		}
		if s := p.Stats(); s.CallerRan != 1 {
			t.Errorf("CallerRan %d, want 1", s.CallerRan)
		}
	})
}

// TestAdvObs2ATaskSeesItselfRunningNotWaiting proves the docs of Stats.Running and Waiting
// from inside tasks under Pause/Resume storms on a tree of one worker: a task reads itself in
// Running (exactly one runs), never also in Waiting, on its pool and on each pool above.
func TestAdvObs2ATaskSeesItselfRunningNotWaiting(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithPriority(1))
	subsub := sub.Sub(1, crew.WithPriority(2))
	pools := []*crew.Pool{root, sub, subsub}
	stop := make(chan struct{})
	var storm sync.WaitGroup
	pauseStorm(&storm, stop, 100*time.Microsecond, pools...)
	per := 200
	if testing.Short() {
		per = 60
	}
	var faults atomic.Int64
	var firstFault atomic.Value
	var ran atomic.Int64
	for i := range per * len(pools) {
		p := pools[i%len(pools)]
		above := pools[:i%len(pools)+1]
		must(t, p.Submit(func() {
			ran.Add(1)
			for _, q := range above {
				s := q.Stats()
				if s.Running != 1 || uint64(s.Running+s.Waiting) != s.Accepted-obs2Ended(s) {
					if faults.Add(1) == 1 {
						firstFault.Store(fmt.Sprintf("%+v", s))
					}
				}
			}
		}))
	}
	waitFor(t, "most tasks to run", func() bool { return ran.Load() >= int64(per*len(pools)*3/4) })
	close(stop)
	storm.Wait()
	awaitReturn(t, "Wait", goRun(root.Wait))
	if n := faults.Load(); n > 0 {
		t.Fatalf("%d tasks read a snapshot not counting them once as Running, the first: %v", n, firstFault.Load())
	}
}

// TestAdvObs2HelpedFunctionsCountWaitingNeverRunningAndOnceInHooks proves the doc of
// Stats.Waiting on waits that help, on a pool and on a sub-pool of a sub-pool of one worker:
// a function the waiting function runs itself counts as Waiting, never Running (Running
// holds the waiting function only), ends once in Completed, is seen once by the hooks, the
// Context hook and the histograms, and each snapshot taken inside it adds up.
func TestAdvObs2HelpedFunctionsCountWaitingNeverRunningAndOnceInHooks(t *testing.T) {
	for _, depth := range []int{0, 2} {
		t.Run(fmt.Sprint("depth ", depth), func(t *testing.T) {
			var r obs2Recorder
			root := crew.New(1)
			defer root.StopAndWait()
			p := root
			for range depth {
				p = p.Sub(1, crew.WithPriority(1))
			}
			p = p.Sub(1, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
			const nested = 3
			var faults []string
			var mu sync.Mutex
			look := func(what string) {
				s := p.Stats()
				if s.Running != 1 || s.Waiting < 1 || uint64(s.Running+s.Waiting) != s.Accepted-obs2Ended(s) {
					mu.Lock()
					faults = append(faults, fmt.Sprintf("%s: %+v", what, s))
					mu.Unlock()
				}
			}
			outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				g, _ := p.Group(ctx)
				for range nested {
					g.Go(func(context.Context) error { look("group"); return nil })
				}
				if err := g.Wait(); err != nil {
					return 0, err
				}
				f := crew.GoContext(ctx, p, func(context.Context) (int, error) { look("future"); return 0, nil })
				_, err := f.Wait()
				return 0, err
			})
			var err error
			awaitReturn(t, "the outer function", goRun(func() { _, err = outer.Wait() }))
			must(t, err)
			awaitReturn(t, "Wait", goRun(root.Wait))
			mu.Lock()
			if len(faults) > 0 {
				t.Errorf("helped functions read %d snapshots that count them as running or do not add up: %q", len(faults), faults)
			}
			mu.Unlock()
			const all = nested + 2
			s := p.Stats()
			idleIdentity(t, "after", s)
			if s.Completed != all || s.WaitTime.Count != all || s.RunTime.Count != all {
				t.Errorf("%+v, histograms %d and %d: want %d completed and counted", s, s.WaitTime.Count, s.RunTime.Count, all)
			}
			c := r.counts()
			for _, ev := range []string{"queued", "started", "finished", "context", "end"} {
				if c[ev] != [2]int{all, all} {
					t.Errorf("%s hooks called %v times, want %d for each option", ev, c[ev], all)
				}
			}
			r.checkPairs(t, "helped")
		})
	}
}

// TestAdvObs2PausedAndIdleReportWhatTheDocsSay proves the docs of Stats.Paused and Idle: a
// paused pool reports Paused, a sub-pool held back by its parent's pause does not, Stop
// resumes (Paused false) and a later Pause does nothing; a Keyed reports its pool's Paused;
// a sub-pool reports no Idle workers; after a shrinking Resize the idle workers above the
// new limit exit.
func TestAdvObs2PausedAndIdleReportWhatTheDocsSay(t *testing.T) {
	root := crew.New(4, crew.WithIdleTimeout(crew.NoIdleTimeout))
	defer root.StopAndWait()
	sub := root.Sub(2)
	k := crew.NewKeyed[int](sub)
	root.Pause()
	if !root.Stats().Paused || sub.Stats().Paused || k.Stats().Paused {
		t.Errorf("root paused: root %v, sub %v, keyed %v: want true, false, false",
			root.Stats().Paused, sub.Stats().Paused, k.Stats().Paused)
	}
	sub.Pause()
	if !sub.Stats().Paused || !k.Stats().Paused {
		t.Error("a paused sub-pool or its Keyed reports not paused")
	}
	sub.Resume()
	root.Resume()
	// Four workers, all busy at once, then idle.
	var wg sync.WaitGroup
	wg.Add(4)
	gate := make(chan struct{})
	for range 4 {
		must(t, root.Submit(func() { wg.Done(); <-gate }))
	}
	awaitReturn(t, "four tasks at once", goRun(wg.Wait))
	close(gate)
	awaitStats(t, root, "four idle workers", func(s crew.Stats) bool { return s.Idle == 4 && s.Running == 0 })
	if s := sub.Stats(); s.Idle != 0 {
		t.Errorf("a sub-pool reports %d idle workers, want none", s.Idle)
	}
	root.Resize(1)
	awaitStats(t, root, "the idle workers above the new limit to exit", func(s crew.Stats) bool { return s.Idle <= 1 })
	sub.Pause()
	sub.Stop()
	if s := sub.Stats(); s.Paused {
		t.Error("a stopped sub-pool reports Paused: Stop resumes")
	}
	root.Stop()
	root.Pause()
	if s := root.Stats(); s.Paused {
		t.Error("Pause after Stop took effect: it does nothing once the pool is stopped")
	}
}

// TestAdvObs2ParentHooksDoNotSeeSubPoolTasks proves the doc of Hooks and Pool.Sub: a
// sub-pool's tasks, plain or with a context, CallerRuns-run or helped, are seen by the
// sub-pool's hooks, not by its parent's, and the parent's histograms count only its own.
func TestAdvObs2ParentHooksDoNotSeeSubPoolTasks(t *testing.T) {
	var parent, child obs2Recorder
	root := crew.New(2, crew.WithHooks(parent.hooks(0)), crew.WithHooks(parent.hooks(1)), crew.WithLatencyHistograms())
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithPriority(1), crew.WithHooks(child.hooks(0)), crew.WithHooks(child.hooks(1)))
	subsub := sub.Sub(1)
	ctx := context.Background()
	must(t, root.Submit(func() {}))
	for _, p := range []*crew.Pool{sub, subsub} {
		must(t, p.Submit(func() {}))
		if _, err := obs2Fut(t, crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
			_, err := crew.Map(ctx, p, []int{1, 2}, func(context.Context, int) (int, error) { return 0, nil })
			return 0, err
		})); err != nil {
			t.Fatal(err)
		}
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	pc := parent.counts()
	for _, ev := range []string{"queued", "started", "finished"} {
		if pc[ev] != [2]int{1, 1} {
			t.Errorf("the parent's %s hooks called %v times, want once each, for its own task", ev, pc[ev])
		}
	}
	if pc["context"] != [2]int{} {
		t.Errorf("the parent's Context hooks called %v times for its sub-pools' functions", pc["context"])
	}
	if s := root.Stats(); s.WaitTime.Count != 1 || s.RunTime.Count != 1 {
		t.Errorf("the parent's histograms count %d and %d, want its own 1", s.WaitTime.Count, s.RunTime.Count)
	}
	// The sub-pool sees its own 4 tasks (a plain one, a future, two Map functions); its
	// sub-pool's are its sub-pool's.
	cc := child.counts()
	for _, ev := range []string{"queued", "started", "finished"} {
		if cc[ev] != [2]int{4, 4} {
			t.Errorf("the sub-pool's %s hooks called %v times, want 4 each", ev, cc[ev])
		}
	}
	if cc["context"] != [2]int{3, 3} || cc["end"] != [2]int{3, 3} {
		t.Errorf("the sub-pool's Context hooks called %v, ends %v, want 3 each", cc["context"], cc["end"])
	}
	child.checkPairs(t, "sub-pool")
}

// TestAdvObs2PanickingHookOfOneOptionLeavesTheOthersCalled proves the doc of WithHooks: the
// hooks of several options are each guarded on their own, so that a hook of the first option
// that panics (with a value or with nil) in every event, its Context hook and its end
// included, keeps none of the second option's from being called, each task still runs once,
// and each panic goes to the panic handler.
func TestAdvObs2PanickingHookOfOneOptionLeavesTheOthersCalled(t *testing.T) {
	var r obs2Recorder
	var handled atomic.Int64
	boom := func() {
		if handled.Load()%2 == 0 {
			panic("hook")
		}
		panic(nil)
	}
	bad := crew.Hooks{
		Queued:    func(crew.TaskInfo) { boom() },
		Started:   func(crew.TaskInfo) { boom() },
		Finished:  func(crew.TaskInfo) { boom() },
		Rejected:  func(error) { boom() },
		Discarded: func(crew.TaskInfo) { boom() },
		Context: func(ctx context.Context) (context.Context, func(error)) {
			boom()
			return ctx, nil
		},
	}
	badEnd := crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
		return ctx, func(error) { boom() }
	}}
	p := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking(),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithHooks(bad), crew.WithHooks(r.hooks(1)), crew.WithHooks(badEnd))
	defer p.StopAndWait()
	var ran atomic.Int64
	block, started, release := blocker()
	must(t, p.Submit(block))
	obs2Started(t, started, 1)
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		ran.Add(1)
		return 0, ctx.Err()
	})
	if err := p.Submit(func() { ran.Add(1) }); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Submit on a full queue = %v", err)
	}
	close(release)
	if _, err := obs2Fut(t, f); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	if ran.Load() != 1 {
		t.Errorf("%d functions ran, want 1", ran.Load())
	}
	c := r.counts()
	want := map[string]int{"queued": 3, "started": 2, "finished": 2, "rejected": 1, "context": 1, "end": 1}
	for ev, n := range want {
		if c[ev][1] != n {
			t.Errorf("the second option's %s hook called %d times, want %d", ev, c[ev][1], n)
		}
	}
	// The first option panicked in 3 Queued, 2 Started, 2 Finished, 1 Rejected and 1
	// Context call; the third in 1 end.
	if n := handled.Load(); n != 10 {
		t.Errorf("the panic handler got %d panics, want 10", n)
	}
}

// TestAdvObs2BlockedSubmittersRefusedAreSeenOnceAndCountedRight proves the docs of Hooks and
// Stats for submitters blocked on a full queue: one whose context ends counts in Canceled, one
// over WithMaxBlocked in Rejected, and those StopNow refuses get ErrStopped, counted in
// neither; each sees Queued then Rejected once per option, with the submit's error.
func TestAdvObs2BlockedSubmittersRefusedAreSeenOnceAndCountedRight(t *testing.T) {
	var r obs2Recorder
	var mu sync.Mutex
	var errs []error
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxBlocked(2),
		crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)),
		crew.WithHooks(crew.Hooks{Rejected: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }}))
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	obs2Started(t, started, 1)
	must(t, p.Submit(func() {}))
	ctx, cancel := context.WithCancel(context.Background())
	var ctxErr, stopErr error
	ctxDone := goRun(func() { ctxErr = p.SubmitContext(ctx, func() { t.Error("a canceled submit's task ran") }) })
	stopDone := goRun(func() { stopErr = p.Submit(func() { t.Error("a refused submit's task ran") }) })
	waitFor(t, "two blocked submitters", func() bool { return crew.BlockedSubmitters(p) == 2 })
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("a third blocked submitter over WithMaxBlocked(2) = %v, want ErrQueueFull", err)
	}
	cancel()
	awaitReturn(t, "the canceled submitter", ctxDone)
	if !errors.Is(ctxErr, context.Canceled) {
		t.Fatalf("the canceled submitter got %v", ctxErr)
	}
	back := p.StopNow()
	awaitReturn(t, "the submitter StopNow refuses", stopDone)
	if !errors.Is(stopErr, crew.ErrStopped) {
		t.Fatalf("the blocked submitter got %v at StopNow, want ErrStopped", stopErr)
	}
	if len(back) != 1 {
		t.Errorf("StopNow handed back %d tasks, want the one queued", len(back))
	}
	close(release)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	s := p.Stats()
	idleIdentity(t, "after", s)
	if s.Accepted != 2 || s.Rejected != 1 || s.Canceled != 1 || s.Returned != 1 || s.Completed != 1 {
		t.Errorf("%+v: want 2 accepted, 1 rejected, 1 canceled, 1 returned, 1 completed", s)
	}
	c := r.counts()
	if c["queued"] != [2]int{5, 5} || c["rejected"] != [2]int{3, 3} {
		t.Errorf("queued %v, rejected %v: want 5 and 3 per option", c["queued"], c["rejected"])
	}
	mu.Lock()
	defer mu.Unlock()
	var full, canceled, stopped int
	for _, err := range errs {
		switch {
		case errors.Is(err, crew.ErrQueueFull):
			full++
		case errors.Is(err, context.Canceled):
			canceled++
		case errors.Is(err, crew.ErrStopped):
			stopped++
		}
	}
	if full != 1 || canceled != 1 || stopped != 1 || len(errs) != 3 {
		t.Errorf("Rejected hook got %v: want one ErrQueueFull, one context.Canceled, one ErrStopped", errs)
	}
	r.checkPairs(t, "blocked submitters")
}

// TestAdvObs2FuncPoolDoorsSeenOnceAndStopNowCountedReturned proves the docs of Hooks, Stats
// and FuncPool.StopNow: each Invoke, TryInvoke and InvokeContext call is seen once by each
// hook option, a call run by CallerRuns on its submitter too, and the calls StopNow returns
// count in Returned and never start.
func TestAdvObs2FuncPoolDoorsSeenOnceAndStopNowCountedReturned(t *testing.T) {
	var r obs2Recorder
	started, release := make(chan struct{}, 8), make(chan struct{})
	var ran atomic.Int64
	p := crew.NewFunc(1, func(i int) {
		ran.Add(1)
		if i == 0 {
			started <- struct{}{}
			<-release
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
		crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	must(t, p.Invoke(0))
	obs2Started(t, started, 1)
	if !p.TryInvoke(1) {
		t.Fatal("TryInvoke refused an empty queue")
	}
	must(t, p.InvokeContext(context.Background(), 2)) // runs here
	must(t, p.Invoke(3))                              // runs here
	if p.TryInvoke(4) {
		t.Fatal("TryInvoke accepted into a full queue")
	}
	p.Pause()
	close(release)
	awaitStats(t, p, "the blocked call to end", func(s crew.Stats) bool { return s.Running == 0 })
	back := p.StopNow()
	if len(back) != 1 || back[0] != 1 {
		t.Fatalf("StopNow returned %v, want [1]", back)
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	s := p.Stats()
	idleIdentity(t, "after", s)
	if ran.Load() != 3 || s.Accepted != 4 || s.Completed != 3 || s.CallerRan != 2 || s.Returned != 1 || s.Rejected != 1 {
		t.Errorf("%d ran; %+v: want 3 ran of 4 accepted, 2 on the caller, 1 returned, 1 rejected", ran.Load(), s)
	}
	if s.WaitTime.Count != 3 || s.RunTime.Count != 3 {
		t.Errorf("histograms count %d and %d, want 3", s.WaitTime.Count, s.RunTime.Count)
	}
	c := r.counts()
	want := map[string][2]int{"queued": {5, 5}, "started": {3, 3}, "finished": {3, 3}, "rejected": {1, 1}}
	for ev, n := range want {
		if c[ev] != n {
			t.Errorf("%s hooks called %v times, want %v", ev, c[ev], n)
		}
	}
	r.checkPairs(t, "func pool")
}

// TestAdvObs2RunningIsZeroTheMomentWaitReturns proves the doc of Stats.Running: it is 0 once
// Wait has returned with nothing queued, read at once, with no grace, on the root of a tree,
// on a sub-pool and a sub-pool of it with priorities, whose workers are the root's tasks,
// after plain tasks, keyed tasks, helped functions and tasks put back by a pause.
func TestAdvObs2RunningIsZeroTheMomentWaitReturns(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 30
	}
	root := crew.New(3, crew.WithLatencyHistograms())
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithPriority(1), crew.WithLatencyHistograms())
	subsub := sub.Sub(2, crew.WithPriority(2), crew.WithLatencyHistograms())
	k := crew.NewKeyed[int](subsub)
	pools := []*crew.Pool{root, sub, subsub}
	for round := range rounds {
		which := pools[round%len(pools)]
		if round%4 == 0 {
			root.Pause()
		}
		for i := range 6 {
			must(t, pools[i%3].Submit(func() {}))
			must(t, k.Submit(i%2, func() {}))
		}
		f := crew.GoContext(context.Background(), subsub, func(ctx context.Context) (int, error) {
			g, _ := subsub.Group(ctx)
			g.Go(func(context.Context) error { return nil })
			return 0, g.Wait()
		})
		if round%4 == 0 {
			root.Resume()
		}
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		// Waiting on which: its own tasks and its sub-pools' have all ended.
		awaitReturn(t, "Wait", goRun(which.Wait))
		for _, p := range pools[slices.Index(pools, which):] {
			if s := p.Stats(); s.Running != 0 || s.Waiting != 0 {
				t.Fatalf("round %d: a pool at or under the one whose Wait returned: %+v, want nothing running or waiting", round, s)
			}
		}
		if ks := k.Stats(); which != subsub && (ks.Running != 0 || ks.Waiting != 0) {
			t.Fatalf("round %d: Keyed after its pool's Wait: %+v", round, ks)
		}
		awaitReturn(t, "root.Wait", goRun(root.Wait))
		for i, p := range pools {
			s := p.Stats()
			idleIdentity(t, fmt.Sprintf("round %d, pool %d", round, i), s)
			if s.WaitTime.Count != s.RunTime.Count {
				t.Fatalf("round %d, pool %d: idle, WaitTime counts %d, RunTime %d", round, i, s.WaitTime.Count, s.RunTime.Count)
			}
		}
	}
}

// obs2Count counts the calls of each hook of a pool, and of the Context hook's end.
type obs2Count struct {
	queued, started, finished, rejected, discarded, context, end atomic.Int64
}

func (c *obs2Count) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { c.queued.Add(1) },
		Started:   func(crew.TaskInfo) { c.started.Add(1) },
		Finished:  func(crew.TaskInfo) { c.finished.Add(1) },
		Rejected:  func(error) { c.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { c.discarded.Add(1) },
		Context: func(ctx context.Context) (context.Context, func(error)) {
			c.context.Add(1)
			return ctx, func(error) { c.end.Add(1) }
		},
	}
}

// TestAdvObs2EverythingAtOnceStillAddsUp proves the docs of Stats, Hooks and the histograms
// under everything at once on a tree with priorities: submitters of plain tasks, futures
// (some canceled), groups and keyed tasks, a Pause/Resume storm, a Resize storm, snapshot
// readers, then a Shutdown that gives up and StopAndWait. No counter goes back in any
// snapshot and Running+Waiting always adds up; once idle every pool accounts for each task
// once, its hooks saw each queued task once, as many Started as Finished, as many as its
// histograms count, and as many Context calls as ends.
func TestAdvObs2EverythingAtOnceStillAddsUp(t *testing.T) {
	counts := make([]*obs2Count, 3)
	opts := func(i int, o ...crew.Option) []crew.Option {
		counts[i] = new(obs2Count)
		return append(o, crew.WithHooks(counts[i].hooks()), crew.WithLatencyHistograms())
	}
	root := crew.New(3, opts(0)...)
	a := root.Sub(2, opts(1, crew.WithPriority(1))...)
	b := a.Sub(2, opts(2, crew.WithPriority(2), crew.WithQueueSize(16))...)
	pools := []*crew.Pool{root, a, b}
	defer root.StopAndWait()
	k := crew.NewKeyed[int](b)
	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 200*time.Microsecond, pools...)
	repeatUntil(&storms, stop, func() {
		p := pools[rand.IntN(len(pools))]
		p.Resize(1 + rand.IntN(3))
		time.Sleep(300 * time.Microsecond)
	})
	watched := obs2Watch(stop, false, root, a, b, k)
	per := 150
	if testing.Short() {
		per = 50
	}
	ctx := context.Background()
	var subs sync.WaitGroup
	var accepted atomic.Int64
	for w, p := range pools {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range per {
				switch i % 5 {
				case 0:
					if p.Submit(func() {}) == nil {
						accepted.Add(1)
					}
				case 1:
					f := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 0, nil })
					if i%10 == 1 {
						f.Cancel()
					}
				case 2:
					g, _ := p.Group(ctx)
					g.Go(func(context.Context) error { return nil })
					g.Go(func(context.Context) error { return errors.New("planned") })
					_ = g.Wait()
				case 3:
					_ = k.Submit(w*10+i%3, func() {})
				case 4:
					_, _ = crew.Map(ctx, p, []int{1, 2, 3}, func(context.Context, int) (int, error) { return 0, nil })
				}
			}
		}()
	}
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	sctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	_ = root.Shutdown(sctx)
	close(stop)
	storms.Wait()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	idleIdentity(t, "keyed", k.Stats())
	for i, p := range pools {
		s := p.Stats()
		idleIdentity(t, fmt.Sprint("pool ", i), s)
		c := counts[i]
		if c.started.Load() != c.finished.Load() || uint64(c.started.Load()) != s.WaitTime.Count || uint64(c.finished.Load()) != s.RunTime.Count {
			t.Errorf("pool %d: hooks saw %d starts and %d ends, histograms count %d and %d",
				i, c.started.Load(), c.finished.Load(), s.WaitTime.Count, s.RunTime.Count)
		}
		if c.context.Load() != c.end.Load() || c.context.Load() > c.started.Load() {
			t.Errorf("pool %d: %d Context calls, %d ends, %d starts", i, c.context.Load(), c.end.Load(), c.started.Load())
		}
		if c.discarded.Load() != 0 || c.rejected.Load() != 0 {
			t.Errorf("pool %d: %d discarded and %d rejected seen, want none", i, c.discarded.Load(), c.rejected.Load())
		}
	}
}

// TestAdvObs2HistogramsNeverCountFewerThanTheCountersSay proves the doc of Stats.WaitTime and
// RunTime: read just after the counters, they may count a task that started or finished
// since, never fewer; so in every snapshot of a pool without sub-pools, both count at least
// Completed+Panicked, caller-run and panicking tasks included, and WaitTime at least RunTime.
func TestAdvObs2HistogramsNeverCountFewerThanTheCountersSay(t *testing.T) {
	p := crew.New(3, crew.WithLatencyHistograms(), crew.WithQueueSize(8), crew.WithOverflow(crew.CallerRuns),
		crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	n := 6000
	if testing.Short() {
		n = 1500
	}
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		prev := p.Stats()
		for {
			s := p.Stats()
			ended := s.Completed + s.Panicked
			err := obs2Check(s, prev, true)
			if err == nil && (s.WaitTime.Count < ended || s.RunTime.Count < ended) {
				err = fmt.Errorf("histograms count %d and %d, fewer than the %d tasks the counters say ended: %+v",
					s.WaitTime.Count, s.RunTime.Count, ended, s)
			}
			if err != nil {
				errc <- err
				return
			}
			prev = s
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
		}
	}()
	together(3, n/3, func(c, i int) {
		task := func() {}
		if i%50 == 0 {
			task = panicsWithBoom
		}
		if err := p.Submit(task); err != nil {
			t.Error(err)
		}
	})
	awaitReturn(t, "Wait", goRun(p.Wait))
	close(stop)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	idleIdentity(t, "after", s)
	if s.WaitTime.Count != s.Accepted || s.RunTime.Count != s.Accepted {
		t.Errorf("idle: histograms count %d and %d of %d tasks", s.WaitTime.Count, s.RunTime.Count, s.Accepted)
	}
}

// TestAdvObs2CanceledFutureThatStopNowTakesCountsSkippedOnce proves the doc of Future.Cancel:
// a canceled function's place is counted in Skipped when a worker reaches it or StopNow
// takes it out first, never in Returned, and StopNow hands back only plain tasks.
func TestAdvObs2CanceledFutureThatStopNowTakesCountsSkippedOnce(t *testing.T) {
	for _, depth := range []int{0, 1, 2} {
		t.Run(fmt.Sprint("depth ", depth), func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			p := root
			for range depth {
				p = p.Sub(1, crew.WithPriority(1))
			}
			root.Pause()
			f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) {
				t.Error("a canceled function ran")
				return 0, nil
			})
			if !f.Cancel() {
				t.Fatal("Cancel of a queued function reported false")
			}
			if s := p.Stats(); s.Waiting != 1 || s.Skipped != 0 {
				t.Fatalf("a canceled function on a paused pool: %+v, want it Waiting", s)
			}
			if back := root.StopNow(); len(back) != 0 {
				t.Fatalf("StopNow handed back %d tasks, want none: the function is not plain", len(back))
			}
			awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
			s := p.Stats()
			idleIdentity(t, "after", s)
			if s.Returned != 0 || s.Skipped != 1 {
				t.Errorf("%+v: want the canceled function in Skipped once, not in Returned", s)
			}
			if _, err := obs2Fut(t, f); !errors.Is(err, context.Canceled) {
				t.Errorf("Wait = %v, want context.Canceled, as Cancel returned true", err)
			}
		})
	}
}

// TestAdvObs2HelpingAcrossASubPoolIsSeenByThePoolOfTheFunctions proves the docs of waits
// that help and Hooks: a function running on a sub-pool S of P that makes a group on P runs
// P's functions in its slot when P has no free worker; P's hooks and histograms see each
// once, they count in P's Waiting until they end, never in S's, and P's and S's counts add
// up once idle.
func TestAdvObs2HelpingAcrossASubPoolIsSeenByThePoolOfTheFunctions(t *testing.T) {
	var r obs2Recorder
	p := crew.New(1, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	var sr obs2Recorder
	s := p.Sub(1, crew.WithHooks(sr.hooks(0)), crew.WithLatencyHistograms())
	var faults []string
	var mu sync.Mutex
	outer := crew.GoContext(context.Background(), s, func(ctx context.Context) (int, error) {
		g, _ := p.Group(ctx)
		for range 3 {
			g.Go(func(context.Context) error {
				ps, ss := p.Stats(), s.Stats()
				if ps.Running != 1 || ps.Waiting < 1 || ss.Running != 1 || ss.Waiting != 0 {
					mu.Lock()
					faults = append(faults, fmt.Sprintf("P %+v, S %+v", ps, ss))
					mu.Unlock()
				}
				return nil
			})
		}
		return 0, g.Wait()
	})
	var err error
	awaitReturn(t, "the outer function (P's one worker runs it, so only helping finishes the group)", goRun(func() { _, err = outer.Wait() }))
	must(t, err)
	awaitReturn(t, "Wait", goRun(p.Wait))
	mu.Lock()
	if len(faults) > 0 {
		t.Errorf("helped functions read: %q; want P running only S's worker and them waiting, S running its one function", faults)
	}
	mu.Unlock()
	ps, ss := p.Stats(), s.Stats()
	idleIdentity(t, "P", ps)
	idleIdentity(t, "S", ss)
	if ps.WaitTime.Count != 3 || ps.RunTime.Count != 3 || ss.WaitTime.Count != 1 || ss.RunTime.Count != 1 {
		t.Errorf("histograms: P %d/%d, want 3; S %d/%d, want 1", ps.WaitTime.Count, ps.RunTime.Count, ss.WaitTime.Count, ss.RunTime.Count)
	}
	c, sc := r.counts(), sr.counts()
	for _, ev := range []string{"queued", "started", "finished", "context", "end"} {
		if c[ev] != [2]int{3, 3} || sc[ev] != [2]int{1, 0} {
			t.Errorf("%s: P's hooks %v, want 3 each; S's %v, want 1", ev, c[ev], sc[ev])
		}
	}
}

// TestAdvObs2SubmitsIntoTheirOwnFullQueueRunHereSeenOnce proves the docs of waits that help
// and Stats: a function of the pool submitting, with the context crew gave it, into the
// pool's full bounded queue (Group.Go, Results.Go, GoContext, SubmitContext) runs the new
// function itself instead of blocking, counted in CallerRan; snapshots taken inside it add up
// and count one task running, the submitter; each is seen once by the hooks and histograms.
func TestAdvObs2SubmitsIntoTheirOwnFullQueueRunHereSeenOnce(t *testing.T) {
	var r obs2Recorder
	p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	var mu sync.Mutex
	var faults []string
	var here atomic.Int64
	look := func(me uint64) {
		s := p.Stats()
		if obs2Goid() == me {
			here.Add(1)
		}
		if s.Running != 1 || uint64(s.Running+s.Waiting) != s.Accepted-obs2Ended(s) {
			mu.Lock()
			faults = append(faults, fmt.Sprintf("%+v", s))
			mu.Unlock()
		}
	}
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		me := obs2Goid()
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { look(me); return nil }) // fills the queue
		g.Go(func(context.Context) error { look(me); return nil }) // runs here
		res, _ := crew.NewResults[int](ctx, p)
		res.Go(func(context.Context) (int, error) { look(me); return 0, nil })
		f := crew.GoContext(ctx, p, func(context.Context) (int, error) { look(me); return 0, nil })
		if err := p.SubmitContext(ctx, func() { look(me) }); err != nil {
			return 0, err
		}
		if err := g.Wait(); err != nil {
			return 0, err
		}
		if _, err := res.Wait(); err != nil {
			return 0, err
		}
		_, err := f.Wait()
		return 0, err
	})
	var err error
	awaitReturn(t, "the outer function", goRun(func() { _, err = outer.Wait() }))
	must(t, err)
	awaitReturn(t, "Wait", goRun(p.Wait))
	mu.Lock()
	if len(faults) > 0 {
		t.Errorf("functions run by their submitter read %d snapshots not adding up to one running: %q", len(faults), faults)
	}
	mu.Unlock()
	const all = 6
	s := p.Stats()
	idleIdentity(t, "after", s)
	if here.Load() != all-1 || s.Completed != all || s.CallerRan < 3 {
		t.Errorf("%d of %d functions ran on the outer's goroutine; %+v, want at least 3 caller-ran", here.Load(), all-1, s)
	}
	if s.WaitTime.Count != all || s.RunTime.Count != all {
		t.Errorf("histograms count %d and %d, want %d", s.WaitTime.Count, s.RunTime.Count, all)
	}
	c := r.counts()
	for _, ev := range []string{"queued", "started", "finished"} {
		if c[ev] != [2]int{all, all} {
			t.Errorf("%s hooks called %v times, want %d each", ev, c[ev], all)
		}
	}
	if c["context"] != [2]int{all - 1, all - 1} || c["end"] != [2]int{all - 1, all - 1} {
		t.Errorf("Context hooks called %v, ends %v, want %d each", c["context"], c["end"], all-1)
	}
	r.checkPairs(t, "run here")
}

// TestAdvObs2GoexitInAHelpedFunctionIsObservedOnce proves the docs of Hooks, Stats, labels
// and waits that help where a function that a waiting function runs in its slot calls
// runtime.Goexit, which ends the waiting function's goroutine too: every task is seen once
// by each hook option, each Context hook's end is called once with a non-nil error, both
// count as completed once and in the histograms once, and the worker that takes the ended
// one's place starts with no labels.
func TestAdvObs2GoexitInAHelpedFunctionIsObservedOnce(t *testing.T) {
	for _, queue := range []int{0, 1} {
		t.Run(fmt.Sprint("queue ", queue), func(t *testing.T) {
			var r obs2Recorder
			var endsMu sync.Mutex
			var ends []error
			opts := []crew.Option{crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms(),
				crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
					return ctx, func(err error) { endsMu.Lock(); ends = append(ends, err); endsMu.Unlock() }
				}})}
			if queue > 0 {
				opts = append(opts, crew.WithQueueSize(queue))
			}
			p := crew.New(1, opts...)
			defer p.StopAndWait()
			ctx := pprof.WithLabels(context.Background(), pprof.Labels("req", "a"))
			outer := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
				// Wait runs the newest first (Group.Wait), so both run: a function left
				// queued when the outer one ends would be skipped, its context ended.
				g, _ := p.GroupAll(ctx)
				g.Go(func(context.Context) error { runtime.Goexit(); return nil })
				g.Go(func(context.Context) error { return nil })
				return 0, g.Wait()
			})
			select {
			case <-outer.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("the outer future never ended; stats %+v", p.Stats())
			}
			if _, err := outer.Wait(); err == nil {
				t.Fatal("the outer future's Wait = nil, want its goroutine's Goexit reported")
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			after := make(chan string, 1)
			must(t, p.Submit(func() { after <- labelsHere() }))
			if l := <-after; l != "" {
				t.Errorf("a plain task after the Goexit ran with labels %s", l)
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			const all = 4
			s := p.Stats()
			idleIdentity(t, "after", s)
			if s.Completed != all || s.WaitTime.Count != all || s.RunTime.Count != all {
				t.Errorf("%+v, histograms %d/%d: want %d completed and counted", s, s.WaitTime.Count, s.RunTime.Count, all)
			}
			c := r.counts()
			for _, ev := range []string{"queued", "started", "finished"} {
				if c[ev] != [2]int{all, all} {
					t.Errorf("%s hooks called %v times, want %d each", ev, c[ev], all)
				}
			}
			if c["context"] != [2]int{3, 3} || c["end"] != [2]int{3, 3} {
				t.Errorf("Context hooks called %v, ends %v, want 3 each", c["context"], c["end"])
			}
			endsMu.Lock()
			defer endsMu.Unlock()
			var nonNil int
			for _, err := range ends {
				if err != nil {
					nonNil++
				}
			}
			if len(ends) != 3 || nonNil != 2 {
				t.Errorf("Context ends got %v, want 3 calls, 2 of them (the Goexit and the outer) with an error", ends)
			}
		})
	}
}

// TestAdvObs2KeyedTasksOnAFullPoolAreNotBoundedNorRunHereSeenOnce proves the doc of Keyed
// and its Stats on a pool whose bounded queue is full, whatever its overflow policy: the
// pool's WithQueueSize does not bound keyed tasks, so Keyed.Submit accepts at once; keyed
// tasks never run on their submitter (CallerRan stays 0), each runs once on a worker later,
// seen once by the pool's hooks and histograms.
func TestAdvObs2KeyedTasksOnAFullPoolAreNotBoundedNorRunHereSeenOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  crew.Option
	}{
		{"Block", crew.WithOverflow(crew.Block)},
		{"Reject", crew.WithNonBlocking()},
		{"CallerRuns", crew.WithOverflow(crew.CallerRuns)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r obs2Recorder
			p := crew.New(1, crew.WithQueueSize(1), tc.opt, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
			defer p.StopAndWait()
			block, started, release := blocker()
			must(t, p.Submit(block))
			obs2Started(t, started, 1)
			must(t, p.Submit(func() {}))
			k := crew.NewKeyed[int](p)
			me := obs2Goid()
			var here, ran atomic.Int64
			for i := range 6 {
				err := returnsWithin(t, "Keyed.Submit on a full pool", func() error {
					return k.Submit(i%2, func() {
						ran.Add(1)
						if obs2Goid() == me {
							here.Add(1)
						}
					})
				})
				must(t, err)
			}
			if ran.Load() != 0 {
				t.Fatalf("%d keyed tasks ran while the only worker was held", ran.Load())
			}
			if ks := k.Stats(); ks.Accepted != 6 || ks.Waiting != 6 || ks.CallerRan != 0 {
				t.Errorf("Keyed stats %+v, want 6 accepted and waiting", ks)
			}
			close(release)
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "Wait", goRun(p.Wait))
			if ran.Load() != 6 || here.Load() != 0 {
				t.Errorf("%d keyed tasks ran, %d on their submitter; want 6 and 0", ran.Load(), here.Load())
			}
			ks, s := k.Stats(), p.Stats()
			idleIdentity(t, "keyed", ks)
			idleIdentity(t, "pool", s)
			if ks.Completed != 6 || ks.CallerRan != 0 || s.CallerRan != 0 {
				t.Errorf("Keyed %+v, pool %+v: want 6 completed, none caller-ran", ks, s)
			}
			if s.WaitTime.Count != 8 || s.RunTime.Count != 8 {
				t.Errorf("histograms count %d and %d, want 8 (2 plain, 6 keyed)", s.WaitTime.Count, s.RunTime.Count)
			}
			c := r.counts()
			for _, ev := range []string{"queued", "started", "finished"} {
				if c[ev] != [2]int{8, 8} {
					t.Errorf("%s hooks called %v times, want 8 each", ev, c[ev])
				}
			}
			if c["rejected"] != [2]int{} {
				t.Errorf("Rejected hooks called %v times", c["rejected"])
			}
		})
	}
}

// TestAdvObs2TaskTimeoutSeenByTheContextHookAndItsEnd proves the docs of WithTaskTimeout
// and Hooks.Context on a sub-pool that inherits its parent's timeout: the Context hook gets
// the context the function was to receive, with its deadline, and its end gets the error
// the function returned, which matches ErrTaskTimeout; Finished's Run covers the timeout.
func TestAdvObs2TaskTimeoutSeenByTheContextHookAndItsEnd(t *testing.T) {
	const d = 20 * time.Millisecond
	var mu sync.Mutex
	var deadlines []bool
	var ends []error
	var runs []time.Duration
	root := crew.New(2, crew.WithTaskTimeout(d))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithPriority(1), crew.WithHooks(crew.Hooks{
		Context: func(ctx context.Context) (context.Context, func(error)) {
			_, ok := ctx.Deadline()
			mu.Lock()
			deadlines = append(deadlines, ok)
			mu.Unlock()
			return ctx, func(err error) { mu.Lock(); ends = append(ends, err); mu.Unlock() }
		},
		Finished: func(ti crew.TaskInfo) { mu.Lock(); runs = append(runs, ti.Run); mu.Unlock() },
	}))
	wait := func(ctx context.Context) error { <-ctx.Done(); return context.Cause(ctx) }
	f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) { return 0, wait(ctx) })
	_, err := obs2Fut(t, f)
	if !errors.Is(err, crew.ErrTaskTimeout) {
		t.Fatalf("a function past its timeout returned %v, want ErrTaskTimeout", err)
	}
	// A plain task of the sub-pool gets no context: the hook does not see it.
	must(t, sub.Submit(func() {}))
	awaitReturn(t, "Wait", goRun(root.Wait))
	mu.Lock()
	defer mu.Unlock()
	if len(deadlines) != 1 || !deadlines[0] {
		t.Errorf("the Context hook saw %v, want one context with a deadline", deadlines)
	}
	if len(ends) != 1 || !errors.Is(ends[0], crew.ErrTaskTimeout) || !errors.Is(ends[0], context.DeadlineExceeded) {
		t.Errorf("the Context hook's end got %v, want one ErrTaskTimeout", ends)
	}
	if len(runs) != 2 || max(runs[0], runs[1]) < d {
		t.Errorf("Finished saw runs %v, want 2, one of at least %v", runs, d)
	}
}

// TestAdvObs2BreakingOutOfMapSeqSkipsWhatDidNotStartSeenOnce proves the docs of MapSeq,
// Stats and Hooks: breaking out of the loop cancels the calls in flight and waits for them,
// so nothing started by it still runs when the range ends; the functions it had queued are
// skipped (no Started, Finished or Context hook) and the rest counted once, in the hooks as
// in the histograms.
func TestAdvObs2BreakingOutOfMapSeqSkipsWhatDidNotStartSeenOnce(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		t.Run(fmt.Sprint("unordered ", unordered), func(t *testing.T) {
			var c obs2Count
			p := crew.New(3, crew.WithHooks(c.hooks()), crew.WithLatencyHistograms())
			defer p.StopAndWait()
			var inside atomic.Int64
			fn := func(ctx context.Context, i int) (int, error) {
				inside.Add(1)
				defer inside.Add(-1)
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
				return i, nil
			}
			seq := crew.MapSeq(context.Background(), p, countTo(200), fn)
			if unordered {
				seq = crew.MapSeqUnordered(context.Background(), p, countTo(200), fn)
			}
			n := 0
			for _, err := range seq {
				must(t, err)
				if n++; n == 5 {
					break
				}
			}
			if in := inside.Load(); in != 0 {
				t.Fatalf("%d functions still inside after the range ended", in)
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			s := p.Stats()
			idleIdentity(t, "after", s)
			started := uint64(c.started.Load())
			if started != s.Completed || started+s.Skipped != s.Accepted || uint64(c.queued.Load()) != s.Accepted {
				t.Errorf("%+v: hooks saw %d queued, %d started", s, c.queued.Load(), started)
			}
			if c.finished.Load() != c.started.Load() || c.context.Load() != c.started.Load() || c.end.Load() != c.started.Load() {
				t.Errorf("hooks: %d started, %d finished, %d contexts, %d ends", c.started.Load(), c.finished.Load(), c.context.Load(), c.end.Load())
			}
			if s.WaitTime.Count != started || s.RunTime.Count != started {
				t.Errorf("histograms count %d and %d, want the %d started", s.WaitTime.Count, s.RunTime.Count, started)
			}
		})
	}
}

// obs2Bucket returns the index of the bucket of h that holds d: Buckets[i] < d <=
// Buckets[i+1], in seconds.
func obs2Bucket(h *crew.Histogram, d time.Duration) int {
	sec := d.Seconds()
	for i := range h.Counts {
		if sec <= h.Buckets[i+1] {
			return i
		}
	}
	return len(h.Counts) - 1
}

// TestAdvObs2HistogramsHoldExactlyTheTimesTheHooksSaw proves the docs of TaskInfo and
// Histogram together: the histograms record each task's wait and run, the same durations
// the hooks are given, through every door (plain, keyed, caller-run, helped, futures, Map),
// so the counts per bucket rebuilt from the hooks' TaskInfo equal the histograms' Counts,
// and their sums agree.
func TestAdvObs2HistogramsHoldExactlyTheTimesTheHooksSaw(t *testing.T) {
	var o obs2Times
	p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(o.hooks()), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	ctx := context.Background()
	k := crew.NewKeyed[int](p)
	for i := range 40 {
		task := func() {
			if i%4 == 0 {
				time.Sleep(time.Duration(i) * 10 * time.Microsecond)
			}
		}
		must(t, p.Submit(task))
		must(t, k.Submit(i%3, task))
		if i%10 == 0 {
			if _, err := obs2Fut(t, crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
				_, err := crew.Map(ctx, p, []int{1, 2, 3}, func(context.Context, int) (int, error) { task(); return 0, nil })
				return 0, err
			})); err != nil {
				t.Fatal(err)
			}
		}
	}
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "Wait", goRun(p.Wait))
	s := p.Stats()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, tc := range []struct {
		name  string
		h     *crew.Histogram
		times []time.Duration
	}{
		{"WaitTime", s.WaitTime, func() (d []time.Duration) {
			for _, ti := range o.started {
				d = append(d, ti.Wait)
			}
			return d
		}()},
		{"RunTime", s.RunTime, func() (d []time.Duration) {
			for _, ti := range o.finished {
				d = append(d, ti.Run)
			}
			return d
		}()},
	} {
		want := make([]uint64, len(tc.h.Counts))
		var sum float64
		for _, d := range tc.times {
			want[obs2Bucket(tc.h, d)]++
			sum += d.Seconds()
		}
		if tc.h.Count != uint64(len(tc.times)) || !slices.Equal(want, tc.h.Counts) {
			t.Errorf("%s: count %d, the hooks saw %d; buckets differ from the hooks' times", tc.name, tc.h.Count, len(tc.times))
		}
		if diff := tc.h.Sum - sum; diff > 1e-6 || diff < -1e-6 {
			t.Errorf("%s: sum %v s, the hooks' times add up to %v s", tc.name, tc.h.Sum, sum)
		}
	}
}

// TestAdvObs2HooksReadStatsThatCountTheirTask proves the docs of Hooks and Stats from inside
// the hooks of a pool of one worker: Queued is called before the pool accepts the task, so
// its snapshot does not count it in Accepted; Started is called once a worker was given the
// task, which Running then counts, and Waiting no longer; each snapshot adds up.
func TestAdvObs2HooksReadStatsThatCountTheirTask(t *testing.T) {
	var p *crew.Pool
	var mu sync.Mutex
	var queued, started []crew.Stats
	p = crew.New(1, crew.WithHooks(crew.Hooks{
		Queued:  func(crew.TaskInfo) { s := p.Stats(); mu.Lock(); queued = append(queued, s); mu.Unlock() },
		Started: func(crew.TaskInfo) { s := p.Stats(); mu.Lock(); started = append(started, s); mu.Unlock() },
	}))
	defer p.StopAndWait()
	const n = 5
	p.Pause()
	for range n {
		must(t, p.Submit(func() {}))
	}
	p.Resume()
	awaitReturn(t, "Wait", goRun(p.Wait))
	mu.Lock()
	defer mu.Unlock()
	if len(queued) != n || len(started) != n {
		t.Fatalf("%d Queued and %d Started snapshots, want %d", len(queued), len(started), n)
	}
	for i, s := range queued {
		if s.Accepted != uint64(i) || s.Waiting != i {
			t.Errorf("Queued of task %d read %+v: want %d accepted and waiting, not the task offered", i, s, i)
		}
	}
	for i, s := range started {
		if s.Running != 1 || s.Waiting != n-1-i || s.Completed != uint64(i) {
			t.Errorf("Started of task %d read %+v: want it running, %d waiting, %d completed", i, s, n-1-i, i)
		}
	}
}

// TestAdvObs2PausedPoolsWorkersAreIdleItsTasksWaiting proves the docs of Stats.Idle, Running
// and Waiting on a paused pool whose workers are alive: the tasks submitted are Waiting,
// none Running, and the live workers, which run nothing, are Idle; Resume runs them all.
func TestAdvObs2PausedPoolsWorkersAreIdleItsTasksWaiting(t *testing.T) {
	p := crew.New(2, crew.WithMinWorkers(2), crew.WithIdleTimeout(crew.NoIdleTimeout))
	defer p.StopAndWait()
	awaitStats(t, p, "two idle workers", func(s crew.Stats) bool { return s.Idle == 2 })
	p.Pause()
	var ran atomic.Int64
	for range 3 {
		must(t, p.Submit(func() { ran.Add(1) }))
	}
	awaitStats(t, p, "the paused pool's workers to be idle", func(s crew.Stats) bool { return s.Idle == 2 })
	if s := p.Stats(); s.Running != 0 || s.Waiting != 3 || !s.Paused || ran.Load() != 0 {
		t.Errorf("paused: %+v, %d ran: want 3 waiting, none running", s, ran.Load())
	}
	p.Resume()
	awaitReturn(t, "Wait", goRun(p.Wait))
	if s := p.Stats(); ran.Load() != 3 || s.Completed != 3 || s.Running != 0 || s.Waiting != 0 {
		t.Errorf("resumed: %+v, %d ran", s, ran.Load())
	}
}

// TestAdvObs2ShutdownThatGivesUpOnATreeSkipsNestedFunctionsCountsEachOnce proves the docs of
// Shutdown, Stats and Hooks on a tree: when Shutdown's context ends first, the functions with
// a context queued in a sub-pool of a sub-pool (a priority one) are skipped, counted there,
// unseen by the Started, Finished and Context hooks; its plain and keyed tasks still run,
// seen once; every pool of the tree accounts for each task once.
func TestAdvObs2ShutdownThatGivesUpOnATreeSkipsNestedFunctionsCountsEachOnce(t *testing.T) {
	var r obs2Recorder
	root := crew.New(1)
	defer root.StopAndWait()
	mid := root.Sub(1, crew.WithPriority(2))
	leaf := mid.Sub(2, crew.WithHooks(r.hooks(0)), crew.WithHooks(r.hooks(1)), crew.WithLatencyHistograms())
	block, started, release := blocker()
	must(t, root.Submit(block))
	obs2Started(t, started, 1)
	ctx := context.Background()
	var ran, skippedRan atomic.Int64
	var futs []*crew.Future[int]
	for range 3 {
		futs = append(futs, crew.GoContext(ctx, leaf, func(context.Context) (int, error) { skippedRan.Add(1); return 0, nil }))
	}
	k := crew.NewKeyed[int](leaf)
	for i := range 2 {
		must(t, leaf.Submit(func() { ran.Add(1) }))
		must(t, k.Submit(i, func() { ran.Add(1) }))
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := root.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	// The skipped functions leave the queue when a worker reaches their place: the plain
	// task holding the root's one worker has to end first.
	close(release)
	for _, f := range futs {
		if err := returnsWithin(t, "a skipped future's Wait", func() error { _, err := f.Wait(); return err }); err == nil {
			t.Error("a skipped future's Wait = nil")
		}
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if skippedRan.Load() != 0 || ran.Load() != 4 {
		t.Errorf("%d skipped functions ran, %d of 4 plain and keyed tasks", skippedRan.Load(), ran.Load())
	}
	for i, p := range []*crew.Pool{root, mid, leaf} {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
	idleIdentity(t, "keyed", k.Stats())
	s := leaf.Stats()
	if s.Skipped != 3 || s.WaitTime.Count != 4 || s.RunTime.Count != 4 {
		t.Errorf("leaf %+v, histograms %d/%d: want 3 skipped, 4 counted", s, s.WaitTime.Count, s.RunTime.Count)
	}
	c := r.counts()
	want := map[string][2]int{"queued": {7, 7}, "started": {4, 4}, "finished": {4, 4}, "context": {}, "end": {}}
	for ev, n := range want {
		if c[ev] != n {
			t.Errorf("%s hooks called %v times, want %v", ev, c[ev], n)
		}
	}
}

// TestAdvObs2HelpedFunctionStaysWaitingAfterAWorkerDropsItsPlace proves the doc of
// Stats.Waiting: a function that a waiting function runs itself counts as Waiting until it
// has ended, whenever a worker drops its place in the queue, and never as Running; the
// worker that dropped it goes idle, and once it ends it counts once in Completed.
func TestAdvObs2HelpedFunctionStaysWaitingAfterAWorkerDropsItsPlace(t *testing.T) {
	p := crew.New(2, crew.WithIdleTimeout(crew.NoIdleTimeout), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block)) // holds the second slot, so that no worker takes F
	obs2Started(t, started, 1)
	inF, gate := make(chan struct{}), make(chan struct{})
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { close(inF); <-gate; return nil })
		return 0, g.Wait()
	})
	select {
	case <-inF:
	case <-time.After(10 * time.Second):
		t.Fatalf("the outer function's wait did not run F; stats %+v", p.Stats())
	}
	if s := p.Stats(); s.Running != 2 || s.Waiting != 1 {
		t.Errorf("F run by its waiter, the blocker running: %+v, want 2 running (outer, blocker) and F waiting", s)
	}
	// The blocker ends: its worker reaches F's place, finds it taken, and drops it.
	close(release)
	awaitStats(t, p, "the blocker to end", func(s crew.Stats) bool { return s.Completed == 1 })
	time.Sleep(20 * time.Millisecond) // room for the worker to reach F's place
	s := p.Stats()
	if s.Running != 1 || s.Waiting != 1 || s.Completed != 1 || uint64(s.Running+s.Waiting) != s.Accepted-obs2Ended(s) {
		t.Errorf("F still running in its waiter, its place dropped: %+v, want 1 running (outer), F waiting, 1 completed", s)
	}
	close(gate)
	if _, err := obs2Fut(t, outer); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	s = p.Stats()
	idleIdentity(t, "after", s)
	if s.Completed != 3 || s.WaitTime.Count != 3 || s.RunTime.Count != 3 {
		t.Errorf("%+v, histograms %d/%d: want 3 completed and counted once", s, s.WaitTime.Count, s.RunTime.Count)
	}
}

// TestAdvObs2WeightedTasksCountOnceInRunningHooksAndHistograms proves the doc of
// Stats.Running for SubmitN: a task counts once whatever its weight, on its pool and on a
// sub-pool's parent, a heavy task waiting for room counts once in Waiting, and each is seen
// once by the hooks and the histograms.
func TestAdvObs2WeightedTasksCountOnceInRunningHooksAndHistograms(t *testing.T) {
	var c obs2Count
	root := crew.New(4)
	defer root.StopAndWait()
	sub := root.Sub(4, crew.WithHooks(c.hooks()), crew.WithLatencyHistograms())
	block, started, release := blocker()
	must(t, sub.SubmitN(3, block))
	obs2Started(t, started, 1)
	if s := sub.Stats(); s.Running != 1 {
		t.Errorf("a task of weight 3 running: %+v, want Running 1", s)
	}
	must(t, sub.Submit(block))
	obs2Started(t, started, 1)
	must(t, sub.SubmitN(2, block)) // 3+1+2 > 4: waits
	time.Sleep(10 * time.Millisecond)
	if s := sub.Stats(); s.Running != 2 || s.Waiting != 1 {
		t.Errorf("weights 3 and 1 running, 2 waiting: %+v, want 2 running and 1 waiting", s)
	}
	if s := root.Stats(); s.Running < 1 || s.Running > 2 {
		t.Errorf("the parent counts its sub-pool's workers: %+v", s)
	}
	close(release)
	awaitReturn(t, "Wait", goRun(root.Wait))
	s := sub.Stats()
	idleIdentity(t, "sub", s)
	if s.Completed != 3 || s.WaitTime.Count != 3 || s.RunTime.Count != 3 || c.started.Load() != 3 || c.finished.Load() != 3 {
		t.Errorf("%+v, histograms %d/%d, hooks %d/%d: want 3 everywhere", s, s.WaitTime.Count, s.RunTime.Count, c.started.Load(), c.finished.Load())
	}
}

// TestAdvObs2DiscardedHookGetsTheTimeEachDroppedTaskWaited proves the doc of
// Hooks.Discarded: it is called once per dropped task, a keyed one included, with
// TaskInfo.Wait the time the task waited, and neither Started nor Finished follows.
func TestAdvObs2DiscardedHookGetsTheTimeEachDroppedTaskWaited(t *testing.T) {
	const hold = 30 * time.Millisecond
	var mu sync.Mutex
	var waits []time.Duration
	var starts atomic.Int64
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(crew.Hooks{
		Discarded: func(ti crew.TaskInfo) { mu.Lock(); waits = append(waits, ti.Wait); mu.Unlock() },
		Started:   func(crew.TaskInfo) { starts.Add(1) },
	}))
	defer p.StopAndWait()
	block, started, release := blocker()
	must(t, p.Submit(block))
	obs2Started(t, started, 1)
	k := crew.NewKeyed[int](p)
	var ran atomic.Int64
	for range 2 {
		must(t, k.Submit(1, func() { ran.Add(1) })) // one turn holding both
	}
	time.Sleep(hold)
	must(t, p.Submit(func() { ran.Add(1) })) // drops the turn
	time.Sleep(hold)
	must(t, p.Submit(func() { ran.Add(1) })) // drops the task before
	close(release)
	awaitReturn(t, "Wait", goRun(p.Wait))
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 3 {
		t.Fatalf("Discarded called %d times, want 3 (two keyed tasks, one plain)", len(waits))
	}
	for i, w := range waits {
		if w < hold {
			t.Errorf("dropped task %d: Wait %v, want at least %v", i, w, hold)
		}
	}
	if starts.Load() != 2 || ran.Load() != 1 {
		t.Errorf("%d starts and %d of the submitted tasks ran, want 2 (the blocker, the last) and 1", starts.Load(), ran.Load())
	}
}
