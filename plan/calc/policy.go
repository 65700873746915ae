package calc

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/kvq"
)

// PairName writes a pair as K/V always ("q8_0/q8_0", "q8_0-r/q4_0-r" for unrotated halves), the
// way the policy logs its choice.
func PairName(p kvq.Pair) string { return p.KName() + "/" + p.VName() }

// DefaultReserveBytes is the compute reserve the policy keeps free for activations and scratch
// buffers: 1.5 GiB, as in seed 000 P1.
const DefaultReserveBytes = 3 * GiB / 2

// TierLadder is seed 000 P1's ladder for a model class, least compression first: f16, then
// q8_0, then q8_0 K / q4_0 V, then q5_1 K / q4_0 V. Its last rung is the floor the policy never
// goes below: seed 000 §2 puts q5-class KV (KLD ≤ 0.025 at 256k) inside the serving bar of the
// quant-sensitive full-attention class, while q4/q4 has only a thin margin. The sliding-window
// and hybrid classes were not measured lower, so they share the same floor.
func TierLadder(Class) []kvq.Pair {
	return []kvq.Pair{
		{K: kvq.F16, V: kvq.F16},
		{K: kvq.Q8_0, V: kvq.Q8_0},
		{K: kvq.Q8_0, V: kvq.Q4_0},
		{K: kvq.Q5_1, V: kvq.Q4_0},
	}
}

// Budget is the device memory left for the KV cache on one GPU.
type Budget struct {
	// FreeBytes is the memory of the GPU that is free before the model loads.
	FreeBytes int64 `json:"free_bytes"`
	// TargetBytes, when positive, caps the memory the server may use (seed 000's --vram-target).
	TargetBytes int64 `json:"target_bytes,omitempty"`
	// ResidentBytes is memory already taken: weights and anything else loaded.
	ResidentBytes int64 `json:"resident_bytes"`
	// ReserveBytes is kept free for compute buffers.
	ReserveBytes int64 `json:"reserve_bytes"`
	// KVBytes is what is left for KV: min(free, target) − resident − reserve, or the value
	// given directly. It may be negative when the weights alone do not fit.
	KVBytes int64 `json:"kv_bytes"`
	// Given reports that KVBytes was given directly rather than derived.
	Given bool `json:"given"`
}

// NewBudget derives the KV budget the way seed 000 P1 does: free memory capped by the target,
// less what is already resident, less the compute reserve.
func NewBudget(free, target, resident, reserve int64) Budget {
	limit := free
	if target > 0 && target < limit {
		limit = target
	}
	return Budget{FreeBytes: free, TargetBytes: target, ResidentBytes: resident, ReserveBytes: reserve,
		KVBytes: limit - resident - reserve}
}

// GivenBudget is a KV budget stated directly (kvlab plan --budget-gib).
func GivenBudget(kv int64) Budget { return Budget{KVBytes: kv, Given: true} }

// PolicyInput is what the auto KV-tier policy decides from.
type PolicyInput struct {
	// Shape is the model.
	Shape Shape
	// Ctx is the context every session must hold, in tokens.
	Ctx int64
	// Sessions is the number of sequences that must be resident at once (at least 1).
	Sessions int
	// TP is the number of GPUs splitting the KV heads (at least 1); budgets are per GPU.
	TP int
	// Overlay is the FP16 window + sinks overlay, charged on top of each cache.
	Overlay Overlay
	// Budget is the KV budget per GPU.
	Budget Budget
	// User, when valid, is a pair the user chose: the policy respects it and only reports
	// whether it fits.
	User kvq.Pair
}

// Decision is the policy's choice.
type Decision struct {
	// Choice is the pair to use.
	Choice kvq.Pair `json:"-"`
	// Format is Choice written K/V.
	Format string `json:"choice"`
	// Reason says why, in one line: "q8_0/q4_0: KV 2496 MiB fits budget 2728 MiB".
	Reason string `json:"reason"`
	// KVBytes is the cache of all sessions in Choice, overlay included, on one GPU.
	KVBytes int64 `json:"kv_bytes"`
	// BudgetBytes is the KV budget it was held against.
	BudgetBytes int64 `json:"budget_bytes"`
	// Fits reports that the whole cache stays resident.
	Fits bool `json:"fits"`
	// SpillBytes is the part of the cache that does not fit and goes to host memory.
	SpillBytes int64 `json:"spill_bytes"`
	// Floor reports that no rung fit and the policy fell to the ladder's floor.
	Floor bool `json:"floor"`
	// UserChosen reports that the user's pair was kept.
	UserChosen bool `json:"user_chosen"`
}

