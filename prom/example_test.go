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

func ExampleStatsFunc() {
	a, b := crew.New(2), crew.New(2)
	defer a.StopAndWait()
	defer b.StopAndWait()

	// One collector for two pools: their Stats added up.
	both := prom.StatsFunc(func() crew.Stats {
		x, y := a.Stats(), b.Stats()
		return crew.Stats{
			MaxWorkers: x.MaxWorkers + y.MaxWorkers,
			Accepted:   x.Accepted + y.Accepted,
			Completed:  x.Completed + y.Completed,
		}
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("both", both))

	for _, p := range []*crew.Pool{a, b, b} {
		_ = p.Submit(func() {})
	}
	a.Wait()
	b.Wait()

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "crew_tasks_completed_total" {
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// crew_tasks_completed_total 3
}
