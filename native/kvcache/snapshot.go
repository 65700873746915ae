package kvcache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// KV snapshots: one sequence's cache and tokens on disk, versioned.
//
//	header   magic "KVLABKV\x00", version u32, body length u32, body, CRC-32C of all before it
//	body     model hash [32]byte, model name (u16 length + bytes), layers, KV heads, head dims K
//	         and V (u32 each), the pair "K/V" (u8 length + bytes), rotation seed u64, K gain
//	         (f32 bits), overlay window, sinks, recent window (u32 each), cells u32, then the
//	         cells' token ids (i32 each)
//	sections one per layer, in order: layer u32, payload length u64, payload, CRC-32C of payload
//
// and nothing after the last section. All integers are little-endian.
//
// Version 2 (SnapshotVersion) stores the cache as it is held: per KV head the K and V stores
// (cells held u32, the codec's state (kvq.CodecState): rotation i32, K scales count u32 + f32s,
// K offsets count u32 + f32s, then the rows' bytes in the pair's format), then the f16 cells: for a mixed cache the tail's end
// u32 and, per head, K then V rows of the sink cells and the window's cells (f16, cell order);
// for an overlay the exact cells' count u32 and positions u32 and, per head, their K then V
// rows (f16). Version 1 stores every cell in f32 in the value domain: per layer K (cells ×
// KV heads × head dim K) then V.
//
// Loading into a cache of the same configuration (pair, rotation seed, gain, window, sinks)
// restores it byte for byte, so a generation continues exactly as if it had not stopped. An
// older version or another configuration is upgraded: every cell is decoded to the value
// domain and written into the cache as one prefill would write it (quantized to the cache's
// pair), and the file is left as it is until the next save. Another model or cache shape is
// rejected (ErrSnapshotModel, ErrSnapshotShape), and a truncated or corrupt file is detected
// (ErrSnapshotTruncated, ErrSnapshotCorrupt, checksums over every part) and never misread: on
// every error the cache is left empty.

// SnapshotVersion is the version SaveSnapshot writes.
const SnapshotVersion = 2

var snapMagic = [8]byte{'K', 'V', 'L', 'A', 'B', 'K', 'V', 0}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot errors; every error of ReadSnapshot and LoadSnapshot wraps one of them.
var (
	ErrSnapshotNotKV       = errors.New("not a kvlab KV snapshot")
	ErrSnapshotVersion     = errors.New("KV snapshot version not supported")
	ErrSnapshotModel       = errors.New("KV snapshot of another model")
	ErrSnapshotShape       = errors.New("KV snapshot of another cache shape")
	ErrSnapshotTooLong     = errors.New("KV snapshot does not fit the cache")
	ErrSnapshotTruncated   = errors.New("KV snapshot is truncated")
	ErrSnapshotCorrupt     = errors.New("KV snapshot is corrupt")
	ErrSnapshotUnsupported = errors.New("KV snapshots do not cover this cache")
)

// Identity names the model a snapshot belongs to.
type Identity struct {
	// Name is the model file's name, for messages (at most 255 bytes are stored).
	Name string
	// Hash decides: the architecture, hyperparameters and tensors (names, types, shapes and a
	// sample of their bytes), as the caller computes it.
	Hash [32]byte
}

// SnapshotInfo describes a loaded snapshot.
type SnapshotInfo struct {
	Version int
	// Pair is the snapshot's format pair ("f32" for version 1).
	Pair  string
	Cells int
	// Upgraded reports that the cells were re-encoded into the cache's pair (an older version
	// or another configuration); From says from what.
	Upgraded bool
	From     string
}

// snapHeader is a snapshot's parsed header.
type snapHeader struct {
	version             int
	id                  Identity
	layers, hn, dk, dv  int
	pairName            string
	pair                kvq.Pair
	seed                uint64
	kgain               float32
	window, sinks, rcnt int
	cells               int
	tokens              []int32
}

const maxSnapName = 255

