package worker

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew/internal/histogram"
)

// job is a task of TestRecordsStandInForTheObserver: skip marks one that Records.Skip names.
type job struct {
	skip, panics bool
	ran          *atomic.Int32
}

// refusingObserver fails the test if the engine calls Started or Finished, which Records
// stands in for.
type refusingObserver struct{ t *testing.T }

func (o refusingObserver) Started(*job, time.Duration) bool {
	o.t.Error("Observer.Started called beside Records")
	return true
}

func (o refusingObserver) Finished(time.Duration, time.Duration, bool) {
	o.t.Error("Observer.Finished called beside Records")
}

func (refusingObserver) Discarded(*job, time.Duration) {}

// TestRecordsStandInForTheObserver guards Config.Records: the engine records the wait and the
// run of each task it observes in the histograms, Weight times each, one that panicked too,
// skips what Skip names, and calls neither Started nor Finished.
func TestRecordsStandInForTheObserver(t *testing.T) {
	const weight = 3
	wait, run := histogram.New(), histogram.New()
	e := New(Config[*job]{
		Run: func(j *job) {
			j.ran.Add(1)
			if j.panics {
				panic("job")
			}
		},
		MaxWorkers:   2,
		PanicHandler: func(any, []byte) {},
		Observer:     refusingObserver{t},
		Records:      &Records[*job]{Wait: wait, Run: run, Weight: weight, Skip: func(j *job) bool { return j.skip }},
	})
	defer stopAndWait(e)
	var ran atomic.Int32
	observed := 0
	for i := range 20 {
		j := &job{skip: i%3 == 0, panics: i%5 == 0, ran: &ran}
		if !j.skip {
			observed++
		}
		submit(t, e, j)
	}
	waitClosed(t, "Drained", e.Drained())
	if ran.Load() != 20 {
		t.Fatalf("%d tasks ran, want 20", ran.Load())
	}
	var ws, rs histogram.Snapshot
	wait.Snapshot(&ws)
	run.Snapshot(&rs)
	if want := uint64(observed * weight); ws.Count != want || rs.Count != want {
		t.Errorf("waits counted %d, runs %d, want %d each (%d tasks observed, weight %d)",
			ws.Count, rs.Count, want, observed, weight)
	}
}
