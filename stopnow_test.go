package crew_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

// Pool.StopNow: queued plain tasks come back in the order they would have started, never run,
// and the counters add up.
func TestStopNowReturnsQueuedTasksInStartOrder(t *testing.T) {
	p := crew.New(1)
	release := holdWorkers(t, plainPool{p}, 1, 0)
	var ran atomic.Int64
	var order []int
	for i := range 5 {
		f := func() { ran.Add(1); order = append(order, i) }
		if err := p.Submit(f); err != nil {
			t.Fatal(err)
		}
	}
	got := p.StopNow()
	release()
	p.StopAndWait()
	if len(got) != 5 {
		t.Fatalf("StopNow returned %d tasks, want 5", len(got))
	}
	// Run what came back: each is one of ours, in order.
	for i, f := range got {
		before := ran.Load()
		f()
		if ran.Load() != before+1 {
			t.Fatalf("task %d is not one of ours", i)
		}
	}
	if ran.Load() != 5 {
		t.Fatalf("ran = %d, want only the 5 handed back, run by the test", ran.Load())
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("handed back in order %v, want submission order", order)
		}
	}
	s := p.Stats()
	if s.Accepted != s.Completed+s.Panicked+uint64(s.Running+s.Waiting)+s.Discarded+crew.Removed(p) {
		t.Fatalf("counters do not add up: %+v, removed %d", s, crew.Removed(p))
	}
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after StopNow = %v", err)
	}
}

func TestStopNowFailsFuturesGroupsAndMapWithErrStopped(t *testing.T) {
	p := crew.New(1)
	release := holdWorkers(t, plainPool{p}, 1, 0)
	f := crew.Go(p, func() (int, error) { return 1, nil })
	g, _ := p.Group(context.Background())
	g.Go(func(context.Context) error { return nil })
	r, _ := crew.NewResults[int](context.Background(), p)
	r.Go(func(context.Context) (int, error) { return 1, nil })
	mapDone := make(chan error, 1)
	go func() {
		_, err := crew.Map(context.Background(), p, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) { return v, nil })
		mapDone <- err
	}()
	waitFor(t, "the Map item queued", func() bool { return p.Stats().Waiting == 4 })
	if got := p.StopNow(); len(got) != 0 {
		t.Fatalf("StopNow returned %d internal tasks as plain ones", len(got))
	}
	release()
	if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Future.Wait = %v, want ErrStopped", err)
	}
	if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Group.Wait = %v, want ErrStopped", err)
	}
	if _, err := r.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Results.Wait = %v, want ErrStopped", err)
	}
	if err := <-mapDone; !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Map = %v, want ErrStopped", err)
	}
	p.StopAndWait()
}

// Pool.StopNow on a parent includes its sub-pools' queued tasks, also the one held by a
// sub-pool worker waiting in the parent's queue; the sub-pool's counters still add up.
func TestStopNowIncludesSubPoolTasks(t *testing.T) {
	for _, which := range []string{"parent", "sub"} {
		t.Run(which, func(t *testing.T) {
			p := crew.New(1)
			release := holdWorkers(t, plainPool{p}, 1, 0)
			sub := p.Sub(2)
			var ran atomic.Int64
			for range 4 {
				sub.Submit(func() { ran.Add(1) })
			}
			p.Submit(func() { ran.Add(1) })
			var got []func()
			if which == "parent" {
				got = p.StopNow()
			} else {
				got = sub.StopNow()
			}
			release()
			p.StopAndWait()
			want := 5
			if which == "sub" {
				want = 4
			}
			if len(got) != want || ran.Load() != int64(5-want) {
				t.Fatalf("StopNow returned %d (want %d), %d ran", len(got), want, ran.Load())
			}
			s := sub.Stats()
			if s.Running != 0 || s.Waiting != 0 || s.Accepted != s.Completed+crew.Removed(sub) {
				t.Fatalf("sub-pool stats %+v, removed %d", s, crew.Removed(sub))
			}
		})
	}
}

