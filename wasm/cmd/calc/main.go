//go:build js && wasm

// Command calc is kvlab's planner compiled to WebAssembly for the /plan page. It exposes one
// global object, kvlab, to the page's script:
//
//	kvlab.plan(entries) → {html, choice, reason} or {error, html}: the results fragment for the
//	                      form's fields, given as [[name, value], …] (what [...new FormData(form)]
//	                      yields; see planview), computed in the browser.
//	kvlab.readGGUF(file) → Promise of {key, name, notes} or {error}: reads only the header of a
//	                      dropped File through File.slice (the file is never uploaded) and keeps
//	                      its shape under key, a value for the form's preset field.
//	kvlab.version       → the Go version that built the module.
//
// When ready it calls globalThis.kvlabReady() if the page defined it.
package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"syscall/js"

	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/ggufshape"
	"github.com/kvlab/kvlab/plan/planview"
)

// files holds the shapes of dropped GGUF files by their preset key.
var (
	filesMu sync.Mutex
	files   = map[string]calc.Shape{}
)

func main() {
	api := js.Global().Get("Object").New()
	api.Set("plan", js.FuncOf(plan))
	api.Set("readGGUF", js.FuncOf(readGGUF))
	api.Set("version", runtime.Version())
	js.Global().Set("kvlab", api)
	if ready := js.Global().Get("kvlabReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// plan computes the results fragment for a URL-encoded form.
func plan(_ js.Value, args []js.Value) (result any) {
	defer func() {
		if r := recover(); r != nil { // a planner bug must not kill the page's calculator
			result = map[string]any{"error": fmt.Sprint("internal error: ", r)}
		}
	}()
	if len(args) != 1 || !js.Global().Get("Array").Call("isArray", args[0]).Bool() {
		return map[string]any{"error": "kvlab.plan wants one array of [name, value] pairs"}
	}
	v := planview.Values{}
	for i, n := 0, args[0].Length(); i < n; i++ {
		e := args[0].Index(i)
		if e.Type() != js.TypeObject || e.Length() != 2 || e.Index(0).Type() != js.TypeString || e.Index(1).Type() != js.TypeString {
			return map[string]any{"error": fmt.Sprintf("kvlab.plan: entry %d is not a [name, value] pair of strings", i)}
		}
		name := e.Index(0).String()
		v[name] = append(v[name], e.Index(1).String())
	}
	filesMu.Lock()
	snapshot := make(map[string]calc.Shape, len(files))
	for k, s := range files {
		snapshot[k] = s
	}
	filesMu.Unlock()
	res, err := planview.Compute(v, snapshot)
	if err != nil {
		return map[string]any{"error": err.Error(), "html": planview.RenderError(err)}
	}
	return map[string]any{
		"html":   planview.Render(res),
		"choice": res.Report.Policy.Format,
		"reason": res.Report.Policy.Reason,
	}
}

// readGGUF parses a dropped File's header and returns a Promise of its preset key.
func readGGUF(_ js.Value, args []js.Value) any {
	promise := js.Global().Get("Promise")
	return promise.New(js.FuncOf(func(_ js.Value, pr []js.Value) any {
		resolve := pr[0]
		go func() {
			resolve.Invoke(readFile(args))
		}()
		return nil
	}))
}

func readFile(args []js.Value) (result map[string]any) {
	defer func() {
		if r := recover(); r != nil {
			result = map[string]any{"error": fmt.Sprint("internal error: ", r)}
		}
	}()
	if len(args) != 1 || args[0].Type() != js.TypeObject || args[0].Get("slice").Type() != js.TypeFunction {
		return map[string]any{"error": "kvlab.readGGUF wants one File"}
	}
	file := args[0]
	name := file.Get("name").String()
	r := &fileReader{file: file, size: int64(file.Get("size").Float())}
	s, err := ggufshape.Read(r, r.size)
	if err != nil {
		return map[string]any{"error": name + ": " + err.Error()}
	}
	key := "file:" + name
	filesMu.Lock()
	files[key] = s
	filesMu.Unlock()
	notes := js.Global().Get("Array").New()
	for _, n := range s.Notes {
		notes.Call("push", n)
	}
	return map[string]any{"key": key, "name": s.Name, "notes": notes, "read": r.read}
}

// fileReader is an io.ReaderAt over a browser File: each read awaits File.slice(…).arrayBuffer()
// for a whole block, and keeps the last block, so the header is read in a few large slices and
// nothing past it is touched.
type fileReader struct {
	file  js.Value
	size  int64
	block []byte
	at    int64
	read  int64 // bytes fetched from the file
}

const blockSize = 1 << 20

func (r *fileReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.size {
			return n, io.EOF
		}
		if r.block == nil || pos < r.at || pos >= r.at+int64(len(r.block)) {
			start := pos - pos%blockSize
			b, err := r.fetch(start, min(start+blockSize, r.size))
			if err != nil {
				return n, err
			}
			r.block, r.at = b, start
		}
		n += copy(p[n:], r.block[pos-r.at:])
	}
	return n, nil
}

// fetch reads bytes [start, end) of the file, waiting on the browser's promise.
func (r *fileReader) fetch(start, end int64) ([]byte, error) {
	done := make(chan struct{})
	var buf []byte
	var ferr error
	onOK := js.FuncOf(func(_ js.Value, a []js.Value) any {
		u8 := js.Global().Get("Uint8Array").New(a[0])
		buf = make([]byte, u8.Get("length").Int())
		js.CopyBytesToGo(buf, u8)
		close(done)
		return nil
	})
	onErr := js.FuncOf(func(_ js.Value, a []js.Value) any {
		ferr = fmt.Errorf("reading the file: %s", a[0].Call("toString").String())
		close(done)
		return nil
	})
	defer onOK.Release()
	defer onErr.Release()
	r.file.Call("slice", float64(start), float64(end)).Call("arrayBuffer").Call("then", onOK, onErr)
	<-done
	r.read += int64(len(buf))
	return buf, ferr
}
