// gotlog reads a bureau's log as C2SP tlog-tiles with the Go checksum database's own
// packages (golang.org/x/mod/sumdb/note and sumdb/tlog): an implementation that shares
// no code with the bureau. It is built and run by tests/tiles/test_go_tlog.py.
//
//	gotlog -url BASE -vkey VKEY [-old NOTEFILE]... [-sample N] [-every-width]
//
// It verifies BASE/checkpoint with the vkey; recomputes the whole tree from the entry
// bundles and checks that the root is the checkpoint's and that EVERY tile it fetches
// is the one Go computes (tlog.TileHashReader checks a tile only as far as the hashes
// it reads need, so each tile is compared here in full); then proves inclusion of
// leaves and consistency from each older note through tlog.TileHashReader over the
// fetched tiles, and checks each proof with tlog.CheckRecord and tlog.CheckTree.
// Output: one "ok ..." line per step; the first failure prints "FAIL ..." and exits 1.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

type olds []string

func (o *olds) String() string     { return strings.Join(*o, ",") }
func (o *olds) Set(v string) error { *o = append(*o, v); return nil }

var base string
var fetched int

func fail(format string, args ...interface{}) {
	fmt.Printf("FAIL "+format+"\n", args...)
	os.Exit(1)
}

// c2spPath maps Go's tile path (tile/8/L/N, tile/8/data/N: the height in the path)
// to C2SP tlog-tiles' (tile/L/N, tile/entries/N).
func c2spPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", height))
	if strings.HasPrefix(p, "data/") {
		return "tile/entries/" + strings.TrimPrefix(p, "data/")
	}
	return "tile/" + p
}

func get(path string) []byte {
	resp, err := http.Get(base + "/" + path)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	if resp.StatusCode != 200 {
		fail("GET %s: HTTP %d", path, resp.StatusCode)
	}
	fetched++
	return body
}

type tileReader struct{}

func (tileReader) Height() int { return height }
func (tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		out[i] = get(c2spPath(t))
	}
	return out, nil
}
func (tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

// checkpoint verifies a note with the vkey and reads its size and root.
func checkpoint(msg []byte, verifier note.Verifier) (tlog.Tree, string) {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		fail("note: %v", err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 || lines[0] != verifier.Name() {
		fail("not a checkpoint of %s: %q", verifier.Name(), n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		fail("checkpoint root: %v", err)
	}
	var root tlog.Hash
	copy(root[:], raw)
	return tlog.Tree{N: size, Hash: root}, lines[0]
}

// entries reads an entry bundle: uint16 big-endian length, then the entry.
func entries(data []byte, want int) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			fail("entry bundle ends inside a length")
		}
		n := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+n {
			fail("entry bundle ends inside an entry")
		}
		out = append(out, data[2:2+n])
		data = data[2+n:]
	}
	if len(out) != want {
		fail("entry bundle holds %d entries, not %d", len(out), want)
	}
	return out
}

func main() {
	var old olds
	vkey := flag.String("vkey", "", "the bureau's note verifier key")
	sample := flag.Int64("sample", 0, "prove every k-th leaf (0: a few)")
	everyWidth := flag.Bool("every-width", false, "compare every partial width of a "+
		"level's last tile tlog.NewTiles lists, not only the tree's own (a log serves "+
		"them; a mirror keeps those of its checkpoints)")
	flag.StringVar(&base, "url", "", "the log's prefix URL")
	flag.Var(&old, "old", "an older checkpoint note file (repeatable)")
	flag.Parse()
	verifier, err := note.NewVerifier(*vkey)
	if err != nil {
		fail("vkey: %v", err)
	}
	tree, origin := checkpoint(get("checkpoint"), verifier)
	fmt.Printf("ok checkpoint of %s verified by sumdb/note: size %d\n", origin, tree.N)

	// The whole tree from the entry bundles, by sumdb/tlog's own StoredHashes.
	var stored []tlog.Hash
	mem := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= int64(len(stored)) {
				return nil, fmt.Errorf("hash %d not computed", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	leaves := make([]tlog.Hash, 0, tree.N)
	for n := int64(0); n < tree.N; n += 1 << height {
		w := tree.N - n
		if w > 1<<height {
			w = 1 << height
		}
		bundle := tlog.Tile{H: height, L: -1, N: n >> height, W: int(w)}
		for _, e := range entries(get(c2spPath(bundle)), int(w)) {
			if len(e) != 32 {
				fail("an entry is %d bytes, not an entry id's 32", len(e))
			}
			h := tlog.RecordHash(e)
			more, err := tlog.StoredHashesForRecordHash(int64(len(leaves)), h, mem)
			if err != nil {
				fail("stored hashes: %v", err)
			}
			stored = append(stored, more...)
			leaves = append(leaves, h)
		}
	}
	root, err := tlog.TreeHash(tree.N, mem)
	if err != nil || root != tree.Hash {
		fail("the entry bundles give root %v, the checkpoint says %v (%v)", root, tree.Hash, err)
	}
	fmt.Printf("ok the %d entry ids of the bundles give the checkpoint's root\n", tree.N)

	var tiles []tlog.Tile
	for _, t := range tlog.NewTiles(height, 0, tree.N) {
		own := int64(t.W) == (tree.N>>(uint(height)*uint(t.L)))-(t.N<<height)
		if t.W == 1<<height || own || *everyWidth {
			tiles = append(tiles, t)
		}
	}
	for _, t := range tiles {
		want, err := tlog.ReadTileData(t, mem)
		if err != nil {
			fail("tile %s: %v", t.Path(), err)
		}
		if !bytes.Equal(get(c2spPath(t)), want) {
			fail("%s is not the tile Go computes from the entries", c2spPath(t))
		}
	}
	fmt.Printf("ok every one of the %d hash tiles is the tile Go computes\n", len(tiles))

	hr := tlog.TileHashReader(tree, tileReader{})
	step := *sample
	if step <= 0 {
		step = tree.N/7 + 1
	}
	proved := 0
	for i := int64(0); i < tree.N; i += step {
		for _, n := range []int64{i, tree.N - 1 - i} {
			p, err := tlog.ProveRecord(tree.N, n, hr)
			if err != nil {
				fail("ProveRecord(%d, %d): %v", tree.N, n, err)
			}
			if err := tlog.CheckRecord(p, tree.N, tree.Hash, n, leaves[n]); err != nil {
				fail("CheckRecord(%d, %d): %v", tree.N, n, err)
			}
			proved++
		}
	}
	fmt.Printf("ok %d inclusion proofs through tlog.TileHashReader hold\n", proved)

	for _, file := range old {
		msg, err := os.ReadFile(file)
		if err != nil {
			fail("%s: %v", file, err)
		}
		older, _ := checkpoint(msg, verifier)
		p, err := tlog.ProveTree(tree.N, older.N, hr)
		if err != nil {
			fail("ProveTree(%d, %d): %v", tree.N, older.N, err)
		}
		if err := tlog.CheckTree(p, tree.N, tree.Hash, older.N, older.Hash); err != nil {
			fail("CheckTree(%d, %d): %v", tree.N, older.N, err)
		}
		fmt.Printf("ok the tree of size %d is a prefix of size %d (tlog.CheckTree)\n",
			older.N, tree.N)
	}
	fmt.Printf("ok %d fetches\n", fetched)
}