// Decide runs seed 000 P1: keep a user-chosen pair; else walk the class's ladder and pick the
// first (least compressing) rung whose whole cache — every session at the full context, overlay
// included — fits the budget; else take the floor and spill the excess to host memory. A
// sliding-window or hybrid model whose f16 cache fits stays f16 (the first rung).
func Decide(in PolicyInput) (Decision, error) {
	if err := in.Shape.Validate(); err != nil {
		return Decision{}, err
	}
	if in.Ctx < 0 {
		return Decision{}, fmt.Errorf("%w: context %d tokens is negative", ErrBadInput, in.Ctx)
	}
	if in.Sessions < 1 {
		return Decision{}, fmt.Errorf("%w: %d sessions, need at least 1", ErrBadInput, in.Sessions)
	}
	if in.TP < 1 {
		return Decision{}, fmt.Errorf("%w: %d GPUs, need at least 1", ErrBadInput, in.TP)
	}
	cost := func(p kvq.Pair) int64 {
		return int64(in.Sessions) * in.Shape.SessionBytes(p, in.Overlay, in.Ctx, in.TP)
	}
	budget := in.Budget.KVBytes
	decide := func(p kvq.Pair) Decision {
		c := cost(p)
		d := Decision{Choice: p, Format: PairName(p), KVBytes: c, BudgetBytes: budget, Fits: c <= budget}
		if !d.Fits {
			d.SpillBytes = c - max(budget, 0)
		}
		return d
	}
	if in.User.Valid() {
		d := decide(in.User)
		d.UserChosen = true
		d.Reason = in.reason(d, " (user-chosen)")
		return d, nil
	}
	if in.User != (kvq.Pair{}) {
		return Decision{}, fmt.Errorf("%w: chosen KV pair %s/%s is not valid", ErrBadInput, in.User.K, in.User.V)
	}
	class := in.Shape.Class()
	ladder := TierLadder(class)
	for i, p := range ladder {
		if d := decide(p); d.Fits {
			d.Reason = in.reason(d, "")
			if i == 0 && (class == ClassSliding || class == ClassHybrid) {
				d.Reason += fmt.Sprintf("; a %s model stays f16 when f16 fits", class)
			}
			return d, nil
		}
	}
	d := decide(ladder[len(ladder)-1])
	d.Floor = true
	d.Reason = in.reason(d, " (ladder floor)")
	return d, nil
}

// reason writes the decision's one-line reason.
func (in PolicyInput) reason(d Decision, tag string) string {
	kv, bud := mibPair(d.KVBytes, max(d.BudgetBytes, 0))
	what := "KV " + kv + " MiB"
	if in.Sessions > 1 {
		per, _ := mibPair(d.KVBytes/int64(in.Sessions), 0)
		what = fmt.Sprintf("KV %d × %s MiB = %s MiB", in.Sessions, per, kv)
	}
	if d.Fits {
		return fmt.Sprintf("%s%s: %s fits budget %s MiB", d.Format, tag, what, bud)
	}
	s := fmt.Sprintf("%s%s: %s exceeds budget %s MiB; %s MiB spills to host", d.Format, tag, what, bud, mibString(d.SpillBytes))
	if d.BudgetBytes < 0 {
		s += fmt.Sprintf(" (what is resident and the compute reserve already exceed the memory by %s MiB)", mibString(-d.BudgetBytes))
	} else if d.BudgetBytes == 0 && !in.Budget.Given {
		s += " (what is resident and the compute reserve leave no memory for KV)"
	}
	return s
}

// mibPair writes two byte counts in MiB, whole when rounding keeps them distinct (or both are
// whole), else with one decimal so that a comparison never reads as a tie.
func mibPair(a, b int64) (string, string) {
	ra, rb := math.Round(ToMiB(a)), math.Round(ToMiB(b))
	whole := a%MiB == 0 && b%MiB == 0
	if whole || ra != rb {
		return FormatFixed(ra, 0), FormatFixed(rb, 0)
	}
	return FormatFixed(ToMiB(a), 1), FormatFixed(ToMiB(b), 1)
}

func mibString(b int64) string { return FormatFixed(math.Round(ToMiB(b)), 0) }
