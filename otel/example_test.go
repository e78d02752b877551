package crewotel_test

import (
	"context"
	"fmt"

	"github.com/crewgo/crew"
	crewotel "github.com/crewgo/crew/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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
