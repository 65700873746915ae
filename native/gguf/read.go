package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/kvlab/kvlab/internal/limits"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
)

const (
	magic = "GGUF"

	// readChunk is how many bytes the decoder asks the ReaderAt for at a time.
	readChunk = 64 << 10
	// maxNesting bounds the depth of arrays of arrays.
	maxNesting = 32
	// minKVBytes is the smallest encoding of one metadata pair: key length, empty key, value
	// type, and a one-byte value.
	minKVBytes = 8 + 4 + 1
	// minTensorInfoBytes is the smallest encoding of one tensor info: name length, empty name,
	// n_dims, type, offset.
	minTensorInfoBytes = 8 + 4 + 4 + 8
	// minArrayBytes is the smallest encoding of an array value: element type and count.
	minArrayBytes = 4 + 8
	// preallocMax caps the capacity reserved up front for the metadata and tensor lists, whose
	// counts come from the header: a hostile count then costs at most what its entries occupy.
	preallocMax = 4096
)

// decoder reads the header of a GGUF file through a small window over an io.ReaderAt. Every
// read is checked against size, so no allocation exceeds the bytes left in the file.
type decoder struct {
	r      io.ReaderAt
	size   int64
	off    int64 // file offset of the next byte
	buf    []byte
	bufOff int64 // file offset of buf[0]
}

func (d *decoder) left() int64 { return d.size - d.off }

// next returns the next n bytes and advances past them. The slice is valid until the next call.
func (d *decoder) next(n int64, what string) ([]byte, error) {
	if n < 0 || n > d.left() {
		return nil, fmt.Errorf("%s: %d bytes at offset %d run past the end of the file (size %d): %w",
			what, n, d.off, d.size, ErrTruncated)
	}
	if d.off >= d.bufOff && d.off+n <= d.bufOff+int64(len(d.buf)) {
		s := d.off - d.bufOff
		d.off += n
		return d.buf[s : s+n], nil
	}
	want := max(n, readChunk)
	want = min(want, d.left())
	if int64(cap(d.buf)) >= want {
		d.buf = d.buf[:want]
	} else {
		d.buf = make([]byte, want)
	}
	got, err := d.r.ReadAt(d.buf, d.off)
	d.buf = d.buf[:got]
	d.bufOff = d.off
	if int64(got) < n {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: read %d of %d bytes at offset %d: file is shorter than its size %d: %w",
				what, got, n, d.off, d.size, ErrTruncated)
		}
		return nil, fmt.Errorf("%s: read at offset %d: %w", what, d.off, err)
	}
	d.off += n
	return d.buf[:n], nil
}

