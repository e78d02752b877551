package crewotel_test

import (
	"context"
	"fmt"

	"github.com/crewgo/crew"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func ExampleObserve() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	p := crew.New(4)
	defer p.StopAndWait()
	reg, err := crewotel.Observe(provider.Meter("example"), "images", p)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	for range 10 {
		_ = p.Submit(func() {})
	}
	p.Wait()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch m.Name {
		case "crew.workers.max", "crew.tasks.accepted", "crew.tasks.completed":
			dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			pool, _ := dp.Attributes.Value("pool")
			fmt.Printf("%s{pool=%s} %d\n", m.Name, pool.AsString(), dp.Value)
		}
	}
	// Output:
	// crew.workers.max{pool=images} 4
	// crew.tasks.accepted{pool=images} 10
	// crew.tasks.completed{pool=images} 10
}

func ExampleHooks() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	hooks, err := crewotel.Hooks(provider.Meter("example"), "images")
	if err != nil {
		panic(err)
	}
	p := crew.New(4, crew.WithHooks(hooks))
	for range 10 {
		_ = p.Submit(func() {})
	}
	p.StopAndWait()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		h := m.Data.(metricdata.Histogram[float64])
		fmt.Printf("%s [%s] count %d\n", m.Name, m.Unit, h.DataPoints[0].Count)
	}
	// Output:
	// crew.task.wait.duration [s] count 10
	// crew.task.run.duration [s] count 10
}

func ExampleHistograms() {
	p := crew.New(4, crew.WithLatencyHistograms())
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(crewotel.Histograms("images", p)))
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	for range 10 {
		_ = p.Submit(func() {})
	}
	p.StopAndWait()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			dp := m.Data.(metricdata.ExponentialHistogram[float64]).DataPoints[0]
			fmt.Printf("%s [%s] count %d, scale %d\n", m.Name, m.Unit, dp.Count, dp.Scale)
		}
	}
	// Output:
	// crew.task.wait.duration [s] count 10, scale 3
	// crew.task.run.duration [s] count 10, scale 3
}

func ExampleWithSpans() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	hooks, err := crewotel.Hooks(noop.NewMeterProvider().Meter(""), "images", crewotel.WithSpans(tp))
	if err != nil {
		panic(err)
	}
	p := crew.New(4, crew.WithHooks(hooks))
	defer p.StopAndWait()

	// A request's span, and a group of functions working for it.
	ctx, request := tp.Tracer("example").Start(context.Background(), "request")
	g, _ := p.Group(ctx)
	for range 3 {
		g.Go(func(ctx context.Context) error { return nil })
	}
	if err := g.Wait(); err != nil {
		panic(err)
	}
	request.End()

	children := 0
	for _, s := range spans.Ended() {
		if s.Name() == "crew.task" && s.Parent().SpanID() == request.SpanContext().SpanID() {
			children++
		}
	}
	fmt.Println("crew.task spans under the request:", children)
	// Output:
	// crew.task spans under the request: 3
}
