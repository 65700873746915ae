package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// KV is one metadata pair for Write.
//
// Value may be any Go type that maps to a GGUF value type: uint8, int8, uint16, int16, uint32,
// int32, uint64, int64, float32, float64, bool, string, int (written as int32 when it fits,
// else int64), a slice of any of those (an array of that type), or a []any (an array whose
// elements are all of one scalar type, or all arrays; an empty []any is an empty array of
// arrays). Arrays of arrays nest to any depth below 32.
type KV struct {
	Key   string
	Value any
}

// WriteTensor is one tensor for Write. Data holds Type.RowBytes(Dims[0]) × rows bytes, laid out
// as ggml lays the type out; nil Data writes that many zero bytes.
type WriteTensor struct {
	Name string
	Dims []uint64 // ne[0] first
	Type Type
	Data []byte
}

// Writer builds a GGUF file: the header, the metadata pairs in order, the tensor infos in
// order, and (when there are tensors) zero padding to the alignment followed by each tensor's
// data at the next offset that is a multiple of the alignment, each padded with zeros to the
// alignment, as ggml writes it. A file without tensors ends right after its metadata. Writer is meant for test fixtures and small
// tools; it holds every tensor's data in memory.
type Writer struct {
	// Version is the GGUF version to write, 2 or 3; 0 means 3. (On disk, little-endian v2 and v3
	// are identical.)
	Version uint32
	// Alignment is the data alignment in bytes, a power of two; 0 means general.alignment when
	// KV sets it, else DefaultAlignment. When it differs from DefaultAlignment and KV does not
	// set general.alignment, the writer appends general.alignment as a uint32.
	Alignment int
	KV        []KV
	Tensors   []WriteTensor
}

// AddKV appends a metadata pair.
func (w *Writer) AddKV(key string, value any) { w.KV = append(w.KV, KV{key, value}) }

// AddTensor appends a tensor.
func (w *Writer) AddTensor(name string, typ Type, dims []uint64, data []byte) {
	w.Tensors = append(w.Tensors, WriteTensor{Name: name, Dims: dims, Type: typ, Data: data})
}

// AddPlaceholderVocab appends a llama (SPM) tokenizer of n tokens (n ≥ 259): unk, bos, eos,
// the 256 byte tokens and placeholder words "▁t<i>" of falling score, what llama.cpp needs to
// load a synthetic model file.
func (w *Writer) AddPlaceholderVocab(n int) {
	toks, scores, types := make([]string, n), make([]float32, n), make([]int32, n)
	for i := range toks {
		switch {
		case i == 0:
			toks[i], types[i] = "<unk>", 2
		case i == 1:
			toks[i], types[i] = "<s>", 3
		case i == 2:
			toks[i], types[i] = "</s>", 3
		case i < 3+256:
			toks[i], types[i] = fmt.Sprintf("<0x%02X>", i-3), 6
		default:
			toks[i], types[i] = fmt.Sprintf("▁t%d", i), 1
			scores[i] = -float32(i)
		}
	}
	w.AddKV("tokenizer.ggml.model", "llama")
	w.AddKV("tokenizer.ggml.tokens", toks)
	w.AddKV("tokenizer.ggml.scores", scores)
	w.AddKV("tokenizer.ggml.token_type", types)
	w.AddKV("tokenizer.ggml.bos_token_id", uint32(1))
	w.AddKV("tokenizer.ggml.eos_token_id", uint32(2))
}

// Write writes a GGUF v3 file with the given metadata, tensors and alignment (0 for the
// default) to w. See Writer.
func Write(w io.Writer, kv []KV, tensors []WriteTensor, alignment int) error {
	_, err := (&Writer{Alignment: alignment, KV: kv, Tensors: tensors}).WriteTo(w)
	return err
}

// WriteTo writes the file to dst and returns the number of bytes written. It checks the whole
// file before writing anything: duplicate keys or tensor names, values of unsupported Go types,
// invalid tensor types or dims, and Data of the wrong length are errors.
func (w *Writer) WriteTo(dst io.Writer) (int64, error) {
	version := w.Version
	if version == 0 {
		version = 3
	}
	if version != 2 && version != 3 {
		return 0, fmt.Errorf("gguf: cannot write version %d: %w", version, ErrUnsupportedVersion)
	}
	kvs, align, err := w.checkedKV()
	if err != nil {
		return 0, err
	}
	offsets, err := w.layout(align)
	if err != nil {
		return 0, err
	}

	cw := &countWriter{w: dst}
	e := &encoder{w: bufio.NewWriterSize(cw, 64<<10)}
	e.raw([]byte(magic))
	e.u32(version)
	e.u64(uint64(len(w.Tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.value(kv.Value, true)
	}
	for i, t := range w.Tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offsets[i])
	}
	if len(w.Tensors) > 0 {
		e.pad(align)
		for _, t := range w.Tensors {
			if t.Data != nil {
				e.raw(t.Data)
			} else {
				e.zeros(t.Info().Bytes())
			}
			e.pad(align)
		}
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", e.err)
	}
	return cw.n, nil
}

