package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func openT(t *testing.T, path string) (*Journal, []Entry) {
	t.Helper()
	j, entries, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j, entries
}

func appendT(t *testing.T, j *Journal, data string) uint64 {
	t.Helper()
	seq, err := j.Append([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func datas(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, string(e.Data))
	}
	return out
}

// Entries appended and not done come back from the next Open, in order,
// and their seqs go on after the highest seen.
func TestReplayOfEntriesNotDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, entries := openT(t, path)
	if len(entries) != 0 {
		t.Fatalf("new journal: %d entries", len(entries))
	}
	var seqs []uint64
	for i := range 5 {
		seqs = append(seqs, appendT(t, j, fmt.Sprintf("frame %d", i)))
	}
	for _, i := range []int{0, 2, 4} {
		if err := j.Done(seqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Done(seqs[0]); err == nil {
		t.Error("a second Done of one seq succeeded")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, entries := openT(t, path)
	if got := strings.Join(datas(entries), ","); got != "frame 1,frame 3" {
		t.Fatalf("replayed %q, want frame 1,frame 3", got)
	}
	if entries[0].Seq != seqs[1] || entries[1].Seq != seqs[3] {
		t.Fatalf("seqs %d %d, want %d %d", entries[0].Seq, entries[1].Seq, seqs[1], seqs[3])
	}
	if seq := appendT(t, j2, "frame 5"); seq <= seqs[4] {
		t.Fatalf("seq after reopen %d, want > %d", seq, seqs[4])
	}
	for _, e := range entries {
		if err := j2.Done(e.Seq); err != nil {
			t.Fatalf("Done of a replayed entry: %v", err)
		}
	}
	if n := j2.Outstanding(); n != 1 {
		t.Fatalf("%d outstanding, want 1", n)
	}
	if _, err := j2.Append(nil); err != nil {
		t.Fatal(err)
	}
	_ = j2.Close()
	if _, err := j2.Append([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
}

// A torn tail (a record cut short, or one whose bytes changed) is cut off
// on Open and reported; the records before it stay.
func TestTornTailIsCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		reason string
		kept   string // the entries left
	}{
		{"short data", func(b []byte) []byte { return b[:len(b)-3] }, "short record", "kept"},
		{"short header", func(b []byte) []byte { return append(b, 1, 2, 3) }, "short header", "kept,whole"},
		{"flipped byte", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, "checksum", "kept"},
		{"huge length", func(b []byte) []byte {
			return append(b, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, kindEntry)
		}, "short record", "kept,whole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			j, _ := openT(t, path)
			appendT(t, j, "kept")
			good := j.Size()
			appendT(t, j, "whole")
			if tc.kept == "kept,whole" {
				good = j.Size()
			}
			_ = j.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			j2, entries := openT(t, path)
			if got := strings.Join(datas(entries), ","); got != tc.kept {
				t.Fatalf("entries %q, want %s", got, tc.kept)
			}
			n, reason := j2.Cut()
			if n == 0 || !strings.Contains(reason, tc.reason) {
				t.Fatalf("Cut() = %d, %q; want bytes and %q", n, reason, tc.reason)
			}
			if j2.Size() != good {
				t.Fatalf("size after the cut %d, want %d", j2.Size(), good)
			}
			appendT(t, j2, "after")
			_ = j2.Close()
			_, entries = openT(t, path)
			if got := strings.Join(datas(entries), ","); got != tc.kept+",after" {
				t.Fatalf("after the cut and an append: %q, want %s,after", got, tc.kept)
			}
		})
	}
}

// With nothing outstanding, a file over the bound is truncated; with a
// few entries outstanding (one never done), it is compacted to them; it
// never grows past a few times the bound.
func TestFileStaysSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := openT(t, path)
	frame := bytes.Repeat([]byte("x"), 4000)
	stuck := appendT(t, j, "stuck")
	for i := range 3 * sizeBound / len(frame) {
		seq, err := j.Append(frame)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Done(seq); err != nil {
			t.Fatal(err)
		}
		if s := j.Size(); s > compactBound {
			t.Fatalf("after %d frames the file has %d bytes", i, s)
		}
	}
	if err := j.Done(stuck); err != nil {
		t.Fatal(err)
	}
	for range sizeBound/len(frame) + 50 {
		seq := appendT(t, j, string(frame))
		if err := j.Done(seq); err != nil {
			t.Fatal(err)
		}
	}
	if s := j.Size(); s > sizeBound {
		t.Fatalf("nothing outstanding and %d bytes", s)
	}
	// A second Open is refused while the compacted file is held.
	if _, _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a compacted journal in use: %v, want ErrLocked", err)
	}
	pending := appendT(t, j, "pending")
	_ = j.Close()
	_, entries := openT(t, path)
	if len(entries) != 1 || entries[0].Seq != pending || string(entries[0].Data) != "pending" {
		t.Fatalf("after compactions: %v", datas(entries))
	}
}

func TestConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := openT(t, path)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				seq, err := j.Append([]byte(fmt.Sprintf("%d-%d", g, i)))
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if err := j.Done(seq); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	_ = j.Close()
	_, entries := openT(t, path)
	if len(entries) != 200 {
		t.Fatalf("%d entries, want 200", len(entries))
	}
	last := map[string]int{}
	for k, e := range entries {
		if k > 0 && e.Seq <= entries[k-1].Seq {
			t.Fatal("entries out of seq order")
		}
		g, i, _ := strings.Cut(string(e.Data), "-")
		n, _ := strconv.Atoi(i)
		if p, ok := last[g]; ok && n <= p {
			t.Fatalf("goroutine %s: entry %d after %d", g, n, p)
		}
		last[g] = n
	}
}

// Another process (and another Open in this one) is refused while the
// journal is open; a process that dies leaves the file free.
func TestSecondOpenRefused(t *testing.T) {
	if path := os.Getenv("SLACKASK_JOURNAL_OPEN"); path != "" {
		_, _, err := Open(path)
		if errors.Is(err, ErrLocked) {
			fmt.Println("refused:", err)
			os.Exit(0)
		}
		fmt.Println("not refused:", err)
		os.Exit(1)
	}
	path := filepath.Join(t.TempDir(), "j")
	openT(t, path)
	if _, _, err := Open(path); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open in this process: %v, want ErrLocked naming the file", err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSecondOpenRefused$")
	cmd.Env = append(os.Environ(), "SLACKASK_JOURNAL_OPEN="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused: ") {
		t.Errorf("a second process opening the journal: %v\n%s", err, out)
	}
}

// A child that appends, reports each Append that returned and is killed
// with SIGKILL right after one leaves every reported entry replayable.
func TestKill9AfterAppend(t *testing.T) {
	if path := os.Getenv("SLACKASK_JOURNAL_CHILD"); path != "" {
		j, _, err := Open(path)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		for i := 0; ; i++ {
			seq, err := j.Append(bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%3000))
			if err != nil {
				fmt.Println("append:", err)
				os.Exit(1)
			}
			fmt.Println("appended", seq, i)
			if i%3 == 0 {
				if err := j.Done(seq); err != nil {
					fmt.Println("done:", err)
					os.Exit(1)
				}
				fmt.Println("done", seq)
			}
		}
	}
	if testing.Short() {
		t.Skip("short")
	}
	path := filepath.Join(t.TempDir(), "j")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKill9AfterAppend$")
	cmd.Env = append(os.Environ(), "SLACKASK_JOURNAL_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	appended := map[uint64]int{}
	done := map[uint64]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			seq, _ := strconv.ParseUint(f[1], 10, 64)
			switch f[0] {
			case "appended":
				i, _ := strconv.Atoi(f[2])
				appended[seq] = i
				if len(appended) == 500 {
					// Right after an Append returned.
					if err := cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
				}
			case "done":
				done[seq] = true
			}
		}
	}
	_ = cmd.Wait()
	if len(appended) < 500 {
		t.Fatalf("the child appended only %d entries", len(appended))
	}
	_, entries := openT(t, path)
	got := map[uint64][]byte{}
	for _, e := range entries {
		got[e.Seq] = e.Data
	}
	last := slices.Max(slices.Collect(maps.Keys(appended)))
	for seq, i := range appended {
		if seq == last && i%3 == 0 && !done[seq] && got[seq] == nil {
			continue // killed inside Done(seq), after its record, before "done"
		}
		if done[seq] {
			if _, ok := got[seq]; ok {
				t.Errorf("entry %d was done, yet replayed", seq)
			}
			continue
		}
		want := bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%3000)
		if !bytes.Equal(got[seq], want) {
			t.Errorf("appended entry %d (#%d) not replayed whole: %d bytes", seq, i, len(got[seq]))
		}
	}
}

