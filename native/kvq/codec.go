package kvq

import "fmt"

// Codec encodes and reads rows of one format at one row length. A Codec holds no per-row state
// and is safe for concurrent use, except where its constructor says otherwise.
//
// Reference semantics, which every fast path must match (bit for bit, or within the bound its
// doc comment states):
//
//	Decode(dst, row)               dst[i] = the stored value of element i
//	Dot(q', row)                   Σ_i q'[i]·x[i] over the codec domain
//	AccumulateScaled(acc, w, row)  acc[i] += w·x[i] over the codec domain
//
// The codec domain is the plain value domain for every format except TQ4, whose rows are stored
// rotated: PrepareQuery maps a query into the codec domain once per query, Dot then works on
// rotated values, and FinishAccumulate maps an accumulator back. For all other formats both are
// copies. Callers always go through PrepareQuery and FinishAccumulate so attention code does not
// special-case formats.
type Codec interface {
	// Format is the format this codec stores.
	Format() Format
	// Dim is the number of values per row.
	Dim() int
	// RowBytes is the stored size of one row: Format().RowBytes(Dim()).
	RowBytes() int

	// Encode quantizes src (Dim values) into dst (RowBytes bytes).
	Encode(dst []byte, src []float32)
	// Decode reconstructs one row into dst (Dim values), in the value domain (un-rotated).
	Decode(dst []float32, row []byte)

	// PrepareQuery maps q (Dim values) into the codec domain, writing dst (Dim values).
	PrepareQuery(dst, q []float32)
	// Dot returns q'·x for a prepared query q' and one stored row.
	Dot(q []float32, row []byte) float32
	// DotMany writes out[j] = Dot(q, rows[j·RowBytes:(j+1)·RowBytes]) for every j < len(out).
	DotMany(q []float32, rows []byte, out []float32)
	// AccumulateScaled adds w·x (codec domain) of one stored row to acc (Dim values).
	AccumulateScaled(acc []float32, w float32, row []byte)
	// AccumulateMany adds Σ_j w[j]·x_j for the len(w) rows laid end to end in rows.
	AccumulateMany(acc []float32, w []float32, rows []byte)
	// FinishAccumulate maps an accumulator from the codec domain to the value domain into dst.
	FinishAccumulate(dst, acc []float32)
}

// CodecOptions carries what a few formats need beyond the row length.
type CodecOptions struct {
	// Seed, Layer and Head pick TQ4's random rotation: deterministic per (Seed, Layer, Head).
	Seed        uint64
	Layer, Head int
	// Rotate stores a Rotatable format through the rotation of (Seed, Layer, Head) (rotate.go).
	// It is ignored for every other format.
	Rotate bool
}

// codecFactories builds codecs per format; each format's file fills its entry in init.
var codecFactories [numFormats]func(d int, opt CodecOptions) (Codec, error)

// NewCodec returns the codec of format f for rows of d values.
func NewCodec(f Format, d int, opt CodecOptions) (Codec, error) {
	if !f.Valid() {
		return nil, fmt.Errorf("%w: format %d", ErrUnknownFormat, f)
	}
	if d < MinDim {
		return nil, fmt.Errorf("%w: %s: head dimension %d is below the minimum %d", ErrUnsupported, f, d, MinDim)
	}
	mk := codecFactories[f]
	if mk == nil {
		return nil, fmt.Errorf("%w: %s has no row codec", ErrUnsupported, f)
	}
	c, err := mk(d, opt)
	if err != nil || !opt.Rotate || !f.Rotatable() {
		return c, err
	}
	return newRotCodec(c, opt), nil
}

// DecodeRows decodes len(src)/RowBytes rows of untrusted bytes into dst, checking lengths first:
// the entry point for bytes read from disk or the network. It never panics.
func DecodeRows(c Codec, dst []float32, src []byte) error {
	rb, d := c.RowBytes(), c.Dim()
	if rb <= 0 || len(src)%rb != 0 {
		return fmt.Errorf("%w: %s: %d bytes is not a whole number of %d-byte rows", ErrCorrupt, c.Format(), len(src), rb)
	}
	n := len(src) / rb
	if len(dst) != n*d {
		return fmt.Errorf("%w: %s: %d rows need %d values, have room for %d", ErrCorrupt, c.Format(), n, n*d, len(dst))
	}
	for i := 0; i < n; i++ {
		c.Decode(dst[i*d:(i+1)*d], src[i*rb:(i+1)*rb])
	}
	return nil
}