// Info returns the tensor's info without an offset.
func (t WriteTensor) Info() TensorInfo { return TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type} }

// checkedKV validates the metadata and returns it (with general.alignment appended when needed)
// and the alignment to use.
func (w *Writer) checkedKV() ([]KV, int64, error) {
	seen := make(map[string]bool, len(w.KV))
	align := int64(w.Alignment)
	var fromKV int64
	for _, kv := range w.KV {
		if seen[kv.Key] {
			return nil, 0, fmt.Errorf("gguf: metadata %q: duplicate key", kv.Key)
		}
		seen[kv.Key] = true
		if err := checkValue(kv.Value, 0); err != nil {
			return nil, 0, fmt.Errorf("gguf: metadata %q: %w", kv.Key, err)
		}
		if kv.Key == "general.alignment" {
			f := &File{kv: map[string]any{kv.Key: kv.Value}}
			a, ok := f.Uint(kv.Key)
			if !ok {
				if i, isInt := kv.Value.(int); isInt && i > 0 {
					a, ok = uint64(i), true
				}
			}
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<31 {
				return nil, 0, fmt.Errorf("gguf: general.alignment %v is not a power of two in [1, 2^31]", kv.Value)
			}
			fromKV = int64(a)
		}
	}
	kvs := w.KV
	switch {
	case align == 0 && fromKV != 0:
		align = fromKV
	case align == 0:
		align = DefaultAlignment
	case align < 0 || align&(align-1) != 0 || align > 1<<31:
		return nil, 0, fmt.Errorf("gguf: alignment %d is not a power of two in [1, 2^31]", align)
	case fromKV != 0 && fromKV != align:
		return nil, 0, fmt.Errorf("gguf: alignment %d disagrees with general.alignment %d", align, fromKV)
	case fromKV == 0 && align != DefaultAlignment:
		kvs = append(kvs[:len(kvs):len(kvs)], KV{"general.alignment", uint32(align)})
	}
	return kvs, align, nil
}

// layout checks the tensors and returns each one's data offset.
func (w *Writer) layout(align int64) ([]uint64, error) {
	seen := make(map[string]bool, len(w.Tensors))
	offsets := make([]uint64, len(w.Tensors))
	off := uint64(0)
	for i, t := range w.Tensors {
		if seen[t.Name] {
			return nil, fmt.Errorf("gguf: tensor %q: duplicate name", t.Name)
		}
		seen[t.Name] = true
		if len(t.Dims) > MaxDims {
			return nil, fmt.Errorf("gguf: tensor %q: %d dimensions, at most %d allowed", t.Name, len(t.Dims), MaxDims)
		}
		info := t.Info()
		if err := checkShape(info); err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		n := info.Bytes()
		if t.Data != nil && uint64(len(t.Data)) != n {
			return nil, fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d for %s %v", t.Name, len(t.Data), n, t.Type, t.Dims)
		}
		offsets[i] = off
		next := satAdd(off, n)
		next = satAdd(next, uint64(align)-1) / uint64(align) * uint64(align)
		if next > math.MaxInt64 {
			return nil, fmt.Errorf("gguf: tensor %q: data section exceeds 2^63 bytes", t.Name)
		}
		off = next
	}
	return offsets, nil
}

// checkValue reports whether v can be encoded.
func checkValue(v any, depth int) error {
	if depth >= maxNesting {
		return fmt.Errorf("arrays nested %d deep or more", maxNesting)
	}
	if _, ok := scalarType(v); ok {
		return nil
	}
	if _, ok := sliceType(v); ok {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		return fmt.Errorf("unsupported value type %T", v)
	}
	if len(a) == 0 {
		return nil
	}
	if t0, ok := scalarType(a[0]); ok {
		for i, x := range a {
			t, ok := scalarType(x)
			if !ok || isInt(x) != isInt(a[0]) || (!isInt(x) && t != t0) {
				return fmt.Errorf("array element %d is %T, element 0 is %T: an array holds one type", i, x, a[0])
			}
		}
		return nil
	}
	for i, x := range a {
		if _, ok := scalarType(x); ok {
			return fmt.Errorf("array element %d is a scalar (%T), element 0 is an array", i, x)
		}
		if err := checkValue(x, depth+1); err != nil {
			return fmt.Errorf("array element %d: %w", i, err)
		}
	}
	return nil
}

func isInt(v any) bool { _, ok := v.(int); return ok }