// SaveSnapshot writes c and the tokens its cells hold to path atomically: into a temporary
// file beside it, synced, then renamed over path (and the directory synced), so a crash during
// the save leaves the previous snapshot whole.
func SaveSnapshot(path string, c *Cache, id Identity, tokens []int32) error {
	if err := c.snapshottable(tokens); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".*.tmp")
	if err != nil {
		return fmt.Errorf("kvcache: snapshot: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := WriteSnapshot(w, c, id, tokens); err != nil {
		return fail(err)
	}
	if err := w.Flush(); err != nil {
		return fail(fmt.Errorf("kvcache: snapshot: %w", err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("kvcache: snapshot: %w", err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("kvcache: snapshot: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("kvcache: snapshot: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every platform syncs directories
		d.Close()
	}
	return nil
}

// snapshotSectionHook, when set (tests), runs after each section SaveSnapshot writes.
var snapshotSectionHook func(layer int)

func (c *Cache) snapshottable(tokens []int32) error {
	if c.cfg.layered() {
		return fmt.Errorf("kvcache: %w: its layers store different pairs", ErrSnapshotUnsupported)
	}
	if c.cfg.Pair.K.Grouped() {
		return fmt.Errorf("kvcache: %w: %s keeps per-group state a snapshot does not hold", ErrSnapshotUnsupported, c.cfg.Pair.K)
	}
	for l := range c.layers {
		if c.cfg.layerWindow(l) > 0 {
			return fmt.Errorf("kvcache: %w: layer %d is a sliding-window ring", ErrSnapshotUnsupported, l)
		}
	}
	if len(tokens) != c.n {
		return fmt.Errorf("kvcache: snapshot of %d cells with %d tokens: they must match", c.n, len(tokens))
	}
	for l, ly := range c.layers {
		if ly.written != c.n {
			return fmt.Errorf("kvcache: snapshot: layer %d holds %d uncommitted cells", l, ly.written-c.n)
		}
	}
	return nil
}

// WriteSnapshot writes c and its tokens in the current version to w.
func WriteSnapshot(w io.Writer, c *Cache, id Identity, tokens []int32) error {
	if err := c.snapshottable(tokens); err != nil {
		return err
	}
	cfg := c.cfg
	var b bytes.Buffer
	b.Write(id.Hash[:])
	name := id.Name
	if len(name) > maxSnapName {
		name = name[:maxSnapName]
	}
	putU16(&b, uint16(len(name)))
	b.WriteString(name)
	for _, v := range []int{cfg.Layers, cfg.KVHeads, cfg.HeadDimK, cfg.HeadDimV} {
		putU32(&b, uint32(v))
	}
	pn := cfg.Pair.KName() + "/" + cfg.Pair.VName()
	b.WriteByte(byte(len(pn)))
	b.WriteString(pn)
	putU64(&b, cfg.Seed)
	putU32(&b, math.Float32bits(cfg.KGain))
	for _, v := range []int{cfg.Window, cfg.Sinks, cfg.Recent, c.n} {
		putU32(&b, uint32(v))
	}
	for _, t := range tokens {
		putU32(&b, uint32(t))
	}
	if err := writeHeader(w, SnapshotVersion, b.Bytes()); err != nil {
		return err
	}
	for l := range c.layers {
		b.Reset()
		c.layerPayload(&b, l)
		var sh [12]byte
		binary.LittleEndian.PutUint32(sh[:4], uint32(l))
		binary.LittleEndian.PutUint64(sh[4:], uint64(b.Len()))
		if err := writeSection(w, sh[:], b.Bytes()); err != nil {
			return err
		}
		if snapshotSectionHook != nil {
			snapshotSectionHook(l)
		}
	}
	return nil
}

// writeHeader writes the header: magic, version, body length, body, CRC-32C of all of it.
func writeHeader(w io.Writer, version uint32, body []byte) error {
	var h bytes.Buffer
	h.Write(snapMagic[:])
	putU32(&h, version)
	putU32(&h, uint32(len(body)))
	h.Write(body)
	putU32(&h, crc32.Checksum(h.Bytes(), castagnoli))
	_, err := w.Write(h.Bytes())
	return wrapWrite(err)
}

func writeSection(w io.Writer, head, payload []byte) error {
	if _, err := w.Write(head); err != nil {
		return wrapWrite(err)
	}
	if _, err := w.Write(payload); err != nil {
		return wrapWrite(err)
	}
	var crc [4]byte
	binary.LittleEndian.PutUint32(crc[:], crc32.Checksum(payload, castagnoli))
	_, err := w.Write(crc[:])
	return wrapWrite(err)
}

func wrapWrite(err error) error {
	if err != nil {
		return fmt.Errorf("kvcache: writing a snapshot: %w", err)
	}
	return nil
}

// layerPayload appends layer l's version-2 payload.
func (c *Cache) layerPayload(b *bytes.Buffer, l int) {
	ly := c.layers[l]
	for h := range ly.k {
		putStore(b, ly.k[h].(rowHolder))
		putStore(b, ly.v[h].(rowHolder))
	}
	switch {
	case ly.mx != nil:
		m := ly.mx
		putU32(b, uint32(min(m.q, ly.written))) // the tail's end (the written cells when all are sinks)
		for h := 0; h < m.hn; h++ {
			for _, isK := range []bool{true, false} {
				for cell := 0; cell < ly.written; cell++ {
					if cell >= m.sinks && cell < m.q {
						continue
					}
					s, r := m.f16Row(cell, isK, h)
					rb := s.Codec.RowBytes()
					b.Write(s.Data[r*rb : (r+1)*rb])
				}
			}
		}
	case ly.ov != nil:
		o := ly.ov
		var cells []int
		for cell := 0; cell < ly.written; cell++ {
			if _, ok := o.exact(cell, ly.written); ok {
				cells = append(cells, cell)
			}
		}
		putU32(b, uint32(len(cells)))
		for _, cell := range cells {
			putU32(b, uint32(cell))
		}
		for h := 0; h < o.hn; h++ {
			for _, cell := range cells {
				s, _ := o.exact(cell, ly.written)
				putF16s(b, o.rowK(s, h))
			}
			for _, cell := range cells {
				s, _ := o.exact(cell, ly.written)
				putF16s(b, o.rowV(s, h))
			}
		}
	}
}

func putStore(b *bytes.Buffer, r rowHolder) {
	s := r.base()
	putU32(b, uint32(s.N))
	st := kvq.StateOf(s.Codec)
	putU32(b, uint32(int32(st.Rotation)))
	for _, v := range [][]float32{st.Scales, st.Means} {
		putU32(b, uint32(len(v)))
		for _, x := range v {
			putU32(b, math.Float32bits(x))
		}
	}
	for i := 0; i < s.N; i++ {
		b.Write(r.rowData(i))
	}
}

func putF16s(b *bytes.Buffer, v []uint16) {
	for _, x := range v {
		putU16(b, x)
	}
}

func putU16(b *bytes.Buffer, v uint16) { b.Write(binary.LittleEndian.AppendUint16(nil, v)) }
func putU32(b *bytes.Buffer, v uint32) { b.Write(binary.LittleEndian.AppendUint32(nil, v)) }
func putU64(b *bytes.Buffer, v uint64) { b.Write(binary.LittleEndian.AppendUint64(nil, v)) }

// LoadSnapshot reads the snapshot at path into c (ReadSnapshot). A file that does not exist is
// an error wrapping fs.ErrNotExist.
func LoadSnapshot(path string, c *Cache, id Identity) ([]int32, SnapshotInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		c.Reset()
		return nil, SnapshotInfo{}, fmt.Errorf("kvcache: snapshot: %w", err)
	}
	defer f.Close()
	return ReadSnapshot(bufio.NewReaderSize(f, 1<<20), c, id)
}

// ReadSnapshot reads a snapshot into c, which it empties first, and returns the tokens of its
// cells. The snapshot must be of the model id and of c's shape (layers, KV heads, head dims)
// and fit c's capacity. On any error c is left empty and the error wraps one of the snapshot
// errors (or the reader's own).
func ReadSnapshot(r io.Reader, c *Cache, id Identity) ([]int32, SnapshotInfo, error) {
	c.Reset()
	tokens, info, err := c.readSnapshot(r, id)
	if err != nil {
		c.Reset()
		return nil, SnapshotInfo{}, fmt.Errorf("kvcache: %w", err)
	}
	return tokens, info, nil
}

func (c *Cache) readSnapshot(r io.Reader, id Identity) ([]int32, SnapshotInfo, error) {
	hd, err := c.readHeader(r)
	if err != nil {
		return nil, SnapshotInfo{}, err
	}
	if hd.id.Hash != id.Hash {
		return nil, SnapshotInfo{}, fmt.Errorf("%w: it was saved from %q, not from this %q", ErrSnapshotModel, hd.id.Name, limits.Clip(id.Name, 255))
	}
	cfg := c.cfg
	if hd.layers != cfg.Layers || hd.hn != cfg.KVHeads || hd.dk != cfg.HeadDimK || hd.dv != cfg.HeadDimV {
		return nil, SnapshotInfo{}, fmt.Errorf("%w: %d layers × %d KV heads × %d/%d dims, the cache %d × %d × %d/%d",
			ErrSnapshotShape, hd.layers, hd.hn, hd.dk, hd.dv, cfg.Layers, cfg.KVHeads, cfg.HeadDimK, cfg.HeadDimV)
	}
	if hd.cells > cfg.MaxCells {
		return nil, SnapshotInfo{}, fmt.Errorf("%w: %d cells, the cache holds %d", ErrSnapshotTooLong, hd.cells, cfg.MaxCells)
	}
	info := SnapshotInfo{Version: hd.version, Pair: hd.pairName, Cells: hd.cells}
	exact := hd.version == SnapshotVersion && hd.pair == cfg.Pair && hd.seed == cfg.Seed && hd.kgain == cfg.KGain &&
		hd.window == cfg.Window && hd.sinks == cfg.Sinks && hd.rcnt == cfg.Recent
	if !exact {
		info.Upgraded = true
		info.From = describeSnap(hd)
	}
	for l := 0; l < hd.layers; l++ {
		payload, err := readSection(r, l, hd.maxPayload())
		if err != nil {
			return nil, SnapshotInfo{}, err
		}
		if exact {
			err = c.restoreLayer(l, hd, payload)
		} else {
			err = c.upgradeLayer(l, hd, payload)
		}
		if err != nil {
			return nil, SnapshotInfo{}, fmt.Errorf("%w: layer %d: %v", ErrSnapshotCorrupt, l, err)
		}
	}
	var one [1]byte
	if n, _ := io.ReadFull(r, one[:]); n != 0 {
		return nil, SnapshotInfo{}, fmt.Errorf("%w: bytes after the last layer", ErrSnapshotCorrupt)
	}
	if hd.cells > 0 {
		if err := c.Commit(hd.cells); err != nil {
			return nil, SnapshotInfo{}, fmt.Errorf("%w: %v", ErrSnapshotCorrupt, err)
		}
	}
	return hd.tokens, info, nil
}

func describeSnap(hd *snapHeader) string {
	if hd.version == 1 {
		return "version 1 (f32 cells)"
	}
	s := fmt.Sprintf("version %d, %s", hd.version, hd.pairName)
	if hd.window > 0 {
		s += fmt.Sprintf(", window %d", hd.window)
	}
	if hd.rcnt > 0 {
		s += fmt.Sprintf(", recent %d", hd.rcnt)
	}
	if hd.sinks > 0 {
		s += fmt.Sprintf(", sinks %d", hd.sinks)
	}
	if hd.seed != 0 {
		s += fmt.Sprintf(", seed %d", hd.seed)
	}
	return s
}

// snapFixedBody bounds the header body without its tokens.
const snapFixedBody = 32 + 2 + maxSnapName + 4*4 + 1 + 255 + 8 + 4 + 4*4

// SnapshotCells reads the header of the snapshot at path and returns how many cells it holds
// (to size a cache before loading it); the rest of the file is read by LoadSnapshot.
func SnapshotCells(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("kvcache: snapshot: %w", err)
	}
	defer f.Close()
	hd, err := readHeader(bufio.NewReader(f), limits.MaxCtx)
	if err != nil {
		return 0, fmt.Errorf("kvcache: %w", err)
	}
	return hd.cells, nil
}

func (c *Cache) readHeader(r io.Reader) (*snapHeader, error) { return readHeader(r, c.cfg.MaxCells) }

// readHeader reads and checks a header whose cells are at most maxCells.
func readHeader(r io.Reader, maxCells int) (*snapHeader, error) {
	var pre [16]byte
	if err := readFull(r, pre[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(pre[:8], snapMagic[:]) {
		return nil, ErrSnapshotNotKV
	}
	hd := &snapHeader{version: int(binary.LittleEndian.Uint32(pre[8:]))}
	if hd.version < 1 || hd.version > SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrSnapshotVersion, hd.version, SnapshotVersion)
	}
	n := binary.LittleEndian.Uint32(pre[12:])
	if int64(n) > snapFixedBody+4*int64(maxCells) {
		// Longer than any header whose cells fit the cache: a corrupt length or a snapshot
		// too long for it; the checksum cannot be trusted to tell them apart, so say both.
		return nil, fmt.Errorf("%w: a header of %d bytes (a corrupt length, or more cells than the cache's %d)", ErrSnapshotCorrupt, n, maxCells)
	}
	body := make([]byte, n+4)
	if err := readFull(r, body); err != nil {
		return nil, err
	}
	crc := crc32.Update(crc32.Checksum(pre[:], castagnoli), castagnoli, body[:n])
	if crc != binary.LittleEndian.Uint32(body[n:]) {
		return nil, fmt.Errorf("%w: header checksum mismatch", ErrSnapshotCorrupt)
	}
	d := &decoder{b: body[:n]}
	copy(hd.id.Hash[:], d.bytes(32))
	hd.id.Name = string(d.bytes(int(d.u16())))
	hd.layers, hd.hn, hd.dk, hd.dv = d.int(), d.int(), d.int(), d.int()
	hd.pairName = string(d.bytes(int(d.u8())))
	hd.seed = d.u64()
	hd.kgain = math.Float32frombits(d.u32())
	hd.window, hd.sinks, hd.rcnt, hd.cells = d.int(), d.int(), d.int(), d.int()
	if d.err == nil && hd.cells >= 0 && len(d.b) != 4*hd.cells {
		d.err = fmt.Errorf("%d cells need %d token bytes, the header has %d", hd.cells, 4*hd.cells, len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrSnapshotCorrupt, d.err)
	}
	hd.tokens = make([]int32, hd.cells)
	for i := range hd.tokens {
		hd.tokens[i] = int32(d.u32())
	}
	if hd.version == 1 {
		hd.pairName = "f32"
		return hd, nil
	}
	p, err := kvq.ParsePair(hd.pairName)
	if err != nil {
		return nil, fmt.Errorf("%w: header: pair %q: %v", ErrSnapshotCorrupt, limits.Clip(hd.pairName, 32), err)
	}
	hd.pair, hd.pairName = p, p.String()
	if p.K.Grouped() {
		return nil, fmt.Errorf("%w: header: %s is not stored in snapshots", ErrSnapshotCorrupt, p)
	}
	if hd.window > hd.cells+limits.MaxCtx || hd.sinks > limits.MaxCtx || hd.rcnt > limits.MaxCtx || (hd.window > 0 && hd.rcnt > 0) {
		return nil, fmt.Errorf("%w: header: window %d, sinks %d, recent %d", ErrSnapshotCorrupt, hd.window, hd.sinks, hd.rcnt)
	}
	return hd, nil
}

// maxPayload bounds one layer's payload from the header (whose shape matches the cache's).
func (hd *snapHeader) maxPayload() int64 {
	cells, hn := int64(hd.cells), int64(hd.hn)
	if hd.version == 1 {
		return cells * hn * int64(hd.dk+hd.dv) * 4
	}
	stores := hn * (2*(4+4+4+4) + 4*8*int64(hd.dk) + int64(hd.pair.K.RowBytes(hd.dk))*cells + int64(hd.pair.V.RowBytes(hd.dv))*cells)
	f16 := 4 + cells*4 + hn*cells*int64(2*hd.dk+2*hd.dv)
	return stores + f16
}

// readSection reads layer l's section and checks its checksum.
func readSection(r io.Reader, l int, max int64) ([]byte, error) {
	var sh [12]byte
	if err := readFull(r, sh[:]); err != nil {
		return nil, fmt.Errorf("layer %d: %w", l, err)
	}
	if got := binary.LittleEndian.Uint32(sh[:4]); got != uint32(l) {
		return nil, fmt.Errorf("%w: section %d is labelled layer %d", ErrSnapshotCorrupt, l, got)
	}
	n := binary.LittleEndian.Uint64(sh[4:])
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: layer %d: %d bytes, at most %d for its cells", ErrSnapshotCorrupt, l, n, max)
	}
	buf := make([]byte, n+4)
	if err := readFull(r, buf); err != nil {
		return nil, fmt.Errorf("layer %d: %w", l, err)
	}
	if crc32.Checksum(buf[:n], castagnoli) != binary.LittleEndian.Uint32(buf[n:]) {
		return nil, fmt.Errorf("%w: layer %d checksum mismatch", ErrSnapshotCorrupt, l)
	}
	return buf[:n], nil
}

func readFull(r io.Reader, b []byte) error {
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ErrSnapshotTruncated
		}
		return fmt.Errorf("reading a snapshot: %w", err)
	}
	return nil
}

