// Package gguf reads and writes GGUF files (versions 2 and 3, little-endian): the metadata
// key/value pairs, the tensor infos, and the tensor data, and converts tensor rows of the common
// ggml types to float32.
//
// A GGUF file is a header (magic "GGUF", version, tensor count, metadata count), the metadata
// pairs, the tensor infos (name, dims with ne[0] first, type, offset relative to the data
// section), padding to the alignment (general.alignment, default 32), and the tensor data.
//
// The reader treats the file as untrusted: every count, length, dimension and offset is checked
// against the bytes the file actually has before anything is allocated, and a malformed file
// yields an error that names the field at fault, never a panic. Errors wrap ErrNotGGUF,
// ErrTruncated or ErrUnsupportedVersion where one of those applies.
//
// The package compiles for every GOOS; Open maps tensor data with mmap on linux and darwin and
// reads it into memory elsewhere (including js/wasm and windows).
package gguf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotGGUF reports that the input does not start with the GGUF magic.
	ErrNotGGUF = errors.New("gguf: not a GGUF file")
	// ErrTruncated reports that a header field, a value or tensor data runs past the end of the
	// file.
	ErrTruncated = errors.New("gguf: file is truncated")
	// ErrUnsupportedVersion reports a GGUF version other than 2 or 3, or a big-endian file.
	ErrUnsupportedVersion = errors.New("gguf: unsupported version")
	// ErrUnsupportedType reports a tensor type that DequantizeRow cannot convert.
	ErrUnsupportedType = errors.New("gguf: unsupported tensor type")
)

// DefaultAlignment is the alignment of the tensor data section and of every tensor's offset when
// the file has no general.alignment key.
const DefaultAlignment = 32

// MaxDims is the largest number of dimensions a tensor may have (ggml's GGML_MAX_DIMS).
const MaxDims = 4

// File is a parsed GGUF file: its metadata, its tensor infos, and (when it came from Open) a
// read-only view of its tensor data. A File is safe for concurrent use by readers; Close must not
// race with other calls.
type File struct {
	// Version is the GGUF version, 2 or 3.
	Version uint32
	// Alignment is the data alignment in bytes: general.alignment, or DefaultAlignment.
	Alignment int64
	// DataOffset is the file offset of the tensor data section: the end of the tensor infos
	// rounded up to Alignment. Tensor offsets are relative to it.
	DataOffset int64

	size    int64
	keys    []string
	kv      map[string]any
	tensors []TensorInfo
	index   map[string]int

	data    []byte       // file bytes [DataOffset, size), nil when not mapped
	tdata   [][]byte     // per-tensor data of an assembled File (Assemble), nil otherwise
	release func() error // unmaps or drops data; nil when nothing is held
	closed  bool
}

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	// Name is the tensor's name, e.g. "blk.0.attn_q.weight".
	Name string
	// Dims are the tensor's extents with ne[0] (the contiguous, fastest-varying dimension) first,
	// as stored in GGUF. A row is Dims[0] values.
	Dims []uint64
	// Type is the tensor's ggml type.
	Type Type
	// Offset is the byte offset of the tensor's data relative to File.DataOffset.
	Offset uint64
}

// Elements returns the number of values in the tensor: the product of Dims (1 for no dims).
// Tensor infos returned by Read and Open are checked so that this product and Bytes fit in an
// int64.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Bytes returns the size of the tensor's data in bytes: Type.RowBytes(Dims[0]) times the number
// of rows. It returns 0 for an invalid type or a Dims[0] that is not a multiple of the block
// size.
func (t TensorInfo) Bytes() uint64 {
	if len(t.Dims) == 0 {
		return t.Type.RowBytes(1)
	}
	if t.Dims[0] == 0 {
		return 0
	}
	return t.Type.RowBytes(t.Dims[0]) * (t.Elements() / t.Dims[0])
}

// Open parses the GGUF file at path and makes its tensor data available to TensorData: mapped
// read-only with mmap on linux and darwin, read into memory elsewhere. The caller must Close the
// File to release the data.
func Open(path string) (*File, error) {
	// Stat before opening: opening a FIFO blocks until a writer comes.
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s: not a regular file", path)
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s: not a regular file", path)
	}
	f, err := Read(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.tensors) == 0 || f.DataOffset >= f.size {
		return f, nil
	}
	data, release, err := mapData(fd, f.DataOffset, f.size)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: tensor data: %w", path, err)
	}
	f.data, f.release = data, release
	return f, nil
}

// Read parses the header of a GGUF file (metadata and tensor infos) from r. size is the length
// of the whole file: tensor offsets and sizes are checked against it. Read reads only the header
// bytes, so r may serve just a prefix of the file that holds the header (a slice of a dropped
// file in the browser). A File from Read has no tensor data: TensorData returns an error.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("gguf: negative file size %d", size)
	}
	return parse(r, size)
}

// Close releases the tensor data of a File from Open. Slices returned by TensorData must not be
// used after Close. Close is idempotent.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.data, f.tdata = nil, nil
	if f.release != nil {
		rel := f.release
		f.release = nil
		return rel()
	}
	return nil
}

// Size returns the length of the file in bytes, as given to Read or found by Open.
func (f *File) Size() int64 { return f.size }

