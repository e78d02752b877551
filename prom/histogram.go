package prom

import (
	"fmt"
	"math"
	"time"

	"github.com/crewgo/crew"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// nativeSchema is the schema of crew's buckets: their finite boundaries are 2^(k/8) seconds.
const nativeSchema = 3

// classicEvery is how many of crew's buckets make one classic bucket: 8 of them span a power
// of two, so neighbouring le boundaries are a factor of 2 apart and a classic histogram has
// 33 of them from a microsecond to an hour.
const classicEvery = 8

// histogramMetric builds one Prometheus histogram from h, with both native and classic
// buckets. A histogram whose buckets do not fit its counts (see crew.Histogram) is reported
// as an invalid metric, which fails the scrape with that error rather than a panic.
func histogramMetric(d *prometheus.Desc, h crew.Histogram) prometheus.Metric {
	if len(h.Counts) == 0 || len(h.Buckets) != len(h.Counts)+1 {
		return prometheus.NewInvalidMetric(d, fmt.Errorf("prom: a histogram of %d counts has %d bucket boundaries, want one more",
			len(h.Counts), len(h.Buckets)))
	}
	classic := make(map[float64]uint64)
	native := make(map[int]int64)
	var zero, cum uint64
	for i, n := range h.Counts {
		cum += n
		up := h.Buckets[i+1]
		if math.IsInf(up, 1) {
			// Beyond the last finite boundary: the native bucket just above it.
			if n > 0 {
				native[nativeIndex(h.Buckets[i])+1] += int64(n)
			}
			continue
		}
		k := nativeIndex(up)
		if i == 0 {
			zero = n // (0, first boundary]: the native zero bucket
		} else if n > 0 {
			native[k] += int64(n)
		}
		if k%classicEvery == 0 {
			classic[up] = cum
		}
	}
	c := prometheus.MustNewConstHistogram(d, h.Count, h.Sum, classic)
	nh, err := prometheus.NewConstNativeHistogram(d, h.Count, h.Sum, native, nil, zero,
		nativeSchema, h.Buckets[1], time.Time{})
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return both{classic: c, native: nh}
}

// nativeIndex returns the schema-3 bucket index whose upper boundary is b seconds.
func nativeIndex(b float64) int {
	return int(math.Round(math.Log2(b) * (1 << nativeSchema)))
}

// both is a histogram with classic buckets and native ones: Prometheus reads the native
// ones when it scrapes the protobuf format with native histograms enabled, the classic ones
// otherwise.
type both struct {
	classic, native prometheus.Metric
}

func (b both) Desc() *prometheus.Desc { return b.classic.Desc() }

func (b both) Write(out *dto.Metric) error {
	var n dto.Metric
	if err := b.native.Write(&n); err != nil {
		return err
	}
	if err := b.classic.Write(out); err != nil {
		return err
	}
	h, nh := out.Histogram, n.Histogram
	h.Schema, h.ZeroThreshold, h.ZeroCount = nh.Schema, nh.ZeroThreshold, nh.ZeroCount
	h.PositiveSpan, h.PositiveDelta = nh.PositiveSpan, nh.PositiveDelta
	return nil
}