// FuzzOpen: whatever the file holds, Open neither panics nor fails (it
// cuts what does not parse), returns entries in seq order, and a journal
// it opened takes appends that the next Open returns.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed")
	j, _, err := Open(seed)
	if err != nil {
		f.Fatal(err)
	}
	s1, _ := j.Append([]byte("one"))
	_, _ = j.Append([]byte(`{"envelope_id":"e1"}`))
	_ = j.Done(s1)
	_ = j.Close()
	b, _ := os.ReadFile(seed)
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, headerLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "j")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, entries, err := Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		for k := 1; k < len(entries); k++ {
			if entries[k].Seq <= entries[k-1].Seq {
				t.Fatal("entries out of order")
			}
		}
		// What is neither records nor cut follows a zero header.
		if n, _ := j.Cut(); j.Size()+n != int64(len(data)) && (n != 0 || !zero(data[j.Size():min(len(data), int(j.Size())+headerLen)])) {
			t.Fatalf("size %d + cut %d != %d", j.Size(), n, len(data))
		}
		seq, err := j.Append([]byte("new"))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			if seq <= entries[len(entries)-1].Seq {
				t.Fatalf("new seq %d not after %d", seq, entries[len(entries)-1].Seq)
			}
			if err := j.Done(entries[0].Seq); err != nil {
				t.Fatal(err)
			}
		}
		_ = j.Close()
		j2, again, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer j2.Close()
		if n, reason := j2.Cut(); n != 0 {
			t.Fatalf("second Open cut %d bytes: %s", n, reason)
		}
		want := len(entries) + 1
		if len(entries) > 0 {
			want--
		}
		if len(again) != want || string(again[len(again)-1].Data) != "new" {
			t.Fatalf("reopened: %d entries, want %d ending with the new one", len(again), want)
		}
	})
}

// A journal in use is mapped (unix): its file is its records and then
// room, which a kill -9 leaves for the next Open to read past. When it
// starts over, the records of before stay in the file behind a zero
// header, and no Open reads them again.
func TestMappedFileAsAKillLeavesIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	j, _ := openT(t, path)
	if j.m == nil {
		if _, err := mapFile(j.f, minRoom); errors.Is(err, errors.ErrUnsupported) {
			t.Skip("no mapping on this system")
		}
		t.Fatal("the journal is not mapped")
	}
	killed := func(name string) (*Journal, []string) {
		t.Helper()
		live, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(live)) < minRoom {
			t.Fatalf("a mapped file of %d bytes", len(live))
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, live, 0o600); err != nil {
			t.Fatal(err)
		}
		j2, entries := openT(t, p)
		if n, reason := j2.Cut(); n != 0 {
			t.Fatalf("%s: cut %d bytes: %s", name, n, reason)
		}
		return j2, datas(entries)
	}
	appendT(t, j, "one")
	appendT(t, j, "two")
	if _, got := killed("two"); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("entries %q", got)
	}
	// Past sizeBound, the last Done starts over.
	frame := bytes.Repeat([]byte("z"), 64<<10)
	var seqs []uint64
	for range sizeBound/len(frame) + 1 {
		seqs = append(seqs, appendT(t, j, string(frame)))
	}
	seqs = append(seqs, 1, 2)
	for _, seq := range seqs {
		if err := j.Done(seq); err != nil {
			t.Fatal(err)
		}
	}
	if j.Size() != 0 {
		t.Fatalf("not started over: %d bytes of records", j.Size())
	}
	if _, got := killed("over"); len(got) != 0 {
		t.Fatalf("after the start-over, replayed %d entries", len(got))
	}
	after := appendT(t, j, "after")
	j2, got := killed("after")
	if !slices.Equal(got, []string{"after"}) {
		t.Fatalf("after the start-over and an append: %q", got)
	}
	if seq := appendT(t, j2, "next"); seq <= after {
		t.Fatalf("seq %d after %d", seq, after)
	}
	// A closed journal's file is its records alone.
	size := j.Size()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		t.Fatalf("closed file: %v, %v; want %d bytes", fi, err, size)
	}
}

// Entries that outgrow the mapping's room (none done) grow it, and all
// come back.
func TestMappingGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := openT(t, path)
	frame := bytes.Repeat([]byte("y"), 64<<10)
	n := 3 * minRoom / len(frame)
	for i := range n {
		frame[0] = byte(i)
		appendT(t, j, string(frame))
	}
	if j.m != nil && len(j.m) < 3*minRoom {
		t.Fatalf("mapping of %d bytes for %d of records", len(j.m), j.Size())
	}
	_ = j.Close()
	_, entries := openT(t, path)
	if len(entries) != n {
		t.Fatalf("%d entries back, want %d", len(entries), n)
	}
	for i, e := range entries {
		if e.Data[0] != byte(i) || len(e.Data) != len(frame) {
			t.Fatalf("entry %d: %d bytes starting %d", i, len(e.Data), e.Data[0])
		}
	}
}

// BenchmarkAppend is the journal's cost on the ack path: one Append of a
// select change's frame (about 3 KB), and its Done; it reports the
// Append's own p99 (append-p99-ns).
func BenchmarkAppend(b *testing.B) {
	j, _, err := Open(filepath.Join(b.TempDir(), "j"))
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	frame := bytes.Repeat([]byte("x"), 3000)
	b.SetBytes(int64(len(frame)))
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		seq, err := j.Append(frame)
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if err := j.Done(seq); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "append-p99-ns")
}