// Keys returns the metadata keys in file order.
func (f *File) Keys() []string { return slices.Clone(f.keys) }

// Value returns the metadata value of key. Scalars are uint8, int8, uint16, int16, uint32, int32,
// uint64, int64, float32, float64, bool or string; an array of scalars is a slice of that type
// ([]string, []float32, []int32, …); an array of arrays is a []any whose elements are arrays.
// Slices are shared with the File and must not be modified.
func (f *File) Value(key string) (any, bool) {
	v, ok := f.kv[key]
	return v, ok
}

// String returns the string value of key; ok is false when key is missing or not a string.
func (f *File) String(key string) (string, bool) {
	s, ok := f.kv[key].(string)
	return s, ok
}

// Uint returns the value of key when it is an integer of any width and sign whose value is
// non-negative.
func (f *File) Uint(key string) (uint64, bool) {
	switch v := f.kv[key].(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	}
	if i, ok := signed(f.kv[key]); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// Int returns the value of key when it is an integer of any width and sign that fits in an
// int64.
func (f *File) Int(key string) (int64, bool) {
	v := f.kv[key]
	if i, ok := signed(v); ok {
		return i, true
	}
	switch v := v.(type) {
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), true
		}
	}
	return 0, false
}

func signed(v any) (int64, bool) {
	switch v := v.(type) {
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// Float returns the value of key when it is a float32, a float64 or an integer.
func (f *File) Float(key string) (float64, bool) {
	switch v := f.kv[key].(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	if i, ok := f.Int(key); ok {
		return float64(i), true
	}
	if u, ok := f.Uint(key); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns the value of key when it is a bool.
func (f *File) Bool(key string) (bool, bool) {
	b, ok := f.kv[key].(bool)
	return b, ok
}

// Strings returns the value of key when it is an array of strings. The slice is shared with the
// File and must not be modified.
func (f *File) Strings(key string) ([]string, bool) {
	s, ok := f.kv[key].([]string)
	return s, ok
}

// Float32s returns the value of key when it is an array of float32 (shared with the File, not to
// be modified), or a new slice converted from an array of float64 or of integers.
func (f *File) Float32s(key string) ([]float32, bool) {
	switch v := f.kv[key].(type) {
	case []float32:
		return v, true
	case []float64:
		return convert[float32](v), true
	case []int8:
		return convert[float32](v), true
	case []uint8:
		return convert[float32](v), true
	case []int16:
		return convert[float32](v), true
	case []uint16:
		return convert[float32](v), true
	case []int32:
		return convert[float32](v), true
	case []uint32:
		return convert[float32](v), true
	case []int64:
		return convert[float32](v), true
	case []uint64:
		return convert[float32](v), true
	}
	return nil, false
}

// Int32s returns the value of key when it is an array of int32 (shared with the File, not to be
// modified), or a new slice converted from an array of another integer type whose every element
// fits in an int32.
func (f *File) Int32s(key string) ([]int32, bool) {
	switch v := f.kv[key].(type) {
	case []int32:
		return v, true
	case []int8:
		return convert[int32](v), true
	case []uint8:
		return convert[int32](v), true
	case []int16:
		return convert[int32](v), true
	case []uint16:
		return convert[int32](v), true
	case []uint32:
		return convertIf[int32](v, func(x uint32) bool { return x <= math.MaxInt32 })
	case []int64:
		return convertIf[int32](v, func(x int64) bool { return x >= math.MinInt32 && x <= math.MaxInt32 })
	case []uint64:
		return convertIf[int32](v, func(x uint64) bool { return x <= math.MaxInt32 })
	}
	return nil, false
}

type number interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

func convert[D, S number](src []S) []D {
	dst := make([]D, len(src))
	for i, x := range src {
		dst[i] = D(x)
	}
	return dst
}

func convertIf[D, S number](src []S, fits func(S) bool) ([]D, bool) {
	for _, x := range src {
		if !fits(x) {
			return nil, false
		}
	}
	return convert[D](src), true
}

// Architecture returns general.architecture ("llama", "qwen2", …), or "" when it is missing.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// Tensors returns the tensor infos in file order. The Dims slices are shared with the File and
// must not be modified.
func (f *File) Tensors() []TensorInfo { return slices.Clone(f.tensors) }

// Tensor returns the info of the tensor called name.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.tensors[i], true
}

// TensorData returns the raw bytes of the tensor called name (TensorInfo.Bytes of them). The
// slice aliases the File's read-only mapping: it must not be modified, and must not be used
// after Close.
func (f *File) TensorData(name string) ([]byte, error) {
	i, ok := f.index[name]
	if !ok {
		return nil, fmt.Errorf("gguf: no tensor %q", name)
	}
	t := f.tensors[i]
	n := t.Bytes()
	if n == 0 {
		return []byte{}, nil
	}
	switch {
	case f.closed:
		return nil, fmt.Errorf("gguf: tensor %q: file is closed", name)
	case f.tdata != nil:
		return f.tdata[i], nil
	case f.data == nil:
		return nil, fmt.Errorf("gguf: tensor %q: no tensor data (the File came from Read; use Open)", name)
	}
	// Read checked DataOffset+Offset+n <= size, so this slice is in range.
	return f.data[t.Offset : t.Offset+n : t.Offset+n], nil
}
