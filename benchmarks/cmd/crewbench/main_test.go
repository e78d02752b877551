package main

import (
	"io"
	"slices"
	"strings"
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

// TestCommandLineNamesOnlyWhatDiffersFromTheDefaults checks the command a run records in
// raw.txt and the tables: the README's plain command records no -suite, though the quick run
// leaves the sweep and the adaptive suite out, and a chosen suite is named.
func TestCommandLineNamesOnlyWhatDiffersFromTheDefaults(t *testing.T) {
	for args, want := range map[string]string{
		"":                  "go run ./cmd/crewbench -count 5",
		"-full":             "go run ./cmd/crewbench -full -count 5",
		"-suite taskq":      "go run ./cmd/crewbench -count 5 -suite taskq",
		"-full -suite pond": "go run ./cmd/crewbench -full -count 5 -suite pond",
	} {
		o, err := parseFlags(strings.Fields(args), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := commandLine(o); got != want {
			t.Errorf("%q records %q, want %q", args, got, want)
		}
	}
}
