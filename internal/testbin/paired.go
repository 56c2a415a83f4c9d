package testbin

import (
	"slices"
	"testing"
	"time"
)

// PairedTimes runs baseline and krad one after the other b.N times, taking turns at going first,
// and reports the median time of each (baseline-ms, krad-ms) and the median of their ratios,
// krad ÷ baseline, pair by pair (krad/baseline). Each returns the time of its own op, so that it
// can do untimed work before and after it. Other work on the machine moves a run's figures by
// more than the goals' margins; two ops a moment apart see nearly the same load, so the pairs'
// ratio is the figure the goals are judged on. ns/op is a pair's time. after, when not nil, runs
// after each pair, untimed.
func PairedTimes(b *testing.B, baseline, krad func(b *testing.B) time.Duration, after func()) {
	var tb, tk []time.Duration
	var ratios []float64
	for i := range b.N {
		var db, dk time.Duration
		if i%2 == 0 {
			db, dk = baseline(b), krad(b)
		} else {
			dk, db = krad(b), baseline(b)
		}
		tb, tk = append(tb, db), append(tk, dk)
		ratios = append(ratios, float64(dk)/float64(db))
		if after != nil {
			b.StopTimer()
			after()
			b.StartTimer()
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	slices.Sort(ratios)
	b.ReportMetric(median(tb), "baseline-ms")
	b.ReportMetric(median(tk), "krad-ms")
	b.ReportMetric(ratios[len(ratios)/2], "krad/baseline")
}