// scalarType returns the value type of a scalar Go value.
func scalarType(v any) (valueType, bool) {
	switch v := v.(type) {
	case uint8:
		return valUint8, true
	case int8:
		return valInt8, true
	case uint16:
		return valUint16, true
	case int16:
		return valInt16, true
	case uint32:
		return valUint32, true
	case int32:
		return valInt32, true
	case uint64:
		return valUint64, true
	case int64:
		return valInt64, true
	case int:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return valInt32, true
		}
		return valInt64, true
	case float32:
		return valFloat32, true
	case float64:
		return valFloat64, true
	case bool:
		return valBool, true
	case string:
		return valString, true
	}
	return 0, false
}

// sliceType returns the element type of a typed slice of scalars.
func sliceType(v any) (valueType, bool) {
	switch v := v.(type) {
	case []uint8:
		return valUint8, true
	case []int8:
		return valInt8, true
	case []uint16:
		return valUint16, true
	case []int16:
		return valInt16, true
	case []uint32:
		return valUint32, true
	case []int32:
		return valInt32, true
	case []uint64:
		return valUint64, true
	case []int64:
		return valInt64, true
	case []int:
		for _, x := range v {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return valInt64, true
			}
		}
		return valInt32, true
	case []float32:
		return valFloat32, true
	case []float64:
		return valFloat64, true
	case []bool:
		return valBool, true
	case []string:
		return valString, true
	}
	return 0, false
}

// encoder writes little-endian GGUF fields, keeping the first error.
type encoder struct {
	w       *bufio.Writer
	err     error
	n       int64
	scratch [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += int64(n)
}

func (e *encoder) u8(v uint8) { e.raw([]byte{v}) }

func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.scratch[:], v)
	e.raw(e.scratch[:2])
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.scratch[:], v)
	e.raw(e.scratch[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.scratch[:], v)
	e.raw(e.scratch[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		var n int
		n, e.err = e.w.WriteString(s)
		e.n += int64(n)
	}
}

var zeroBlock [4096]byte

func (e *encoder) zeros(n uint64) {
	for n > 0 && e.err == nil {
		k := min(n, uint64(len(zeroBlock)))
		e.raw(zeroBlock[:k])
		n -= k
	}
}

func (e *encoder) pad(align int64) {
	if r := e.n % align; r != 0 {
		e.zeros(uint64(align - r))
	}
}

// value writes v, preceded by its type tag when tagged is true. checkValue has accepted v.
func (e *encoder) value(v any, tagged bool) {
	if t, ok := scalarType(v); ok {
		if tagged {
			e.u32(uint32(t))
		}
		e.scalar(t, v)
		return
	}
	if tagged {
		e.u32(uint32(valArray))
	}
	if t, ok := sliceType(v); ok {
		e.typedSlice(t, v)
		return
	}
	a := v.([]any)
	if len(a) == 0 {
		e.u32(uint32(valArray))
		e.u64(0)
		return
	}
	t, scalar := scalarType(a[0])
	if !scalar {
		t = valArray
	}
	if isInt(a[0]) {
		t = valInt32
		for _, x := range a {
			if xt, _ := scalarType(x); xt == valInt64 {
				t = valInt64
			}
		}
	}
	e.u32(uint32(t))
	e.u64(uint64(len(a)))
	for _, x := range a {
		if t == valArray {
			e.value(x, false)
		} else {
			e.scalar(t, x)
		}
	}
}

// scalar writes the scalar x as type t (x's own type, or int widened to t).
func (e *encoder) scalar(t valueType, x any) {
	if i, ok := x.(int); ok {
		if t == valInt64 {
			e.u64(uint64(int64(i)))
		} else {
			e.u32(uint32(int32(i)))
		}
		return
	}
	switch x := x.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float32:
		e.u32(math.Float32bits(x))
	case float64:
		e.u64(math.Float64bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	default:
		e.err = errors.New("gguf: internal error: unencodable scalar")
	}
}

func (e *encoder) typedSlice(t valueType, v any) {
	e.u32(uint32(t))
	switch v := v.(type) {
	case []uint8:
		e.u64(uint64(len(v)))
		e.raw(v)
	case []int8:
		writeSlice(e, t, v)
	case []uint16:
		writeSlice(e, t, v)
	case []int16:
		writeSlice(e, t, v)
	case []uint32:
		writeSlice(e, t, v)
	case []int32:
		writeSlice(e, t, v)
	case []uint64:
		writeSlice(e, t, v)
	case []int64:
		writeSlice(e, t, v)
	case []int:
		writeSlice(e, t, v)
	case []float32:
		writeSlice(e, t, v)
	case []float64:
		writeSlice(e, t, v)
	case []bool:
		writeSlice(e, t, v)
	case []string:
		writeSlice(e, t, v)
	}
}

func writeSlice[T any](e *encoder, t valueType, v []T) {
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.scalar(t, x)
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
