// Package assets holds the static files the kvlab binary serves, embedded at build time:
// calc.wasm (the planner compiled to WebAssembly from wasm/cmd/calc), wasm_exec.js (the Go
// runtime's JavaScript glue, copied from the toolchain that built calc.wasm), kvlab.css, plan.js
// and the dashboard's hand-written scripts (common.js, chat.js, lab.js; no build step). calc.wasm and wasm_exec.js are generated and committed so that `go run ./cmd/kvlab
// serve` and `go install` need no extra step; `go generate ./assets` rebuilds both.
package assets

import "embed"

//go:generate go run gen.go

// FS holds the files, at the root.
//
//go:embed calc.wasm wasm_exec.js kvlab.css plan.js common.js chat.js lab.js favicon.svg vendor
var FS embed.FS

// WasmFile is the calculator module's name in FS.
const WasmFile = "calc.wasm"
