package prom_test

import (
	"fmt"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
)

func ExampleNewCollector() {
	p := crew.New(4)
	defer p.StopAndWait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("images", p))

	for range 10 {
		_ = p.Submit(func() {})
	}
	p.Wait()

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "crew_tasks_accepted_total", "crew_tasks_completed_total":
			m := mf.GetMetric()[0]
			fmt.Printf("%s{pool=%q} %v\n", mf.GetName(), m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
		case "crew_workers_max":
			m := mf.GetMetric()[0]
			fmt.Printf("%s{pool=%q} %v\n", mf.GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// crew_tasks_accepted_total{pool="images"} 10
	// crew_tasks_completed_total{pool="images"} 10
	// crew_workers_max{pool="images"} 4
}
