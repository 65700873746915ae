//go:build (!amd64 && !arm64) || purego

package wkern

import "github.com/kvlab/kvlab/native/gguf"

var asmDots = map[gguf.Type]rowDot{}

var asmDots4 = map[gguf.Type]rowDot4{}

const hasAVX2 = false

// asmOn reports whether this CPU runs asmDots: there are none.
const asmOn = false
