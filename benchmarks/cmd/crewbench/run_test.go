package main

import (
	"slices"
	"testing"
)

// TestEachPassTurnsTheOrderOfTheContendersByOnePlace checks rotate: in pass p each suite's
// contenders run in their order turned by p places, one suite after the other, so that over
// as many passes as contenders each one runs once in each place.
func TestEachPassTurnsTheOrderOfTheContendersByOnePlace(t *testing.T) {
	o := options{contenders: []string{"crew", "ants", "pond"}}
	for _, name := range []string{"taskq", "pools"} {
		o.suites = append(o.suites, suiteOptions(t, name).suites...)
	}
	jobs := plan(o)
	want := [][]string{
		{"crew", "ants", "pond"},
		{"ants", "pond", "crew"},
		{"pond", "crew", "ants"},
		{"crew", "ants", "pond"},
	}
	for pass, order := range want {
		got := rotate(jobs, pass)
		if len(got) != len(jobs) {
			t.Fatalf("pass %d: %d jobs, want %d", pass, len(got), len(jobs))
		}
		for i, j := range got {
			s, c := o.suites[i/len(order)], order[i%len(order)]
			if j.suite.name != s.name || j.contender != c {
				t.Errorf("pass %d, job %d: %s on %s, want %s on %s", pass, i, j.suite.name, j.contender, s.name, c)
			}
		}
	}
	if !slices.EqualFunc(rotate(jobs, 0), jobs, func(a, b job) bool {
		return a.suite.name == b.suite.name && a.contender == b.contender
	}) {
		t.Error("pass 0 is not plan's order")
	}
}
