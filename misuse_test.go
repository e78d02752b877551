package crew_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/crewgo/crew"
)

// TestMisusePanicsNamingTheCall: every method of a nil *Pool or *FuncPool, and every call
// that takes a context given a nil one, panics with a message that names the call, instead of
// a nil pointer dereference or the standard library's message about a nil parent context.
func TestMisusePanicsNamingTheCall(t *testing.T) {
	var np *crew.Pool
	var nf *crew.FuncPool[int]
	p := crew.New(2)
	defer p.StopAndWait()
	f := crew.NewFunc(2, func(int) {})
	defer f.StopAndWait()
	var nilCtx context.Context // a nil context.Context, as a caller might pass by mistake
	task := func() {}
	ints := func(yield func(int) bool) { yield(1) }
	one := func(context.Context, int) (int, error) { return 1, nil }
	for _, tc := range []struct {
		name      string
		call      func()
		wantPanic string
	}{
		{"nil Pool Submit", func() { np.Submit(task) }, "crew: Submit: nil *Pool"},
		{"nil Pool Submit nil task", func() { np.Submit(nil) }, "crew: Submit: nil *Pool"},
		{"nil Pool TrySubmit", func() { np.TrySubmit(task) }, "crew: TrySubmit: nil *Pool"},
		{"nil Pool SubmitContext", func() { np.SubmitContext(context.Background(), task) }, "crew: SubmitContext: nil *Pool"},
		{"nil Pool SubmitN", func() { np.SubmitN(1, task) }, "crew: SubmitN: nil *Pool"},
		{"nil Pool TrySubmitN", func() { np.TrySubmitN(1, task) }, "crew: TrySubmitN: nil *Pool"},
		{"nil Pool SubmitNContext", func() { np.SubmitNContext(context.Background(), 1, task) }, "crew: SubmitNContext: nil *Pool"},
		{"nil Pool Wait", func() { np.Wait() }, "crew: Wait: nil *Pool"},
		{"nil Pool Stop", func() { np.Stop() }, "crew: Stop: nil *Pool"},
		{"nil Pool StopAndWait", func() { np.StopAndWait() }, "crew: StopAndWait: nil *Pool"},
		{"nil Pool StopNow", func() { np.StopNow() }, "crew: StopNow: nil *Pool"},
		{"nil Pool Shutdown", func() { np.Shutdown(context.Background()) }, "crew: Shutdown: nil *Pool"},
		{"nil Pool Resize", func() { np.Resize(1) }, "crew: Resize: nil *Pool"},
		{"nil Pool Stats", func() { np.Stats() }, "crew: Stats: nil *Pool"},
		{"nil Pool Sub", func() { np.Sub(1) }, "crew: Sub: nil *Pool"},
		{"nil Pool Stopped", func() { np.Stopped() }, "crew: Stopped: nil *Pool"},
		{"nil Pool QueueSize", func() { np.QueueSize() }, "crew: QueueSize: nil *Pool"},
		{"nil Pool Overflow", func() { np.Overflow() }, "crew: Overflow: nil *Pool"},
		{"nil Pool MinWorkers", func() { np.MinWorkers() }, "crew: MinWorkers: nil *Pool"},
		{"nil Pool IdleTimeout", func() { np.IdleTimeout() }, "crew: IdleTimeout: nil *Pool"},
		{"nil Pool Pause", func() { np.Pause() }, "crew: Pause: nil *Pool"},
		{"nil Pool PauseAndWait", func() { np.PauseAndWait(context.Background()) }, "crew: PauseAndWait: nil *Pool"},
		{"nil Pool Resume", func() { np.Resume() }, "crew: Resume: nil *Pool"},
		{"nil Pool SetRateLimit", func() { np.SetRateLimit(1, 1) }, "crew: SetRateLimit: nil *Pool"},
		{"nil Pool Group", func() { np.Group(context.Background()) }, "crew: Group: nil *Pool"},
		{"nil Pool GroupAll", func() { np.GroupAll(context.Background()) }, "crew: GroupAll: nil *Pool"},

		{"nil FuncPool Invoke", func() { nf.Invoke(1) }, "crew: Invoke: nil *FuncPool"},
		{"nil FuncPool TryInvoke", func() { nf.TryInvoke(1) }, "crew: TryInvoke: nil *FuncPool"},
		{"nil FuncPool InvokeContext", func() { nf.InvokeContext(context.Background(), 1) }, "crew: InvokeContext: nil *FuncPool"},
		{"nil FuncPool Wait", func() { nf.Wait() }, "crew: Wait: nil *FuncPool"},
		{"nil FuncPool Stop", func() { nf.Stop() }, "crew: Stop: nil *FuncPool"},
		{"nil FuncPool StopAndWait", func() { nf.StopAndWait() }, "crew: StopAndWait: nil *FuncPool"},
		{"nil FuncPool StopNow", func() { nf.StopNow() }, "crew: StopNow: nil *FuncPool"},
		{"nil FuncPool Shutdown", func() { nf.Shutdown(context.Background()) }, "crew: Shutdown: nil *FuncPool"},
		{"nil FuncPool Resize", func() { nf.Resize(1) }, "crew: Resize: nil *FuncPool"},
		{"nil FuncPool Stats", func() { nf.Stats() }, "crew: Stats: nil *FuncPool"},
		{"nil FuncPool Stopped", func() { nf.Stopped() }, "crew: Stopped: nil *FuncPool"},
		{"nil FuncPool QueueSize", func() { nf.QueueSize() }, "crew: QueueSize: nil *FuncPool"},
		{"nil FuncPool Overflow", func() { nf.Overflow() }, "crew: Overflow: nil *FuncPool"},
		{"nil FuncPool MinWorkers", func() { nf.MinWorkers() }, "crew: MinWorkers: nil *FuncPool"},
		{"nil FuncPool IdleTimeout", func() { nf.IdleTimeout() }, "crew: IdleTimeout: nil *FuncPool"},
		{"nil FuncPool Pause", func() { nf.Pause() }, "crew: Pause: nil *FuncPool"},
		{"nil FuncPool PauseAndWait", func() { nf.PauseAndWait(context.Background()) }, "crew: PauseAndWait: nil *FuncPool"},
		{"nil FuncPool Resume", func() { nf.Resume() }, "crew: Resume: nil *FuncPool"},
		{"nil FuncPool SetRateLimit", func() { nf.SetRateLimit(1, 1) }, "crew: SetRateLimit: nil *FuncPool"},

		{"nil pool Go", func() { crew.Go(np, func() (int, error) { return 1, nil }) }, "crew: Go: p must not be nil"},
		{"nil pool Map", func() { crew.Map(context.Background(), np, []int{1}, one) }, "crew: Map: p must not be nil"},
		{"nil pool ForEach", func() {
			crew.ForEach(context.Background(), np, ints, func(context.Context, int) error { return nil })
		}, "crew: ForEach: p must not be nil"},
		{"nil pool MapSeq", func() { crew.MapSeq(context.Background(), np, ints, one) }, "crew: MapSeq: p must not be nil"},
		{"nil pool NewResults", func() { crew.NewResults[int](context.Background(), np) }, "crew: NewResults: p must not be nil"},
		{"nil pool NewKeyed", func() { crew.NewKeyed[int](np) }, "crew: NewKeyed: p must not be nil"},
		{"nil fn NewFunc", func() { crew.NewFunc[int](1, nil) }, "crew: NewFunc: fn must not be nil"},

		{"nil ctx SubmitContext", func() { p.SubmitContext(nilCtx, task) }, "crew: SubmitContext: ctx must not be nil"},
		{"nil ctx SubmitContext nil task", func() { p.SubmitContext(nilCtx, nil) }, "crew: SubmitContext: ctx must not be nil"},
		{"nil ctx SubmitNContext nil task", func() { p.SubmitNContext(nilCtx, 2, nil) }, "crew: SubmitNContext: ctx must not be nil"},
		{"nil ctx SubmitNContext", func() { p.SubmitNContext(nilCtx, 1, task) }, "crew: SubmitNContext: ctx must not be nil"},
		{"nil ctx InvokeContext", func() { f.InvokeContext(nilCtx, 1) }, "crew: InvokeContext: ctx must not be nil"},
		{"nil ctx Shutdown", func() { p.Shutdown(nilCtx) }, "crew: Shutdown: ctx must not be nil"},
		{"nil ctx FuncPool Shutdown", func() { f.Shutdown(nilCtx) }, "crew: Shutdown: ctx must not be nil"},
		{"nil ctx PauseAndWait", func() { p.PauseAndWait(nilCtx) }, "crew: PauseAndWait: ctx must not be nil"},
		{"nil ctx FuncPool PauseAndWait", func() { f.PauseAndWait(nilCtx) }, "crew: PauseAndWait: ctx must not be nil"},
		{"nil ctx Group", func() { p.Group(nilCtx) }, "crew: Group: ctx must not be nil"},
		{"nil ctx GroupAll", func() { p.GroupAll(nilCtx) }, "crew: GroupAll: ctx must not be nil"},
		{"nil ctx NewResults", func() { crew.NewResults[int](nilCtx, p) }, "crew: NewResults: ctx must not be nil"},
		{"nil ctx Map", func() { crew.Map(nilCtx, p, []int{1}, one) }, "crew: Map: ctx must not be nil"},
		{"nil ctx ForEach", func() {
			crew.ForEach(nilCtx, p, ints, func(context.Context, int) error { return nil })
		}, "crew: ForEach: ctx must not be nil"},
		{"nil ctx MapSeq", func() { crew.MapSeq(nilCtx, p, ints, one) }, "crew: MapSeq: ctx must not be nil"},
		{"nil ctx MapSeqUnordered", func() { crew.MapSeqUnordered(nilCtx, p, ints, one) }, "crew: MapSeqUnordered: ctx must not be nil"},
		{"nil ctx Keyed.SubmitContext", func() { crew.NewKeyed[int](p).SubmitContext(nilCtx, 1, task) }, "crew: Keyed.SubmitContext: ctx must not be nil"},
		{"nil ctx WithContext", func() { crew.New(1, crew.WithContext(nilCtx)) }, "crew: WithContext: ctx must not be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := func() (v any) {
				defer func() { v = recover() }()
				tc.call()
				return nil
			}()
			if fmt.Sprint(got) != tc.wantPanic {
				t.Errorf("panic %v, want %q", got, tc.wantPanic)
			}
		})
	}
	// The live pools still work after the refused calls.
	if err := p.Submit(task); err != nil || !f.TryInvoke(1) {
		t.Errorf("the pools refuse work after the misuse: Submit %v", err)
	}
}