// Pool.StopNow includes the tasks of its sub-pools' sub-pools, however deep: a sub-pool's
// first task waits in the root pool's queue inside one worker per generation. Each pool's
// StopNow returns its own tasks and those below it, none of them runs, every other task runs
// once, and every pool's counters add up.
func TestStopNowReturnsTasksOfSubPoolsOfSubPools(t *testing.T) {
	for stopped := range 4 { // which pool's StopNow: the root, or the sub-pool at depth 1 to 3
		t.Run(fmt.Sprint("depth ", stopped), func(t *testing.T) {
			p := crew.New(1)
			release := holdWorkers(t, plainPool{p}, 1, 0)
			pools := []*crew.Pool{p}
			for range 3 {
				pools = append(pools, pools[len(pools)-1].Sub(2))
			}
			var ran [4]atomic.Int64
			var returned [4]int
			var replaying atomic.Bool // the test calls the returned tasks to see whose they are
			for round := range 2 {
				for depth := len(pools) - 1; depth >= 0; depth-- { // the deepest first
					if depth == 0 && round == 0 {
						continue // the root's own task waits behind the sub-pools' workers
					}
					err := pools[depth].Submit(func() {
						if replaying.Load() {
							returned[depth]++
							return
						}
						ran[depth].Add(1)
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			got := pools[stopped].StopNow()
			release()
			p.StopAndWait()
			replaying.Store(true)
			for _, f := range got {
				f()
			}
			for depth := range pools {
				want := 2 // submitted
				if depth == 0 {
					want = 1
				}
				wantReturned := 0
				if depth >= stopped {
					wantReturned = want
				}
				if returned[depth] != wantReturned || ran[depth].Load() != int64(want-wantReturned) {
					t.Errorf("pool at depth %d: %d returned (want %d), %d ran (want %d)",
						depth, returned[depth], wantReturned, ran[depth].Load(), want-wantReturned)
				}
				s := pools[depth].Stats()
				if s.Running != 0 || s.Waiting != 0 {
					t.Errorf("pool at depth %d: stats %+v", depth, s)
				}
			}
		})
	}
}

func TestStopNowAfterStopStillRemovesQueued(t *testing.T) {
	f := crew.NewFunc(1, func(int) {})
	release := make(chan struct{})
	g := crew.NewFunc(1, func(int) { <-release })
	g.Invoke(0)
	for i := 1; i <= 3; i++ {
		g.Invoke(i)
	}
	g.Stop()
	got := g.StopNow()
	close(release)
	g.StopAndWait()
	f.StopAndWait()
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("StopNow after Stop = %v, want [1 2 3]", got)
	}
}

func TestStopNowOnPausedPoolAbandonsBacklog(t *testing.T) {
	p := crew.New(2)
	p.Pause()
	for range 10 {
		p.Submit(func() { t.Error("a paused backlog task ran") })
	}
	if got := p.StopNow(); len(got) != 10 {
		t.Fatalf("StopNow returned %d of 10", len(got))
	}
	p.StopAndWait()
}

// Every accepted task ran exactly once or was returned by StopNow exactly once, with StopNow
// racing submitters.
func TestStressStopNowRacingSubmitters(t *testing.T) {
	n := 2000
	if testing.Short() || racetest.Enabled {
		n = 400
	}
	for round := range 10 {
		p := crew.New(3, crew.WithQueueSize(16))
		sub := p.Sub(2)
		counts := make([]atomic.Int32, 64*n)
		var accepted atomic.Int64
		start := make(chan struct{})
		done := make(chan struct{})
		for g := range 64 {
			go func() {
				defer func() { done <- struct{}{} }()
				<-start
				for i := range n {
					k := g*n + i
					target := p
					if i%3 == 0 {
						target = sub
					}
					if target.Submit(func() { counts[k].Add(1) }) == nil {
						accepted.Add(1)
					} else {
						counts[k].Add(100) // refused: must never run
					}
				}
			}()
		}
		close(start)
		back := p.StopNow()
		for range 64 {
			<-done
		}
		p.StopAndWait()
		for _, f := range back {
			f()
		}
		var total int64
		for k := range counts {
			switch c := counts[k].Load(); c {
			case 0, 100:
			case 1:
				total++
			default:
				t.Fatalf("round %d: task %d count %d", round, k, c)
			}
		}
		if total != accepted.Load() {
			t.Fatalf("round %d: ran or returned %d, accepted %d", round, total, accepted.Load())
		}
	}
}

// Under load, Pool.StopNow on any pool of a chain of sub-pools, paused or not, and two of
// them at once on different pools, keeps its promise: every accepted task runs exactly once
// or is returned by one of them, never both, while a submitter fills every pool of the chain
// with tasks that return, panic with nil, call runtime.Goexit or sleep, and the panic handler
// itself panics with nil or calls runtime.Goexit.
func TestStopNowOnNestedSubPoolsUnderLoad(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	// The handler's own panics go to the default handler, which logs them: not here.
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer slog.SetDefault(old)
	for round := range rounds {
		var handled atomic.Int32
		p := crew.New(3, crew.WithPanicHandler(func(any, []byte) {
			if handled.Add(1)%2 == 0 {
				runtime.Goexit()
			}
			panic(nil)
		}))
		pools := []*crew.Pool{p}
		for _, limit := range []int{5, 2, 7} {
			pools = append(pools, pools[len(pools)-1].Sub(limit))
		}
		const tasks = 300
		var ran, returned [tasks]atomic.Int32
		var accepted [tasks]bool
		var replaying atomic.Bool // the test calls the returned tasks to see which they are
		submitted := make(chan struct{})
		go func() {
			defer close(submitted)
			for i := range tasks {
				accepted[i] = pools[i%len(pools)].Submit(func() {
					if replaying.Load() {
						returned[i].Add(1)
						return
					}
					ran[i].Add(1)
					switch i % 5 {
					case 1:
						runtime.Goexit()
					case 2:
						panic(nil)
					case 3:
						time.Sleep(10 * time.Microsecond)
					}
				}) == nil
			}
		}()
		time.Sleep(time.Duration(round%5) * 50 * time.Microsecond)
		stopped := 1 + round%3 // a sub-pool at depth 1 to 3
		if round%2 == 1 {
			pools[stopped].Pause()
		}
		var also []func() // from a second StopNow at once, on the pool below or the root
		var other sync.WaitGroup
		if round%4 >= 2 {
			other.Add(1)
			go func() {
				defer other.Done()
				also = pools[(stopped+1)%len(pools)].StopNow()
			}()
		}
		got := pools[stopped].StopNow()
		other.Wait()
		got = append(got, also...)
		<-submitted
		p.StopAndWait()
		replaying.Store(true)
		for _, f := range got {
			f()
		}
		for i := range tasks {
			r, b := ran[i].Load(), returned[i].Load()
			if accepted[i] && r+b != 1 || !accepted[i] && r+b != 0 {
				t.Fatalf("round %d, StopNow at depth %d: task %d of depth %d (accepted %v) ran %d times and was returned %d times",
					round, stopped, i, i%len(pools), accepted[i], r, b)
			}
		}
	}
}

// TestStopNowRefusesBlockedSubmitters proves StopNow's "it stops accepting before it empties
// the queue: a submitter blocked on a full queue when StopNow is called returns ErrStopped".
// StopNow used to empty the queue first, and the room it made let the blocked submitters in:
// their Submit returned nil, and StopNow's next pass handed their tasks back.
func TestStopNowRefusesBlockedSubmitters(t *testing.T) {
	t.Parallel()
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	for range rounds {
		p := crew.New(1, crew.WithQueueSize(1))
		task, started, release := blocker()
		must(t, p.Submit(task))
		<-started
		var queuedRan atomic.Bool
		must(t, p.Submit(func() { queuedRan.Store(true) }))
		const blocked = 4
		var ran [blocked]atomic.Bool
		errs := make([]error, blocked)
		var wg sync.WaitGroup
		for i := range blocked {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.Submit(func() { ran[i].Store(true) })
			}()
		}
		waitFor(t, "the submitters to block", func() bool { return crew.BlockedSubmitters(p) == blocked })
		back := p.StopNow()
		wg.Wait()
		close(release)
		p.StopAndWait()
		for i, err := range errs {
			if !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("blocked submitter %d: Submit = %v, want ErrStopped", i, err)
			}
			if ran[i].Load() {
				t.Fatalf("the task of blocked submitter %d ran", i)
			}
		}
		if len(back) != 1 || queuedRan.Load() {
			t.Fatalf("StopNow handed back %d tasks (the queued one ran: %v), want the one queued", len(back), queuedRan.Load())
		}
		if s := p.Stats(); s.Returned != 1 || s.Accepted != 2 {
			t.Fatalf("Stats %+v, want 2 accepted and 1 returned", s)
		}
	}
}

// TestStopNowKeepsAKeysOrder proves StopNow's "a key whose queued tasks StopNow hands back
// runs none of its tasks afterwards": with one submitter cycling over 4 keys, the tasks of
// each key that ran are the first ones it accepted, and the rest were handed back. StopNow
// used to empty the queue before it stopped, and a submit in between made a new turn for a
// key whose earlier tasks it then handed back, which a worker started (about one round in
// twenty).
func TestStopNowKeepsAKeysOrder(t *testing.T) {
	t.Parallel()
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	const keys = 4
	for round := range rounds {
		p := crew.New(1)
		k := crew.NewKeyed[int](p)
		var ran [keys][]*atomic.Bool // ran[key][i]: the key's i-th accepted task ran
		var accepted [keys]int
		stop := make(chan struct{})
		submitted := goRun(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := i % keys
				done := new(atomic.Bool)
				if k.Submit(key, func() { done.Store(true) }) == nil {
					ran[key] = append(ran[key], done)
					accepted[key]++
				}
			}
		})
		time.Sleep(2 * time.Millisecond)
		back := p.StopNow()
		close(stop)
		<-submitted
		p.StopAndWait()
		returned := 0
		for key := range keys {
			r := 0
			for r < accepted[key] && ran[key][r].Load() {
				r++
			}
			for i := r; i < accepted[key]; i++ {
				if ran[key][i].Load() {
					t.Fatalf("round %d, key %d: task %d ran after task %d was handed back", round, key, i, r)
				}
			}
			returned += accepted[key] - r
		}
		if returned != len(back) {
			t.Fatalf("round %d: %d accepted tasks never ran, StopNow handed back %d", round, returned, len(back))
		}
		if s := k.Stats(); s.Returned != uint64(len(back)) {
			t.Fatalf("round %d: Keyed.Stats %+v, want Returned %d", round, s, len(back))
		}
	}
}

