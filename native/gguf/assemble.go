package gguf

import (
	"fmt"
	"math"
	"os"
)

// Tensor is a tensor info with its data, for Assemble.
type Tensor struct {
	TensorInfo
	// Data is the tensor's bytes as ggml lays its type out: TensorInfo.Bytes of them.
	Data []byte
}

// Assemble builds a File from metadata and tensors that are not a GGUF file on disk: a model
// folder in another format read as if it had been converted (native/hf), its tensor data mapped
// from its own files or converted in memory. The File behaves as one from Open: Value, Tensor
// and TensorData give kv and tensors back (TensorData the Data slices themselves), Close calls
// release (nil for none). size is what Size reports (the bytes on disk).
//
// Metadata values must be of the Go types Value returns (uint8 … float64, bool, string, typed
// slices of those, []any for arrays of arrays); an int is stored as an int32 or int64. Keys and
// tensor names must be unique, every tensor 1 to MaxDims dims of a known type whose Data is
// exactly Bytes long.
func Assemble(kv []KV, tensors []Tensor, size int64, release func() error) (*File, error) {
	f := &File{Version: 3, Alignment: DefaultAlignment, size: size, kv: make(map[string]any, len(kv)),
		index: make(map[string]int, len(tensors)), release: release}
	for _, p := range kv {
		if _, dup := f.kv[p.Key]; dup {
			return nil, fmt.Errorf("gguf: duplicate metadata key %q", p.Key)
		}
		if err := checkValue(p.Value, 0); err != nil {
			return nil, fmt.Errorf("gguf: metadata %q: %w", p.Key, err)
		}
		v := p.Value
		switch x := v.(type) {
		case int:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				v = int32(x)
			} else {
				v = int64(x)
			}
		case []int:
			if t, _ := sliceType(x); t == valInt32 {
				v = convertInts[int32](x)
			} else {
				v = convertInts[int64](x)
			}
		}
		f.keys = append(f.keys, p.Key)
		f.kv[p.Key] = v
	}
	var off uint64
	f.tdata = make([][]byte, len(tensors))
	for i, t := range tensors {
		if _, dup := f.index[t.Name]; dup {
			return nil, fmt.Errorf("gguf: duplicate tensor %q", t.Name)
		}
		if len(t.Dims) == 0 || len(t.Dims) > MaxDims {
			return nil, fmt.Errorf("gguf: tensor %q has %d dims, want 1 to %d", t.Name, len(t.Dims), MaxDims)
		}
		n := uint64(1)
		for _, d := range t.Dims {
			if d == 0 || d > math.MaxInt64/n {
				return nil, fmt.Errorf("gguf: tensor %q: dims %v are empty or too large", t.Name, t.Dims)
			}
			n *= d
		}
		if t.Type.BlockSize() == 0 || t.Dims[0]%uint64(t.Type.BlockSize()) != 0 {
			return nil, fmt.Errorf("gguf: tensor %q: type %s cannot hold rows of %d values", t.Name, t.Type, t.Dims[0])
		}
		if b := t.Bytes(); b == 0 || uint64(len(t.Data)) != b {
			return nil, fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d", t.Name, len(t.Data), b)
		}
		info := t.TensorInfo
		info.Dims = append([]uint64(nil), t.Dims...)
		info.Offset = off
		off += uint64(len(t.Data))
		f.index[t.Name] = i
		f.tensors = append(f.tensors, info)
		f.tdata[i] = t.Data[:len(t.Data):len(t.Data)]
	}
	return f, nil
}

func convertInts[D int32 | int64](src []int) []D {
	dst := make([]D, len(src))
	for i, x := range src {
		dst[i] = D(x)
	}
	return dst
}

// MapFile returns the bytes of the regular file at path, mapped read-only with mmap on linux
// and darwin and read into memory elsewhere, and the function that releases them (nil when
// there is nothing to release). It is how a File from Assemble maps the files its tensors live
// in.
func MapFile(path string) ([]byte, func() error, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: not a regular file", path)
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size() == 0 {
		return []byte{}, nil, nil
	}
	data, release, err := mapData(fd, 0, st.Size())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, release, nil
}
