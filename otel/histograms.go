package crewotel

import (
	"context"
	"math"
	"time"

	"github.com/crewgo/crew"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// scale is the exponential histogram scale of crew's buckets: their finite boundaries are
// 2^(k/8) seconds, and an OpenTelemetry exponential histogram of scale 3 has its boundaries
// at the powers of 2^(2^-3).
const scale = 3

// Histograms returns a producer that reports the WaitTime and RunTime histograms of src's
// Stats, with the attribute pool=name, as the cumulative exponential histograms
// crew.task.wait.duration and crew.task.run.duration, in seconds. Give it to a reader with
// [sdkmetric.WithProducer]. Each Produce call reads one Stats snapshot; it reports nothing
// while the snapshot has no histograms (a pool built without [crew.WithLatencyHistograms]).
// It panics if name is empty, src is nil (or a nil *crew.Pool), or an option sets the "pool"
// attribute.
//
// The pool's buckets are handed on as they are, at scale 3: the zero bucket holds the
// durations up to 2^-20 s (its threshold), and the few above 2^12 s count in the bucket just
// above that boundary. The producer is safe for concurrent use and holds no goroutine.
func Histograms(name string, src StatsSource, opts ...Option) sdkmetric.Producer {
	if name == "" {
		panic("crewotel: Histograms: name must not be empty")
	}
	if isNil(src) {
		panic("crewotel: Histograms: src must not be nil")
	}
	return &producer{src: src, attrs: poolAttributes("Histograms", name, opts), start: time.Now()}
}

// producer is what Histograms returns.
type producer struct {
	src   StatsSource
	attrs attribute.Set
	start time.Time // the start of the cumulative series
}

// Produce reports the histograms of one Stats snapshot.
func (p *producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	s := p.src.Stats()
	now := time.Now()
	var ms []metricdata.Metrics
	for _, h := range []struct {
		name, desc string
		h          *crew.Histogram
	}{
		{"crew.task.wait.duration", "Time from a task's submit to its start.", s.WaitTime},
		{"crew.task.run.duration", "Time a task of the pool ran.", s.RunTime},
	} {
		if h.h == nil {
			continue
		}
		ms = append(ms, metricdata.Metrics{
			Name: h.name, Description: h.desc, Unit: "s",
			Data: metricdata.ExponentialHistogram[float64]{
				DataPoints:  []metricdata.ExponentialHistogramDataPoint[float64]{p.point(*h.h, now)},
				Temporality: metricdata.CumulativeTemporality,
			},
		})
	}
	if ms == nil {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope:   instrumentation.Scope{Name: "github.com/crewgo/crew/otel"},
		Metrics: ms,
	}}, nil
}

// point turns h into an exponential histogram data point. h's first bucket, from 0 to its
// first finite boundary, is the zero bucket; each later bucket (b/2^(1/8), b] is the
// exponential bucket of index 8·log2(b)-1, and the last one, above the last finite boundary,
// the index after.
func (p *producer) point(h crew.Histogram, now time.Time) metricdata.ExponentialHistogramDataPoint[float64] {
	dp := metricdata.ExponentialHistogramDataPoint[float64]{
		Attributes: p.attrs, StartTime: p.start, Time: now,
		Count: h.Count, Sum: h.Sum, Scale: scale,
	}
	if len(h.Counts) == 0 {
		return dp
	}
	dp.ZeroThreshold, dp.ZeroCount = h.Buckets[1], h.Counts[0]
	first, last := -1, -1
	for i := 1; i < len(h.Counts); i++ {
		if h.Counts[i] > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return dp
	}
	// Bucket i's upper boundary is h.Buckets[i+1]; for the last, +Inf, take the one below
	// and the index after it.
	index := func(i int) int32 {
		if up := h.Buckets[i+1]; !math.IsInf(up, 1) {
			return exponent(up) - 1
		}
		return exponent(h.Buckets[i])
	}
	dp.PositiveBucket.Offset = index(first)
	dp.PositiveBucket.Counts = make([]uint64, index(last)-index(first)+1)
	for i := first; i <= last; i++ {
		dp.PositiveBucket.Counts[index(i)-dp.PositiveBucket.Offset] += h.Counts[i]
	}
	return dp
}

// exponent returns k for a boundary b = 2^(k/8) seconds.
func exponent(b float64) int32 {
	return int32(math.Round(math.Log2(b) * (1 << scale)))
}
