// Command consumer is what a user of crew writes first: a pool exported through both
// integrations. scripts/test.sh builds and runs it in a fresh module that gets crew, prom and
// otel with go get, as tagged versions, to check that they install.
package main

import (
	"fmt"
	"os"

	"github.com/crewgo/crew"
	crewotel "github.com/crewgo/crew/otel"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric/noop"
)

func main() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("jobs", pool))
	obs, err := crewotel.Observe(noop.NewMeterProvider().Meter("consumer"), "jobs", pool)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer obs.Unregister()

	for range 10 {
		pool.Submit(func() {})
	}
	pool.Wait()
	families, err := reg.Gather()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("completed %d tasks, %d metric families\n", pool.Stats().Completed, len(families))
}