func (d *decoder) u8(what string) (uint8, error) {
	b, err := d.next(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) u16(what string) (uint16, error) {
	b, err := d.next(2, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.next(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.next(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.left()) {
		return "", fmt.Errorf("%s: length %d exceeds the %d bytes left in the file: %w", what, n, d.left(), ErrTruncated)
	}
	b, err := d.next(int64(n), what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func parse(r io.ReaderAt, size int64) (*File, error) {
	d := &decoder{r: r, size: size}
	f, err := d.header()
	if err != nil {
		if strings.HasPrefix(err.Error(), "gguf: ") {
			return nil, err // it already says so: "gguf: not a GGUF file: …"
		}
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return f, nil
}

func (d *decoder) header() (*File, error) {
	if d.size < 4 {
		b := make([]byte, d.size)
		n, _ := d.r.ReadAt(b, 0)
		if n > 0 && n == len(b) && magic[:n] == string(b) {
			return nil, fmt.Errorf("file of %d bytes ends inside the magic: %w", d.size, ErrTruncated)
		}
		return nil, fmt.Errorf("%w: the file is %d bytes, too short for the magic", ErrNotGGUF, d.size)
	}
	m, err := d.next(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(m) != magic {
		if string(m) == "FUGG" {
			return nil, fmt.Errorf("%w: magic %q is GGUF byte-swapped (a big-endian file); only little-endian GGUF is supported",
				ErrNotGGUF, m)
		}
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrNotGGUF, m, magic)
	}
	f := &File{size: d.size, Alignment: DefaultAlignment}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	switch v := f.Version; {
	case v == 2 || v == 3:
	case v == 1:
		return nil, fmt.Errorf("version 1 (the 2023 draft format with 32-bit counts) is not supported; convert the file with a current llama.cpp: %w",
			ErrUnsupportedVersion)
	case v == 0:
		return nil, fmt.Errorf("version 0 is not a GGUF version (this reader supports 2 and 3): %w", ErrUnsupportedVersion)
	case v&0xffff == 0 && bits.ReverseBytes32(v) <= 0xffff:
		return nil, fmt.Errorf("version field %#08x reads as %d byte-swapped: the file is big-endian, and only little-endian GGUF is supported: %w",
			v, bits.ReverseBytes32(v), ErrUnsupportedVersion)
	default:
		return nil, fmt.Errorf("version %d (this reader supports 2 and 3): %w", v, ErrUnsupportedVersion)
	}
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return nil, err
	}
	if nKV > uint64(d.left())/minKVBytes {
		return nil, fmt.Errorf("metadata count %d cannot fit in the %d bytes left in the file: %w", nKV, d.left(), ErrTruncated)
	}
	if err := d.metadata(f, int(nKV)); err != nil {
		return nil, err
	}
	if err := d.alignment(f); err != nil {
		return nil, err
	}
	if nTensors > uint64(d.left())/minTensorInfoBytes {
		return nil, fmt.Errorf("tensor count %d cannot fit in the %d bytes left in the file: %w", nTensors, d.left(), ErrTruncated)
	}
	if err := d.tensorInfos(f, int(nTensors)); err != nil {
		return nil, err
	}
	if d.off > math.MaxInt64-f.Alignment {
		return nil, fmt.Errorf("data section offset overflows int64")
	}
	f.DataOffset = (d.off + f.Alignment - 1) / f.Alignment * f.Alignment
	if err := checkTensorData(f); err != nil {
		return nil, err
	}
	return f, nil
}

func (d *decoder) metadata(f *File, n int) error {
	f.keys = make([]string, 0, min(n, preallocMax))
	f.kv = make(map[string]any, min(n, preallocMax))
	for i := range n {
		key, err := d.str(fmt.Sprintf("metadata %d: key", i))
		if err != nil {
			return err
		}
		what := fmt.Sprintf("metadata %d %s", i, quote(key))
		if _, dup := f.kv[key]; dup {
			return fmt.Errorf("%s: duplicate key", what)
		}
		t, err := d.u32(what + ": value type")
		if err != nil {
			return err
		}
		v, err := d.value(valueType(t), what, 0)
		if err != nil {
			return err
		}
		f.keys = append(f.keys, key)
		f.kv[key] = v
	}
	return nil
}

// value decodes one value of type t; what names it in errors.
func (d *decoder) value(t valueType, what string, depth int) (any, error) {
	switch t {
	case valUint8:
		return d.u8(what)
	case valInt8:
		v, err := d.u8(what)
		return int8(v), err
	case valUint16:
		return d.u16(what)
	case valInt16:
		v, err := d.u16(what)
		return int16(v), err
	case valUint32:
		return d.u32(what)
	case valInt32:
		v, err := d.u32(what)
		return int32(v), err
	case valFloat32:
		v, err := d.u32(what)
		return math.Float32frombits(v), err
	case valBool:
		v, err := d.u8(what)
		if err == nil && v > 1 {
			return nil, fmt.Errorf("%s: bool byte is %d, want 0 or 1", what, v)
		}
		return v == 1, err
	case valString:
		return d.str(what)
	case valUint64:
		return d.u64(what)
	case valInt64:
		v, err := d.u64(what)
		return int64(v), err
	case valFloat64:
		v, err := d.u64(what)
		return math.Float64frombits(v), err
	case valArray:
		return d.array(what, depth)
	}
	return nil, fmt.Errorf("%s: unknown value type %d", what, uint32(t))
}

func (d *decoder) array(what string, depth int) (any, error) {
	if depth >= maxNesting {
		return nil, fmt.Errorf("%s: arrays nested more than %d deep", what, maxNesting)
	}
	et32, err := d.u32(what + ": array element type")
	if err != nil {
		return nil, err
	}
	et := valueType(et32)
	count, err := d.u64(what + ": array length")
	if err != nil {
		return nil, err
	}
	elem := int64(et.fixedSize())
	switch {
	case elem < 0:
		return nil, fmt.Errorf("%s: array of unknown value type %d", what, et32)
	case et == valString:
		elem = 8
	case et == valArray:
		elem = minArrayBytes
	}
	if count > uint64(d.left()/elem) {
		return nil, fmt.Errorf("%s: array of %d %s needs at least %d bytes per element, more than the %d bytes left in the file: %w",
			what, count, et, elem, d.left(), ErrTruncated)
	}
	n := int(count)
	switch et {
	case valString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = d.str(what); err != nil {
				return nil, fmt.Errorf("element %d of %w", i, err)
			}
		}
		return out, nil
	case valArray:
		out := make([]any, n)
		for i := range out {
			if out[i], err = d.array(what, depth+1); err != nil {
				return nil, fmt.Errorf("element %d of %w", i, err)
			}
		}
		return out, nil
	}
	raw, err := d.next(int64(n)*elem, what)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch et {
	case valUint8:
		return append([]uint8(nil), raw...), nil
	case valInt8:
		return decodeArray(raw, 1, func(b []byte) int8 { return int8(b[0]) }), nil
	case valBool:
		out := make([]bool, n)
		for i, b := range raw {
			if b > 1 {
				return nil, fmt.Errorf("%s: element %d: bool byte is %d, want 0 or 1", what, i, b)
			}
			out[i] = b == 1
		}
		return out, nil
	case valUint16:
		return decodeArray(raw, 2, le.Uint16), nil
	case valInt16:
		return decodeArray(raw, 2, func(b []byte) int16 { return int16(le.Uint16(b)) }), nil
	case valUint32:
		return decodeArray(raw, 4, le.Uint32), nil
	case valInt32:
		return decodeArray(raw, 4, func(b []byte) int32 { return int32(le.Uint32(b)) }), nil
	case valFloat32:
		return decodeArray(raw, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }), nil
	case valUint64:
		return decodeArray(raw, 8, le.Uint64), nil
	case valInt64:
		return decodeArray(raw, 8, func(b []byte) int64 { return int64(le.Uint64(b)) }), nil
	case valFloat64:
		return decodeArray(raw, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }), nil
	}
	return nil, fmt.Errorf("%s: internal error: unhandled array element type %s", what, et)
}

func decodeArray[T any](raw []byte, size int, get func([]byte) T) []T {
	out := make([]T, len(raw)/size)
	for i := range out {
		out[i] = get(raw[i*size:])
	}
	return out
}

// alignment sets f.Alignment from general.alignment, which must be an integer power of two
// no larger than 1<<31 (ggml stores it as a uint32).
func (d *decoder) alignment(f *File) error {
	const key = "general.alignment"
	v, ok := f.kv[key]
	if !ok {
		return nil
	}
	a, ok := f.Uint(key)
	if !ok {
		return fmt.Errorf("%s: value %v (%T) is not a non-negative integer", key, v, v)
	}
	if a == 0 || a&(a-1) != 0 || a > 1<<31 {
		return fmt.Errorf("%s: %d is not a power of two in [1, 2^31]", key, a)
	}
	f.Alignment = int64(a)
	return nil
}

func (d *decoder) tensorInfos(f *File, n int) error {
	f.tensors = make([]TensorInfo, 0, min(n, preallocMax))
	f.index = make(map[string]int, min(n, preallocMax))
	for i := range n {
		name, err := d.str(fmt.Sprintf("tensor %d: name", i))
		if err != nil {
			return err
		}
		what := "tensor " + quote(name)
		if _, dup := f.index[name]; dup {
			return fmt.Errorf("%s: duplicate tensor name", what)
		}
		nd, err := d.u32(what + ": dimension count")
		if err != nil {
			return err
		}
		if nd > MaxDims {
			return fmt.Errorf("%s: %d dimensions, at most %d allowed", what, nd, MaxDims)
		}
		t := TensorInfo{Name: name, Dims: make([]uint64, nd)}
		for j := range t.Dims {
			if t.Dims[j], err = d.u64(what + ": dimension"); err != nil {
				return err
			}
		}
		typ, err := d.u32(what + ": type")
		if err != nil {
			return err
		}
		t.Type = Type(typ)
		if t.Offset, err = d.u64(what + ": offset"); err != nil {
			return err
		}
		if err := checkShape(t); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		f.index[name] = len(f.tensors)
		f.tensors = append(f.tensors, t)
	}
	return nil
}

// checkShape verifies the tensor's type, that its dims multiply without overflowing an int64,
// that ne[0] is whole blocks, and that its byte size fits an int64.
func checkShape(t TensorInfo) error {
	if !t.Type.Valid() {
		return fmt.Errorf("unknown tensor type %d", uint32(t.Type))
	}
	n := uint64(1)
	for _, dim := range t.Dims {
		hi, lo := bits.Mul64(n, dim)
		if hi != 0 || lo > math.MaxInt64 {
			return fmt.Errorf("dims %v: element count overflows int64", t.Dims)
		}
		n = lo
	}
	ne0 := uint64(1)
	if len(t.Dims) > 0 {
		ne0 = t.Dims[0]
	}
	if bs := uint64(t.Type.BlockSize()); ne0%bs != 0 {
		return fmt.Errorf("dims %v: ne[0] = %d is not a multiple of the %s block size %d", t.Dims, ne0, t.Type, bs)
	}
	// bytes = n / BlockSize × TypeSize <= n × TypeSize / BlockSize; check it fits an int64.
	blocks := n / uint64(t.Type.BlockSize())
	hi, lo := bits.Mul64(blocks, uint64(t.Type.TypeSize()))
	if hi != 0 || lo > math.MaxInt64 {
		return fmt.Errorf("dims %v: %s data size overflows int64", t.Dims, t.Type)
	}
	return nil
}

// checkTensorData verifies that every tensor's offset is aligned, that its data lies inside the
// file, and that no two tensors' data overlap.
func checkTensorData(f *File) error {
	type extent struct {
		start, end uint64 // relative to DataOffset
		i          int
	}
	ext := make([]extent, 0, len(f.tensors))
	room := uint64(0)
	if f.size > f.DataOffset {
		room = uint64(f.size - f.DataOffset)
	}
	for i, t := range f.tensors {
		if t.Offset%uint64(f.Alignment) != 0 {
			return fmt.Errorf("tensor %s: offset %d is not a multiple of the alignment %d", quote(t.Name), t.Offset, f.Alignment)
		}
		n := t.Bytes() // fits an int64 (checkShape)
		if t.Offset > room || n > room-t.Offset {
			start := uint64(f.DataOffset) + t.Offset // both < 2^63: no overflow
			return fmt.Errorf("tensor %s: data [%d, %d) extends past end of file (size %d): %w",
				quote(t.Name), start, satAdd(start, n), f.size, ErrTruncated)
		}
		if n > 0 {
			ext = append(ext, extent{t.Offset, t.Offset + n, i})
		}
	}
	sort.Slice(ext, func(a, b int) bool { return ext[a].start < ext[b].start })
	for k := 1; k < len(ext); k++ {
		p, q := ext[k-1], ext[k]
		if q.start < p.end {
			return fmt.Errorf("tensors %s (data [%d, %d)) and %s (data [%d, %d)) overlap",
				quote(f.tensors[p.i].Name), p.start, p.end, quote(f.tensors[q.i].Name), q.start, q.end)
		}
	}
	return nil
}

func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// quote quotes a name or key from the file for an error message, bounded in length: a file
// may hold a megabyte-long key.
func quote(s string) string { return fmt.Sprintf("%q", limits.Clip(s, 128)) }
