package crewotel_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/crewgo/crew"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestWithSpansStartsASpanPerFunctionUnderTheSubmittersSpan: each function of a group,
// Results, Map, ForEach and MapSeq gets a crew.task span, a child of the span in the
// context the call was made from and the parent of the function's own spans; an error or a
// panic sets its status to Error. Plain tasks get none, and without WithSpans nothing does.
func TestWithSpansStartsASpanPerFunctionUnderTheSubmittersSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	meter, _ := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "traced", crewotel.WithSpans(tp))
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(2, crew.WithHooks(hooks))
	defer p.StopAndWait()

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	inner := func(ctx context.Context) error {
		_, span := tp.Tracer("test").Start(ctx, "inner")
		span.End()
		return nil
	}
	errPlanned := errors.New("planned")
	g, _ := p.Group(ctx)
	g.Go(inner)
	g.Go(func(context.Context) error { return errPlanned })
	if err := g.Wait(); !errors.Is(err, errPlanned) {
		t.Fatalf("Group.Wait = %v", err)
	}
	ga, _ := p.GroupAll(ctx)
	ga.Go(func(context.Context) error { panic("planned panic") })
	if err := ga.Wait(); err == nil {
		t.Fatal("GroupAll.Wait = nil, want the panic")
	}
	r, _ := crew.NewResults[int](ctx, p)
	r.Go(func(ctx context.Context) (int, error) { return 0, inner(ctx) })
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	in := []int{1, 2}
	if _, err := crew.Map(ctx, p, in, func(ctx context.Context, _ int) (int, error) { return 0, inner(ctx) }); err != nil {
		t.Fatal(err)
	}
	if err := crew.ForEach(ctx, p, slices.Values(in), func(ctx context.Context, _ int) error { return inner(ctx) }); err != nil {
		t.Fatal(err)
	}
	for _, err := range crew.MapSeq(ctx, p, slices.Values(in), func(ctx context.Context, _ int) (int, error) { return 0, inner(ctx) }) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	request.End()

	tasks := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var inners []sdktrace.ReadOnlySpan
	var failed int
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "crew.task":
			tasks[s.SpanContext().SpanID()] = s
			if s.Parent().SpanID() != request.SpanContext().SpanID() {
				t.Errorf("a crew.task span's parent is %v, want the request's span", s.Parent().SpanID())
			}
			if pool := attr(s, "pool"); pool != "traced" {
				t.Errorf("a crew.task span has pool=%q", pool)
			}
			if s.Status().Code == codes.Error {
				failed++
			}
		case "inner":
			inners = append(inners, s)
		}
	}
	const functions = 10 // 2 + 1 + 1 + 2 + 2 + 2
	if len(tasks) != functions || len(inners) != functions-2 || failed != 2 {
		t.Fatalf("%d crew.task spans (%d failed) and %d inner ones; want %d (2 failed) and %d",
			len(tasks), failed, len(inners), functions, functions-2)
	}
	for _, s := range inners {
		if _, ok := tasks[s.Parent().SpanID()]; !ok {
			t.Errorf("an inner span's parent is not a crew.task span")
		}
	}
}

// attr returns the value of the attribute key of s, or "".
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.AsString()
		}
	}
	return ""
}

func TestHooksStartNoSpanWithoutWithSpans(t *testing.T) {
	meter, _ := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "untraced")
	if err != nil {
		t.Fatal(err)
	}
	if hooks.Context != nil {
		t.Fatal("Hooks without WithSpans set a Context hook")
	}
}

func TestWithSpansPanicsOnNilProvider(t *testing.T) {
	defer func() {
		if v := recover(); v != "crewotel: WithSpans: tp must not be nil" {
			t.Fatalf("panic %v", v)
		}
	}()
	crewotel.WithSpans(nil)
}