// TestStopNowCountsReturnedTasksInStats proves Stats.Returned: every task StopNow takes out
// counts in the Returned of the pool it was submitted to, plain or not, a sub-pool's included,
// and once idle every pool's counters add up: Accepted = Completed + Panicked + Discarded +
// Returned + Skipped.
func TestStopNowCountsReturnedTasksInStats(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	sub := p.Sub(1)
	subsub := sub.Sub(1)
	task, started, release := blocker()
	must(t, p.Submit(task))
	<-started
	for range 3 {
		must(t, p.Submit(func() { t.Error("a returned task ran") }))
		must(t, sub.Submit(func() { t.Error("a returned task ran") }))
		must(t, subsub.Submit(func() { t.Error("a returned task ran") }))
	}
	f := crew.Go(p, func() (int, error) { return 1, nil })
	g, _ := sub.Group(context.Background())
	g.Go(func(context.Context) error { return nil })
	back := p.StopNow()
	close(release)
	p.StopAndWait()
	if len(back) != 9 {
		t.Fatalf("StopNow handed back %d plain tasks, want 9", len(back))
	}
	if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("future: %v, want ErrStopped", err)
	}
	if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("group: %v, want ErrStopped", err)
	}
	for _, c := range []struct {
		name     string
		p        *crew.Pool
		returned uint64 // at least: its own tasks (a parent also counts its sub-pools' workers)
	}{{"root", p, 4}, {"sub", sub, 4}, {"subsub", subsub, 3}} {
		s := c.p.Stats()
		if s.Returned < c.returned {
			t.Fatalf("%s: Stats %+v, want at least %d returned", c.name, s, c.returned)
		}
		idleIdentity(t, c.name, s)
	}
	if s := subsub.Stats(); s.Returned != 3 {
		t.Fatalf("subsub: Stats %+v, want 3 returned", s)
	}
}

