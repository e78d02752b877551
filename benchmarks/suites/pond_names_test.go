package suites

import (
	"slices"
	"testing"
)

// TestPondLoadsAreNamedByTheirSizes checks that pond's workloads keep their published names at
// their published size, and that the quick run's are named by the smaller sizes it runs, on a
// tenth of the workers, each with no more tasks than the published one.
func TestPondLoadsAreNamedByTheirSizes(t *testing.T) {
	names := func(loads []pondLoad) []string {
		var out []string
		for _, l := range loads {
			out = append(out, l.name)
		}
		return out
	}
	fullWorkers, full := pondLoads()
	if want := []string{"1u-1Mt", "100u-10Kt", "1Ku-1Kt", "10Ku-100t", "1Mu-1t"}; !slices.Equal(names(full), want) {
		t.Errorf("published workloads named %q, want %q", names(full), want)
	}

	*quick = true
	defer func() { *quick = false }()
	quickWorkers, scaled := pondLoads()
	if want := []string{"1u-100Kt", "100u-1Kt", "1Ku-10t", "10Ku-10t", "100Ku-1t"}; !slices.Equal(names(scaled), want) {
		t.Errorf("quick workloads named %q, want %q", names(scaled), want)
	}
	if !testing.Short() && quickWorkers != fullWorkers/10 {
		t.Errorf("quick run's workers = %d, want a tenth of %d", quickWorkers, fullWorkers)
	}
	for i := range full {
		if scaled[i].load.total() > full[i].load.total() || scaled[i].load.interval != full[i].load.interval {
			t.Errorf("%s: quick load %+v is not a smaller %s (%+v)", scaled[i].name, scaled[i].load, full[i].name, full[i].load)
		}
	}
}

// TestLoadNameWritesThousandsAndMillions checks the counts in workload names.
func TestLoadNameWritesThousandsAndMillions(t *testing.T) {
	for _, tc := range []struct {
		users, perUser int
		want           string
	}{
		{1, 1_000_000, "1u-1Mt"},
		{100_000, 1, "100Ku-1t"},
		{1500, 10, "1500u-10t"},
		{2_000_000, 999, "2Mu-999t"},
	} {
		if got := loadName(tc.users, tc.perUser); got != tc.want {
			t.Errorf("loadName(%d, %d) = %q, want %q", tc.users, tc.perUser, got, tc.want)
		}
	}
}
