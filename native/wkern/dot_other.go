//go:build !amd64 || purego

package wkern

import "github.com/kvlab/kvlab/native/gguf"

var asmDots = map[gguf.Type]rowDot{}

const hasAVX2 = false