// decoder reads little-endian fields from b; the first short read sets err and every later
// read returns zeros.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		if d.err == nil {
			d.err = fmt.Errorf("%d bytes wanted, %d left", n, len(d.b))
		}
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) u8() uint8 {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// int reads a u32 count, at most limits.MaxCtx.
func (d *decoder) int() int {
	v := d.u32()
	if v > limits.MaxCtx && d.err == nil {
		d.err = fmt.Errorf("count %d is over %d", v, limits.MaxCtx)
	}
	return int(v)
}

func (d *decoder) f32s(n int) []float32 {
	b := d.bytes(4 * n)
	if b == nil {
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// storeBlob is one store's part of a version-2 payload.
type storeBlob struct {
	n     int
	state kvq.CodecState
	rows  []byte
}

func (d *decoder) store(rowBytes, dim, maxRows int) storeBlob {
	var s storeBlob
	s.n = d.int()
	if d.err == nil && s.n > maxRows {
		d.err = fmt.Errorf("a store of %d cells, at most %d", s.n, maxRows)
	}
	s.state.Rotation = int(int32(d.u32()))
	for _, dst := range []*[]float32{&s.state.Scales, &s.state.Means} {
		k := d.int()
		if d.err == nil && k != 0 && k != dim {
			d.err = fmt.Errorf("%d calibration values for %d channels", k, dim)
		}
		if k > 0 {
			*dst = d.f32s(k)
		}
	}
	s.rows = d.bytes(s.n * rowBytes)
	return s
}

// restoreLayer loads a version-2 payload of the cache's own configuration byte for byte.
func (c *Cache) restoreLayer(l int, hd *snapHeader, payload []byte) error {
	ly := c.layers[l]
	d := &decoder{b: payload}
	cells := hd.cells
	tailRows := cells
	if ly.mx != nil {
		tailRows = max(cells-ly.mx.sinks, 0)
	}
	if c.pt != nil {
		if err := c.pt.ensure(0, cells); err != nil {
			return err
		}
	}
	for h := range ly.k {
		for _, rh := range []rowHolder{ly.k[h].(rowHolder), ly.v[h].(rowHolder)} {
			st := rh.base()
			b := d.store(st.Codec.RowBytes(), st.Codec.Dim(), min(tailRows, rh.capRows()))
			if d.err != nil {
				return d.err
			}
			if ly.mx == nil && b.n != cells {
				return fmt.Errorf("a store of %d cells, the snapshot holds %d", b.n, cells)
			}
			if st.cal == nil && (b.state.Scales != nil || b.state.Means != nil) {
				return errors.New("a calibration for a store that keeps none")
			}
			if err := kvq.SetState(st.Codec, b.state); err != nil {
				return err
			}
			rb := st.Codec.RowBytes()
			for i := 0; i < b.n; i++ {
				copy(rh.rowData(i), b.rows[i*rb:(i+1)*rb])
			}
			st.N = b.n
		}
	}
	switch {
	case ly.mx != nil:
		m := ly.mx
		q := d.int()
		if cells <= m.sinks {
			if d.err == nil && q != cells {
				return fmt.Errorf("the tail ends at cell %d of %d sink cells", q, cells)
			}
			q = m.sinks
		}
		if d.err == nil && (q < m.sinks || q > cells && cells > m.sinks || (cells > m.sinks && cells-q > m.ring) || q-m.sinks != ly.k[0].Len()) {
			return fmt.Errorf("the tail ends at cell %d of %d (sinks %d, ring %d, tail store %d)", q, cells, m.sinks, m.ring, ly.k[0].Len())
		}
		for h := range ly.k {
			if ly.k[h].Len() != q-m.sinks || ly.v[h].Len() != q-m.sinks {
				return errors.New("the heads' tails differ in length")
			}
		}
		m.q = q
		for h := 0; h < m.hn; h++ {
			for _, isK := range []bool{true, false} {
				for cell := 0; cell < cells; cell++ {
					if cell >= m.sinks && cell < q {
						continue
					}
					s, r := m.f16Row(cell, isK, h)
					rb := s.Codec.RowBytes()
					src := d.bytes(rb)
					if d.err != nil {
						return d.err
					}
					copy(s.Data[r*rb:(r+1)*rb], src)
				}
			}
		}
	case ly.ov != nil:
		o := ly.ov
		cnt := d.int()
		if d.err == nil && cnt > len(o.owner) {
			return fmt.Errorf("%d exact cells for %d overlay slots", cnt, len(o.owner))
		}
		list := make([]int, 0, cnt)
		for i := 0; i < cnt && d.err == nil; i++ {
			cell := d.int()
			if d.err != nil {
				break
			}
			if cell >= cells || (cell >= o.sinks && cell < cells-o.window) || o.slot(cell) < 0 || o.owner[o.slot(cell)] >= 0 {
				return fmt.Errorf("exact cell %d is not one the overlay holds for %d cells", cell, cells)
			}
			o.owner[o.slot(cell)] = cell
			list = append(list, cell)
		}
		for h := 0; h < o.hn && d.err == nil; h++ {
			for _, isK := range []bool{true, false} {
				for _, cell := range list {
					row := o.rowV(o.slot(cell), h)
					if isK {
						row = o.rowK(o.slot(cell), h)
					}
					src := d.bytes(2 * len(row))
					if d.err != nil {
						break
					}
					for j := range row {
						row[j] = binary.LittleEndian.Uint16(src[2*j:])
					}
				}
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%d bytes left over", len(d.b))
	}
	ly.written = cells
	return nil
}

// upgradeLayer decodes a payload of another version or configuration to the value domain and
// writes its cells into the cache as one prefill would.
func (c *Cache) upgradeLayer(l int, hd *snapHeader, payload []byte) error {
	cells, hn, dk, dv := hd.cells, hd.hn, hd.dk, hd.dv
	if cells == 0 {
		if len(payload) != 0 {
			return fmt.Errorf("%d bytes for no cells", len(payload))
		}
		return nil
	}
	k, v := make([]float32, cells*hn*dk), make([]float32, cells*hn*dv)
	if hd.version == 1 {
		if len(payload) != 4*(len(k)+len(v)) {
			return fmt.Errorf("%d bytes, want %d for %d f32 cells", len(payload), 4*(len(k)+len(v)), cells)
		}
		d := &decoder{b: payload}
		copy(k, d.f32s(len(k)))
		copy(v, d.f32s(len(v)))
	} else if err := decodeV2(l, hd, payload, k, v); err != nil {
		return err
	}
	for i, x := range k {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("K value %d is not finite", i)
		}
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("V value %d is not finite", i)
		}
	}
	return c.Write(l, k, v, cells)
}

// decodeV2 decodes layer l of a version-2 payload of any configuration into k and v (cells ×
// KV heads × head dim, value domain); exact f16 cells take precedence over the store's.
func decodeV2(l int, hd *snapHeader, payload []byte, k, v []float32) error {
	cells, hn, dk, dv := hd.cells, hd.hn, hd.dk, hd.dv
	d := &decoder{b: payload}
	sinks := 0
	if hd.rcnt > 0 {
		sinks = min(hd.sinks, cells)
	}
	tailRows := cells - sinks
	heads := make([][2]storeBlob, hn)
	for h := 0; h < hn; h++ {
		for i, f := range []kvq.Format{hd.pair.K, hd.pair.V} {
			dim := dk
			if i == 1 {
				dim = dv
			}
			heads[h][i] = d.store(f.RowBytes(dim), dim, tailRows)
		}
	}
	if d.err != nil {
		return d.err
	}
	q := cells // the store holds cells [off, off+n)
	for h := 0; h < hn; h++ {
		for i, b := range heads[h] {
			f, dim, rot, dst := hd.pair.K, dk, hd.pair.KRotated(), k
			if i == 1 {
				f, dim, rot, dst = hd.pair.V, dv, hd.pair.VRotated(), v
			}
			codec, err := kvq.NewCodec(f, dim, kvq.CodecOptions{Seed: hd.seed, Layer: l, Head: h, Rotate: rot})
			if err != nil {
				return err
			}
			if err := kvq.SetState(codec, b.state); err != nil {
				return err
			}
			if hd.rcnt == 0 && b.n != cells {
				return fmt.Errorf("a store of %d cells, the snapshot holds %d", b.n, cells)
			}
			q = sinks + b.n
			rb := codec.RowBytes()
			for j := 0; j < b.n; j++ {
				cell := sinks + j
				codec.Decode(dst[(cell*hn+h)*dim:(cell*hn+h+1)*dim], b.rows[j*rb:(j+1)*rb])
			}
		}
	}
	f16 := func(dst []float32) {
		src := d.bytes(2 * len(dst))
		for j := range dst {
			if src != nil {
				dst[j] = kvq.F16ToF32(binary.LittleEndian.Uint16(src[2*j:]))
			}
		}
	}
	switch {
	case hd.rcnt > 0:
		if got := d.int(); d.err == nil && got != q {
			return fmt.Errorf("the tail ends at cell %d, its stores at %d", got, q)
		}
		for h := 0; h < hn; h++ {
			for i, dim := range []int{dk, dv} {
				dst := k
				if i == 1 {
					dst = v
				}
				for cell := 0; cell < cells; cell++ {
					if cell >= sinks && cell < q {
						continue
					}
					f16(dst[(cell*hn+h)*dim : (cell*hn+h+1)*dim])
				}
			}
		}
	case hd.window > 0 || hd.sinks > 0:
		cnt := d.int()
		if d.err == nil && cnt > cells {
			return fmt.Errorf("%d exact cells of %d", cnt, cells)
		}
		list := make([]int, 0, min(cnt, cells))
		for i := 0; i < cnt && d.err == nil; i++ {
			cell := d.int()
			if d.err == nil && cell >= cells {
				return fmt.Errorf("exact cell %d of %d", cell, cells)
			}
			list = append(list, cell)
		}
		for h := 0; h < hn && d.err == nil; h++ {
			for i, dim := range []int{dk, dv} {
				dst := k
				if i == 1 {
					dst = v
				}
				for _, cell := range list {
					f16(dst[(cell*hn+h)*dim : (cell*hn+h+1)*dim])
				}
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%d bytes left over", len(d.b))
	}
	return nil
}

// WriteSnapshotV1 writes c in version 1 (every cell f32, value domain, as the reference readers
// reconstruct it), the format older builds wrote; tests use it to check the upgrade path.
func WriteSnapshotV1(w io.Writer, c *Cache, id Identity, tokens []int32) error {
	if len(tokens) != c.n {
		return fmt.Errorf("kvcache: snapshot of %d cells with %d tokens: they must match", c.n, len(tokens))
	}
	cfg := c.cfg
	var b bytes.Buffer
	b.Write(id.Hash[:])
	name := id.Name[:min(len(id.Name), maxSnapName)]
	putU16(&b, uint16(len(name)))
	b.WriteString(name)
	for _, v := range []int{cfg.Layers, cfg.KVHeads, cfg.HeadDimK, cfg.HeadDimV} {
		putU32(&b, uint32(v))
	}
	b.WriteByte(0) // no pair
	putU64(&b, 0)
	putU32(&b, math.Float32bits(1))
	for _, v := range []int{0, 0, 0, c.n} {
		putU32(&b, uint32(v))
	}
	for _, t := range tokens {
		putU32(&b, uint32(t))
	}
	if err := writeHeader(w, 1, b.Bytes()); err != nil {
		return err
	}
	for l := range c.layers {
		kr, vr := c.Rows(l, true)
		b.Reset()
		for _, part := range []struct {
			rows []attn.Rows
			dim  int
		}{{kr, cfg.HeadDimK}, {vr, cfg.HeadDimV}} {
			row := make([]float32, part.dim)
			for cell := 0; cell < c.n; cell++ {
				for h := range part.rows {
					part.rows[h].Row(row, cell)
					for _, x := range row {
						putU32(&b, math.Float32bits(x))
					}
				}
			}
		}
		var sh [12]byte
		binary.LittleEndian.PutUint32(sh[:4], uint32(l))
		binary.LittleEndian.PutUint64(sh[4:], uint64(b.Len()))
		if err := writeSection(w, sh[:], b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// IsSnapshotError reports whether err is one of the snapshot errors a bad or foreign file
// gives (the caller then starts the session clean).
func IsSnapshotError(err error) bool {
	for _, e := range []error{ErrSnapshotNotKV, ErrSnapshotVersion, ErrSnapshotModel, ErrSnapshotShape,
		ErrSnapshotTooLong, ErrSnapshotTruncated, ErrSnapshotCorrupt, ErrSnapshotUnsupported} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
