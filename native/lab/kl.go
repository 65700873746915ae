package lab

import (
	"math"
	"slices"
)

// logSoftmax writes log softmax(logits) into dst in float64: dst[i] = x_i − m − log Σ e^(x_j − m),
// m the largest logit.
func logSoftmax(dst []float64, logits []float32) {
	m := math.Inf(-1)
	for _, x := range logits {
		m = math.Max(m, float64(x))
	}
	var sum float64
	for _, x := range logits {
		sum += math.Exp(float64(x) - m)
	}
	lse := m + math.Log(sum)
	for i, x := range logits {
		dst[i] = float64(x) - lse
	}
}

// rowCompare compares one position's logits of the reference and of an arm.
type rowCompare struct {
	lpRef, lpArm []float64 // scratch: vocabulary-sized log-probabilities
}

func newRowCompare(vocab int) *rowCompare {
	return &rowCompare{lpRef: make([]float64, vocab), lpArm: make([]float64, vocab)}
}

// compare returns KL(P_ref ‖ P_arm) = Σ p_ref·(log p_ref − log p_arm) in nats (exactly 0 when
// the two rows are bit-identical), whether the two rows' most likely tokens agree (the lowest
// index wins a tie, in both), and −log p_arm(target) when target ≥ 0.
func (rc *rowCompare) compare(ref, arm []float32, target int32) (kl float64, top1 bool, nll float64) {
	logSoftmax(rc.lpRef, ref)
	logSoftmax(rc.lpArm, arm)
	for i, lr := range rc.lpRef {
		if lr == rc.lpArm[i] {
			continue // also skips 0·(−Inf − −Inf)
		}
		kl += math.Exp(lr) * (lr - rc.lpArm[i])
	}
	top1 = argmax(ref) == argmax(arm)
	if target >= 0 {
		nll = -rc.lpArm[target]
	}
	return max(kl, 0), top1, nll
}

// argmax is the index of the largest value, the lowest index among equals.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func summarize(kl []float64, agree []bool) Series {
	s := Series{Positions: len(kl), KL: kl, Agree: agree}
	if len(kl) == 0 {
		return s
	}
	var sum float64
	hits := 0
	for i, v := range kl {
		sum += v
		if agree[i] {
			hits++
		}
	}
	s.KLMean = sum / float64(len(kl))
	s.Top1 = float64(hits) / float64(len(kl))
	s.KLP99 = percentile(kl, 0.99)
	s.KLMax = slices.Max(kl)
	return s
}

// percentile is the nearest-rank p-quantile of x: the smallest value with at least p·len(x)
// values at or below it.
func percentile(x []float64, p float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}
