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
	ms := func(d []time.Duration) []float64 {
		f := make([]float64, len(d))
		for i, x := range d {
			f[i] = float64(x) / float64(time.Millisecond)
		}
		return f
	}
	b.ReportMetric(Median(ms(tb)), "baseline-ms")
	b.ReportMetric(Median(ms(tk)), "krad-ms")
	b.ReportMetric(Median(ratios), "krad/baseline")
}

// Median is the median of x: of an even number of values, the mean of the two in the middle.
// (Taking the upper one of the two once made a run whose first op of each pair was fast and
// whose second was slow, whichever it was, read 4.4× where the two were even.)
func Median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}
