package adaptive

import (
	"container/heap"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew/internal/racetest"
)

// sim is a pool with a backlog of tasks in front of a resource of slots slots, each task
// holding a slot for latency (± jitter) and waiting first in, first out for one while all
// are taken, all on a virtual clock: run times and the Limit's clock are exact and the run is
// the same every time. The pool starts a task whenever fewer than its limit run (and fewer
// than offered, when offered is above 0: an application that has no more to give).
type sim struct {
	t       *testing.T
	l       *Limit
	now     time.Duration
	limit   int
	floor   int
	ceiling int
	running int
	offered int

	slots   int
	busy    int
	latency time.Duration
	jitter  float64
	rnd     *rand.Rand
	queue   []time.Duration // start times of tasks waiting for a slot
	events  events

	completed int
	runSum    time.Duration
	changes   int
	trace     []point // the limit after each change
}

type point struct {
	at      time.Duration
	limit   int
	probing bool // set by a probe: the limit is below the resource's capacity on purpose
}

type event struct {
	at, started time.Duration
}

type events []event

func (e events) Len() int           { return len(e) }
func (e events) Less(i, j int) bool { return e[i].at < e[j].at }
func (e events) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)        { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// newSim returns a sim whose Limit has floor and ceiling, in front of slots slots of latency.
func newSim(t *testing.T, floor, ceiling, slots int, latency time.Duration) *sim {
	s := &sim{t: t, floor: floor, ceiling: ceiling, slots: slots, latency: latency,
		rnd: rand.New(rand.NewPCG(1, 2))}
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s.l = New(Config{
		Floor: floor, Ceiling: ceiling,
		Resize:  s.resize,
		Running: func() int { return s.running },
		Now:     func() time.Time { return epoch.Add(s.now) },
	})
	s.limit = ceiling
	return s
}

func (s *sim) resize(n int) {
	s.t.Helper()
	if n < min(s.floor, s.ceiling) || n > s.ceiling {
		s.t.Fatalf("at %v: limit set to %d, outside [%d, %d]", s.now, n, s.floor, s.ceiling)
	}
	s.limit = n
	s.changes++
	s.trace = append(s.trace, point{s.now, n, s.l.probing})
}

// setCeiling moves the ceiling as the pool's Resize would.
func (s *sim) setCeiling(n int) {
	s.ceiling = max(1, n)
	s.l.SetCeiling(n)
}

// setSlots changes the resource's capacity; waiting tasks take the slots it adds.
func (s *sim) setSlots(n int) {
	s.slots = n
	for s.busy < s.slots && len(s.queue) > 0 {
		started := s.queue[0]
		s.queue = s.queue[1:]
		s.serve(started)
	}
}

func (s *sim) serve(started time.Duration) {
	s.busy++
	d := s.latency
	if s.jitter > 0 {
		d = time.Duration(float64(d) * (1 + s.jitter*(2*s.rnd.Float64()-1)))
	}
	heap.Push(&s.events, event{at: s.now + d, started: started})
}

// fill starts tasks while the limit (and the application) allow.
func (s *sim) fill() {
	for s.running < s.limit && (s.offered == 0 || s.running < s.offered) {
		s.running++
		if s.busy < s.slots {
			s.serve(s.now)
		} else {
			s.queue = append(s.queue, s.now)
		}
	}
}

// run runs the sim until the clock reads until, and returns the tasks completed and their
// mean run time over that stretch.
func (s *sim) run(until time.Duration) (completed int, mean time.Duration) {
	c0, r0 := s.completed, s.runSum
	for {
		s.fill()
		if len(s.events) == 0 || s.events[0].at > until {
			s.now = until
			break
		}
		e := heap.Pop(&s.events).(event)
		s.now = e.at
		s.running--
		s.busy--
		if s.busy < s.slots && len(s.queue) > 0 {
			started := s.queue[0]
			s.queue = s.queue[1:]
			s.serve(started)
		}
		run := s.now - e.started
		s.completed++
		s.runSum += run
		s.l.Observe(run)
		if got := s.l.Limit(); got != s.limit {
			s.t.Fatalf("at %v: Limit() = %d, but the last Resize set %d", s.now, got, s.limit)
		}
	}
	n := s.completed - c0
	if n == 0 {
		return 0, 0
	}
	return n, (s.runSum - r0) / time.Duration(n)
}

// settled returns when the limit last entered [lo, hi] and stayed there until the clock's
// reading now, or -1 if it is outside now. The limits a probe sets below the band do not
// count as leaving it: probes halve the limit for a window or two on purpose, now and then
// (TestProbesAreBriefAndRare bounds them).
func (s *sim) settled(lo, hi int, since time.Duration) time.Duration {
	if s.limit < lo || s.limit > hi {
		return -1
	}
	at := since
	for _, p := range s.trace {
		if p.probing && p.limit < lo {
			continue
		}
		if p.at >= since && (p.limit < lo || p.limit > hi) {
			at = -1
		} else if p.at >= since && at < 0 {
			at = p.at
		}
	}
	if at < 0 { // the last point out of range was followed by points in range only
		return -1
	}
	return at
}

// TestLimitSettlesAboveTheCapacityOfAQueueingResource: a pool started at a ceiling of 256
// in front of 16 slots of 2 ms settles between 16 and 32 within 5 s, keeps the resource
// busy (throughput at least 90% of 16 per 2 ms) at a mean run time of at most 1.5 × 2 ms;
// when the resource grows to 64 slots, the limit follows to between 64 and 128 within 5 s.
func TestLimitSettlesAboveTheCapacityOfAQueueingResource(t *testing.T) {
	for _, jitter := range []float64{0, 0.05, 0.2} {
		s := newSim(t, 1, 256, 16, 2*time.Millisecond)
		s.jitter = jitter
		s.run(5 * time.Second)
		at := s.settled(16, 32, 0)
		if at < 0 {
			t.Fatalf("jitter %v: limit %d after 5 s, want 16 to 32; trace %v", jitter, s.limit, s.trace)
		}
		n, mean := s.run(10 * time.Second)
		if rate, want := float64(n)/5, 0.9*16/0.002; rate < want {
			t.Errorf("jitter %v: %.0f tasks/s from 5 s to 10 s, want at least %.0f", jitter, rate, want)
		}
		if mean > 3*time.Millisecond {
			t.Errorf("jitter %v: mean run time %v, want at most 3ms", jitter, mean)
		}
		if s.settled(16, 32, 0) != at {
			t.Errorf("jitter %v: limit left 16 to 32 after settling at %v: %v", jitter, at, s.trace)
		}
		t.Logf("jitter %v: settled at %v, %d tasks/s, mean run %v, limit %d", jitter, at, n/5, mean, s.limit)

		s.setSlots(64)
		s.run(15 * time.Second)
		at = s.settled(64, 128, 10*time.Second)
		if at < 0 || at > 15*time.Second {
			t.Fatalf("jitter %v: limit %d 5 s after the resource grew to 64, want 64 to 128; trace %v", jitter, s.limit, s.trace)
		}
		n, mean = s.run(20 * time.Second)
		if rate, want := float64(n)/5, 0.9*64/0.002; rate < want {
			t.Errorf("jitter %v: %.0f tasks/s at 64 slots, want at least %.0f", jitter, rate, want)
		}
		t.Logf("jitter %v: followed at %v, %d tasks/s, mean run %v, limit %d", jitter, at-10*time.Second, n/5, mean, s.limit)
	}
}

// TestLimitFollowsAShrinkingResource: from 64 slots to 8, the limit comes down to 8 to 16.
func TestLimitFollowsAShrinkingResource(t *testing.T) {
	s := newSim(t, 1, 1024, 64, time.Millisecond)
	s.run(5 * time.Second)
	s.setSlots(8)
	s.run(10 * time.Second)
	if at := s.settled(8, 16, 5*time.Second); at < 0 {
		t.Fatalf("limit %d 5 s after the resource shrank to 8 slots, want 8 to 16; trace %v", s.limit, s.trace)
	}
}

// TestLimitRelearnsASlowerResource: when every call takes twice as long for good (the same
// slots), the limit stays above the slots rather than falling to the floor.
func TestLimitRelearnsASlowerResource(t *testing.T) {
	s := newSim(t, 1, 256, 16, 2*time.Millisecond)
	s.run(5 * time.Second)
	s.latency = 4 * time.Millisecond
	s.run(10 * time.Second)
	if at := s.settled(16, 32, 5*time.Second); at < 0 || at > 8*time.Second {
		t.Fatalf("limit %d after the resource slowed to 4 ms, want back to 16 to 32 within 3 s (settled at %v); trace %v",
			s.limit, at, s.trace)
	}
	n, _ := s.run(15 * time.Second)
	if rate, want := float64(n)/5, 0.9*16/0.004; rate < want {
		t.Errorf("%.0f tasks/s at 4 ms, want at least %.0f", rate, want)
	}
}

// TestLimitDoesNotShrinkBelowWhatTheApplicationUses: an application with 10 tasks in flight
// in front of 64 slots is never held back, and the limit stays at the ceiling it started at.
func TestLimitDoesNotShrinkBelowWhatTheApplicationUses(t *testing.T) {
	s := newSim(t, 1, 256, 64, 2*time.Millisecond)
	s.offered = 10
	n, _ := s.run(5 * time.Second)
	if s.limit < 10 {
		t.Fatalf("limit %d with 10 tasks offered and 64 slots; trace %v", s.limit, s.trace)
	}
	if rate, want := float64(n)/5, 0.95*10/0.002; rate < want {
		t.Errorf("%.0f tasks/s, want at least %.0f", rate, want)
	}
}

// TestLimitStaysHighWhenRunTimesDoNotGrow: tasks whose run time does not depend on how many
// run (a resource with more slots than the ceiling) keep the limit at the ceiling, whatever
// the floor.
func TestLimitStaysHighWhenRunTimesDoNotGrow(t *testing.T) {
	for _, floor := range []int{1, 100} {
		s := newSim(t, floor, 200, 1000, 10*time.Millisecond)
		s.jitter = 0.3
		s.run(5 * time.Second)
		lowest := s.ceiling
		for _, p := range s.trace {
			if p.at > time.Second && p.limit < lowest {
				lowest = p.limit
			}
		}
		// Probes halve the tasks in flight for a window now and then.
		if s.limit != 200 || lowest < 90 {
			t.Errorf("floor %d: limit %d, lowest after the first second %d, want 200 and at least 90", floor, s.limit, lowest)
		}
	}
}

// TestLimitStaysBetweenFloorAndCeiling drives the Limit through resources that change size
// and speed at random and ceilings moved at random, on a floor of 1 to 20: every limit it
// sets is within the floor and the ceiling of the moment (sim.resize fails the test
// otherwise), a ceiling below the limit takes effect at once, and it changes the limit at
// most once per minWindow completions.
func TestLimitStaysBetweenFloorAndCeiling(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 8 {
		floor := 1 + r.IntN(20)
		ceiling := floor + r.IntN(300)
		s := newSim(t, floor, ceiling, 1+r.IntN(100), time.Duration(1+r.IntN(5))*time.Millisecond)
		s.jitter = r.Float64() / 2
		for step := range 12 {
			switch r.IntN(4) {
			case 0:
				s.setSlots(1 + r.IntN(200))
			case 1:
				s.latency = time.Duration(500+r.IntN(5000)) * time.Microsecond
			case 2:
				s.setCeiling(1 + r.IntN(400))
				if s.limit > s.ceiling {
					t.Fatalf("round %d: limit %d above the ceiling %d just set", round, s.limit, s.ceiling)
				}
			case 3:
				s.offered = r.IntN(3) * r.IntN(100)
			}
			s.run(time.Duration(step+1) * 200 * time.Millisecond)
		}
		if s.changes > s.completed/minWindow+1 {
			t.Errorf("round %d: %d changes of the limit in %d completions", round, s.changes, s.completed)
		}
	}
}

// TestSetCeilingLowersAtOnceAndLetsGrow: a ceiling below the limit applies at once; a higher
// one lets the limit grow to it when the resource has room.
func TestSetCeilingLowersAtOnceAndLetsGrow(t *testing.T) {
	s := newSim(t, 1, 64, 1000, time.Millisecond)
	s.run(time.Second)
	s.setCeiling(8)
	if s.limit != 8 {
		t.Fatalf("limit %d after SetCeiling(8)", s.limit)
	}
	s.setCeiling(100)
	s.run(3 * time.Second)
	if s.limit != 100 {
		t.Fatalf("limit %d after the ceiling rose to 100 with 1000 slots, want 100; trace %v", s.limit, s.trace)
	}
	s.setCeiling(0)
	if s.limit != 1 || s.l.Ceiling() != 1 {
		t.Fatalf("limit %d, ceiling %d after SetCeiling(0), want 1 and 1", s.limit, s.l.Ceiling())
	}
}

// TestWindowWithoutClockMovesNothing: completions on a clock that does not move leave the
// limit where it is.
func TestWindowWithoutClockMovesNothing(t *testing.T) {
	resized := 0
	at := time.Now()
	l := New(Config{Floor: 1, Ceiling: 10, Resize: func(int) { resized++ }, Running: func() int { return 0 },
		Now: func() time.Time { return at }})
	for range 1000 {
		l.Observe(time.Second)
	}
	if resized != 0 || l.Limit() != 10 {
		t.Fatalf("%d resizes, limit %d, want none and 10", resized, l.Limit())
	}
}

// TestProbesAreBriefAndRare: once settled in front of 16 slots of 2 ms, the limit spends
// less than 1% of the time in probes below 16, and probes at most every 32 windows.
func TestProbesAreBriefAndRare(t *testing.T) {
	s := newSim(t, 1, 256, 16, 2*time.Millisecond)
	s.jitter = 0.1
	s.run(time.Second)
	from := len(s.trace)
	s.run(21 * time.Second)
	var below time.Duration
	probes := 0
	for i := from; i < len(s.trace); i++ {
		p := s.trace[i]
		if p.limit >= 16 {
			continue
		}
		if !p.probing {
			t.Fatalf("limit %d at %v, below the resource's 16 slots outside a probe", p.limit, p.at)
		}
		end := s.now
		if i+1 < len(s.trace) {
			end = s.trace[i+1].at
		}
		if i == from || s.trace[i-1].limit >= 16 {
			probes++
		}
		below += end - p.at
	}
	if below > 200*time.Millisecond {
		t.Errorf("%v of 20 s below 16 slots, in %d probes; want less than 1%%", below, probes)
	}
	t.Logf("%d probes, %v below 16 slots in 20 s", probes, below)
}

// TestWindowsAllocateNothingOnceWarm: a Limit reuses its windows and its sorting space, so
// completions allocate nothing once the largest window has been made, whatever the limit
// does meanwhile.
func TestWindowsAllocateNothingOnceWarm(t *testing.T) {
	if racetest.Enabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	var at atomic.Int64
	l := New(Config{Floor: 1, Ceiling: 64, Resize: func(int) {}, Running: func() int { return 0 },
		Now: func() time.Time { return time.Unix(0, at.Add(int64(time.Millisecond))) }})
	observe := func() {
		for i := range 4096 {
			l.Observe(time.Duration(1+i%7) * time.Millisecond)
		}
	}
	l.SetCeiling(64)
	observe() // every window size the limit reaches is made once
	if n := testing.AllocsPerRun(10, observe); n != 0 {
		t.Fatalf("%v allocations per 4096 completions once warm, want 0", n)
	}
}
