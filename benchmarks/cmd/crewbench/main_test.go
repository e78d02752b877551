package main

import (
	"io"
	"slices"
	"testing"
)

// TestCrewIsAlwaysAddedToContenders checks that -contenders always gets crew, the reference
// of every multiple, and that the contenders keep the order of contenders.All.
func TestCrewIsAlwaysAddedToContenders(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
	}{
		{"pond,ants", []string{"crew", "ants", "pond"}},
		{"crew-func", []string{"crew", "crew-func"}},
		{"ants,crew", []string{"crew", "ants"}},
	} {
		o, err := parseFlags([]string{"-contenders", tc.list}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.contenders, tc.want) {
			t.Errorf("-contenders %s: %q, want %q", tc.list, o.contenders, tc.want)
		}
	}
}
