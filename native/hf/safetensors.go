package hf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// MaxHeader bounds the JSON header of a safetensors file (the format's own limit is 100 MB).
const MaxHeader = 100 << 20

// maxTensorsPerFile bounds the entries of one header.
const maxTensorsPerFile = 1 << 20

// ErrNotSafetensors reports a file too short for, or not shaped like, a safetensors header.
var ErrNotSafetensors = errors.New("hf: not a safetensors file")

// stTensor is one tensor of a safetensors file: its dtype, its shape (outermost first, as
// PyTorch writes it) and its bytes [Begin, End) of the data section.
type stTensor struct {
	Name       string
	Dtype      string
	Shape      []uint64
	Begin, End uint64
}

// dtypeSize is the byte size of each safetensors dtype the format defines; 0 for sub-byte ones.
var dtypeSize = map[string]uint64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
	"F4": 0, "F6_E2M3": 0, "F6_E3M2": 0,
}

// headerLen reads the 8-byte little-endian header length and checks it against the file size.
func headerLen(prefix []byte, fileSize int64) (int, error) {
	if len(prefix) < 8 || fileSize < 8 {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrNotSafetensors, fileSize)
	}
	n := binary.LittleEndian.Uint64(prefix)
	if n < 2 || n > MaxHeader || n > uint64(fileSize-8) {
		return 0, fmt.Errorf("%w: header length %d (file of %d bytes, at most %d allowed)", ErrNotSafetensors, n, fileSize, MaxHeader)
	}
	return int(n), nil
}

// parseHeader parses a safetensors JSON header. dataSize is the length of the data section
// (the file less 8 and the header): every tensor's byte range is checked against it and
// against its dtype and shape. The tensors come back sorted by their begin offset; __metadata__
// is returned as its string pairs.
func parseHeader(hdr []byte, dataSize uint64) ([]stTensor, map[string]string, error) {
	hdr = bytes.TrimRight(hdr, " ") // the format pads the header with spaces
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, nil, fmt.Errorf("%w: the header is not a JSON object", ErrNotSafetensors)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrNotSafetensors, err)
	}
	if len(raw) > maxTensorsPerFile {
		return nil, nil, fmt.Errorf("hf: safetensors header has %d entries, more than %d", len(raw), maxTensorsPerFile)
	}
	var meta map[string]string
	out := make([]stTensor, 0, len(raw))
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &meta); err != nil {
				return nil, nil, fmt.Errorf("hf: safetensors __metadata__ is not an object of strings: %v", err)
			}
			continue
		}
		var e struct {
			Dtype       string   `json:"dtype"`
			Shape       []uint64 `json:"shape"`
			DataOffsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q: %v", clip(name), err)
		}
		t := stTensor{Name: name, Dtype: e.Dtype, Shape: e.Shape}
		size, known := dtypeSize[e.Dtype]
		switch {
		case !known:
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q: unknown dtype %q", clip(name), clip(e.Dtype))
		case len(e.DataOffsets) != 2:
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q: data_offsets has %d values, want 2", clip(name), len(e.DataOffsets))
		case len(e.Shape) > 8:
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q has %d dims", clip(name), len(e.Shape))
		}
		t.Begin, t.End = e.DataOffsets[0], e.DataOffsets[1]
		if t.Begin > t.End || t.End > dataSize {
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q: bytes [%d, %d) are outside the %d-byte data section",
				clip(name), t.Begin, t.End, dataSize)
		}
		n := uint64(1)
		for _, d := range t.Shape {
			if d != 0 && n > math.MaxInt64/d {
				return nil, nil, fmt.Errorf("hf: safetensors tensor %q: shape %v overflows", clip(name), t.Shape)
			}
			n *= d
		}
		if size != 0 && n > math.MaxInt64/size {
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q: shape %v overflows", clip(name), t.Shape)
		}
		if size != 0 && n*size != t.End-t.Begin {
			return nil, nil, fmt.Errorf("hf: safetensors tensor %q: %s %v needs %d bytes, data_offsets give %d",
				clip(name), t.Dtype, t.Shape, n*size, t.End-t.Begin)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Begin != out[j].Begin {
			return out[i].Begin < out[j].Begin
		}
		return out[i].Name < out[j].Name
	})
	return out, meta, nil
}

// clip bounds a name quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
