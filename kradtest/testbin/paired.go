package testbin

import (
	"math"
	"slices"
	"testing"
	"time"
)

// PairedTimes runs baseline and krad one after the other b.N times, taking turns at going first,
// and reports the median time of each (baseline-ms, krad-ms) and the geometric mean of their
// ratios, krad ÷ baseline, pair by pair (krad/baseline: see GeoMean; give it an even b.N, so that
// each goes first as often). Each returns the time of its own op, so that it
// can do untimed work before and after it. Other work on the machine moves a run's figures by
// more than the goals' margins; two ops a moment apart see nearly the same load, so the pairs'
// ratio is the figure the goals are judged on. ns/op is a pair's time. after, when not nil, runs
// after each pair, untimed. Each pair's times are logged (go test -v shows them), so that a
// reader can see an order effect, or one pair that moved the figure.
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
		first := "baseline"
		if i%2 == 1 {
			first = "krad"
		}
		b.Logf("pair %d (%s first): baseline %v, krad %v, krad/baseline %.2f", i+1, first, db.Round(time.Millisecond), dk.Round(time.Millisecond), ratios[len(ratios)-1])
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
	b.ReportMetric(GeoMean(ratios), "krad/baseline")
}

// GeoMean is the geometric mean of x, positive values. It is the pairs' ratio PairedTimes
// reports: when whichever op goes second in a pair is slowed (or sped) by a factor f (the first
// one's writes still reaching the disk, say), the pairs with the baseline first give r×f and
// those with krad first r÷f, whose geometric mean is r whatever f is; their median, or their
// mean, is not (on this machine's disk f reached 3 or more for checkouts of the Go source tree,
// and the median of such pairs read 2.5x with both sides' median times within 10%).
func GeoMean(x []float64) float64 {
	var sum float64
	for _, v := range x {
		sum += math.Log(v)
	}
	return math.Exp(sum / float64(len(x)))
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