// TestStopNowOfAParentRefusesTheBlockedSubmittersOfItsSubPools: a submitter blocked on a
// sub-pool's full queue when its parent's (or grandparent's) StopNow is called returns
// ErrStopped, and its task neither runs nor comes back, even when the task that holds the
// sub-pool's slot ends while StopNow runs, having seen a pool above stop: the pools of the
// tree stop one after another, and that task's end would otherwise move the submitter into
// the room it made, after which StopNow handed its task back.
func TestStopNowOfAParentRefusesTheBlockedSubmittersOfItsSubPools(t *testing.T) {
	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprintf("depth=%d", depth), func(t *testing.T) {
			for round := range 300 {
				root := crew.New(2)
				above := root // the pool whose Stopped the running task watches
				for range depth - 1 {
					above = above.Sub(2)
				}
				leaf := above.Sub(1, crew.WithQueueSize(1))
				started := make(chan struct{})
				must(t, leaf.Submit(func() {
					close(started)
					for !above.Stopped() {
						runtime.Gosched()
					}
				}))
				<-started
				var queuedRan, blockedRan atomic.Int32
				// The queued task holds the slot once it starts, so that a blocked task
				// moved into the queue would still be queued when StopNow empties it.
				must(t, leaf.Submit(func() {
					for !leaf.Stopped() {
						runtime.Gosched()
					}
					queuedRan.Add(1)
				}))
				errc := make(chan error, 1)
				go func() { errc <- leaf.Submit(func() { blockedRan.Add(1) }) }()
				waitFor(t, "the submitter to block", func() bool { return crew.BlockedSubmitters(leaf) == 1 })
				back := root.StopNow()
				err := <-errc
				root.StopAndWait()
				if !errors.Is(err, crew.ErrStopped) {
					t.Fatalf("round %d: the submitter blocked when StopNow was called got %v, want ErrStopped (%d handed back, the blocked task ran %d times)",
						round, err, len(back), blockedRan.Load())
				}
				if queuedRan.Load()+int32(len(back)) != 1 || blockedRan.Load() != 0 {
					t.Fatalf("round %d: the queued task ran %d times and %d tasks came back; the refused task ran %d times",
						round, queuedRan.Load(), len(back), blockedRan.Load())
				}
			}
		})
	}
}
